"""The search routes (api.md §7.3): validated first; passages then answer 200 (lexically here: this server has
no embedder), the candidate routes 503. Each outcome leaves one ledger row."""
import pytest
from django.db import connection

from tests.recall.conftest import post

PASSAGES = ("/v1/passages/search", "invalid_passage_query", "passage_unavailable", "embedding.search")
ENTITIES = ("/v1/entities/candidates", "invalid_entity_candidate_query", "entity_candidates_unavailable",
            "entity_embedding.search")
REPORTS = ("/v1/reports/candidates", "invalid_report_candidate_query", "report_candidates_unavailable",
           "report_embedding.search")
ROUTES = [PASSAGES, ENTITIES, REPORTS]

SHARED_INVALID = [
    ("missing_question", {}),
    ("null_question", {"question": None}),
    ("blank_question", {"question": " \u3000"}),
    ("nul_question", {"question": "a\u0000b"}),
    ("question_too_big", {"question": "é" * 4097}),
    ("limit_zero", {"question": "q", "limit": 0}),
    ("limit_33", {"question": "q", "limit": 33}),
    ("candidates_negative", {"question": "q", "candidates": -1}),
    ("candidates_1001", {"question": "q", "candidates": 1001}),
    ("candidates_below_limit", {"question": "q", "limit": 10, "candidates": 9}),
    ("candidates_below_default_limit", {"question": "q", "candidates": 5}),
]
SHARED_VALID = [
    ("question_only", {"question": "where?"}),
    ("question_8192_bytes", {"question": "é" * 4096}),
    ("limit_bounds", {"question": "q", "limit": 32}),
    ("candidates_zero", {"question": "q", "limit": 1, "candidates": 0}),
    ("candidates_equal_limit", {"question": "q", "limit": 7, "candidates": 7}),
    ("candidates_max", {"question": "q", "candidates": 1000}),
]


def last_ledger_row(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, outcome, magnitude FROM audit_entry WHERE project = %s"
                       " ORDER BY entry_id DESC LIMIT 1", [project])
        return cursor.fetchone()


@pytest.mark.parametrize("route", ROUTES, ids=["passages", "entities", "reports"])
@pytest.mark.parametrize("name,body", SHARED_INVALID, ids=[c[0] for c in SHARED_INVALID])
def test_invalid_queries(project, auth, route, name, body):
    path, invalid, _, op = route
    response = post(auth, path, body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == invalid
    assert last_ledger_row(project) == (op, "refused", 0)


@pytest.mark.parametrize("name,body", SHARED_VALID, ids=[c[0] for c in SHARED_VALID])
def test_valid_passage_queries_answer(project, auth, name, body):
    response = post(auth, "/v1/passages/search", body)
    assert response.status_code == 200
    answer = response.json()
    assert set(answer) == {"generation_id", "through_offset", "covered_through_offset", "build_state", "approximate",
                           "passages"}
    assert answer["build_state"] == "lexical_only" and answer["generation_id"] == ""
    assert last_ledger_row(project) == ("embedding.search", "allowed", len(answer["passages"]))


@pytest.mark.parametrize("route", [ENTITIES, REPORTS], ids=["entities", "reports"])
@pytest.mark.parametrize("name,body", SHARED_VALID, ids=[c[0] for c in SHARED_VALID])
def test_valid_queries_are_unavailable(project, auth, route, name, body):
    path, _, unavailable, op = route
    response = post(auth, path, body)
    assert response.status_code == 503
    assert response.json() == {"error": {"code": unavailable, "message": response.json()["error"]["message"]}}
    assert "Retry-After" not in response
    assert last_ledger_row(project) == (op, "refused", 0)


@pytest.mark.parametrize("body,status", [
    ({"question": "q", "data_subject_id": "alice", "source_role": "tool"}, 200),
    ({"question": "q", "source_role": ""}, 200),
    ({"question": "q", "data_subject_id": "x" * 1024}, 200),
    ({"question": "q", "data_subject_id": "x" * 1025}, 400),
    ({"question": "q", "data_subject_id": "a\u0000"}, 400),
    ({"question": "q", "source_role": "USER"}, 400),
    ({"question": "q", "source_role": "document"}, 400),
])
def test_passage_only_fields(auth, body, status):
    response = post(auth, "/v1/passages/search", body)
    assert response.status_code == status
    if status == 400:
        assert response.json()["error"]["code"] == "invalid_passage_query"


@pytest.mark.parametrize("path", ["/v1/entities/candidates", "/v1/reports/candidates"])
@pytest.mark.parametrize("field", [{"data_subject_id": "a"}, {"source_role": "user"}])
def test_candidate_routes_have_no_subject_or_role_fields(auth, path, field):
    response = post(auth, path, {"question": "q", **field})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_body"


@pytest.mark.parametrize("route", ROUTES, ids=["passages", "entities", "reports"])
def test_wrong_types_are_invalid_body(auth, route):
    response = post(auth, route[0], {"question": "q", "limit": "10"})
    assert response.json()["error"]["code"] == "invalid_body"

"""Recall controls (recall.md §1, §7): validation order, clamping, echo, role filtering, budget and the
degraded table, driven over the real /v1/recalls view."""
import pytest
from django.conf import settings
from django.db import connection

from tests.recall.conftest import post, recall_error, recall_ok, write_fact

ROLE_CONTENT = {
    "user": "Atlas runs on Postgres.",
    "assistant": "Atlas runs on Postgres, I believe.",
    "system": "Note: Atlas runs on Postgres.",
    "tool": "lookup: Atlas runs on Postgres",
}


@pytest.fixture
def atlas(project):
    """One Atlas fact per source role."""
    facts = {}
    for role, content in ROLE_CONTENT.items():
        facts[role], _ = write_fact(project, content=content, quote="Atlas runs on Postgres", predicate="uses",
                                    subject="Atlas", object="Postgres", role=role)
    return facts


CASES = [
    # name, extra request fields, expected (roles, hops, facts)
    ("default_user_only", {}, (["user"], 1, 1)),
    ("explicit_tool", {"source_roles": ["tool"]}, (["tool"], 1, 1)),
    ("all_roles_in_caller_order", {"source_roles": ["tool", "user", "assistant", "system"]},
     (["tool", "user", "assistant", "system"], 1, 4)),
    ("two_roles", {"source_roles": ["system", "assistant"]}, (["system", "assistant"], 1, 2)),
    ("hops_999_clamps_to_2", {"hops": 999}, (["user"], 2, 1)),
    ("hops_minus_7_clamps_to_1", {"hops": -7}, (["user"], 1, 1)),
    ("hops_0_clamps_to_1", {"hops": 0}, (["user"], 1, 1)),
    ("hops_null_is_omitted", {"hops": None}, (["user"], 1, 1)),
    ("hops_2", {"hops": 2}, (["user"], 2, 1)),
]


@pytest.mark.parametrize("name,extra,expected", CASES, ids=[c[0] for c in CASES])
def test_applied_controls(atlas, auth, name, extra, expected):
    roles, hops, count = expected
    bundle = recall_ok(auth, question="What does Atlas run on?", **extra)
    assert bundle["controls"] == {"max_characters": settings.MEMOIR_BUNDLE_CHARACTERS, "max_rows": 200,
                                  "source_roles": roles, "hops": hops,
                                  "surfaces": ["facts", "reports", "passages"], "themes": False}
    assert len(bundle["facts"]) == count
    assert {f["source_role"] for f in bundle["facts"]} == set(roles)
    assert {f["fact_id"] for f in bundle["facts"]} == {atlas[r] for r in roles}


INVALID_CONTROLS = [
    ("max_characters_zero", {"max_characters": 0}),
    ("max_characters_negative", {"max_characters": -1}),
    ("max_characters_above_server", {"max_characters": 16001}),
    ("roles_empty", {"source_roles": []}),
    ("roles_duplicate", {"source_roles": ["tool", "tool"]}),
    ("roles_five", {"source_roles": ["user", "tool", "assistant", "system", "user"]}),
    ("roles_unknown", {"source_roles": ["document"]}),
    ("roles_case_sensitive", {"source_roles": ["USER"]}),
    ("surfaces_empty", {"surfaces": []}),
    ("surfaces_duplicate", {"surfaces": ["facts", "facts"]}),
    ("surfaces_unknown", {"surfaces": ["graphs"]}),
    ("surfaces_case_sensitive", {"surfaces": ["Facts"]}),
    ("surfaces_four", {"surfaces": ["facts", "reports", "passages", "facts"]}),
]


@pytest.mark.parametrize("name,extra", INVALID_CONTROLS, ids=[c[0] for c in INVALID_CONTROLS])
def test_invalid_controls_are_refused(auth, name, extra):
    assert recall_error(auth, {"question": "Atlas", **extra}) == "invalid_recall_controls"


def test_server_budget_itself_is_accepted(atlas, auth):
    assert recall_ok(auth, question="Atlas", max_characters=16000)["controls"]["max_characters"] == 16000


BODY_ERRORS = [
    ("scope_field", {"question": "Atlas", "scope": "p2"}),
    ("themes_not_bool", {"question": "Atlas", "themes": "yes"}),
    ("hops_float", {"question": "Atlas", "hops": 1.0}),
    ("roles_not_array", {"question": "Atlas", "source_roles": "user"}),
    ("bad_timestamp", {"question": "Atlas", "as_of": "2024-01-01"}),
    ("question_case", {"Question": "Atlas"}),
]


@pytest.mark.parametrize("name,body", BODY_ERRORS, ids=[c[0] for c in BODY_ERRORS])
def test_body_errors_come_first(auth, name, body):
    assert recall_error(auth, body) == "invalid_body"


@pytest.mark.parametrize("body", [{}, {"question": None}, {"question": ""}, {"question": " \u3000\n\u00a0"}],
                         ids=["missing", "null", "empty", "white_space"])
def test_blank_question(auth, body):
    assert recall_error(auth, body) == "invalid_question"


def test_blank_question_is_checked_before_controls(auth):
    assert recall_error(auth, {"question": " ", "source_roles": []}) == "invalid_question"


def test_controls_are_checked_before_question_size(auth):
    assert recall_error(auth, {"question": "x" * 9000, "hops": 1, "surfaces": []}) == "invalid_recall_controls"


def test_question_over_8192_bytes_is_refused_not_truncated(auth):
    assert recall_error(auth, {"question": "é" * 4097}) == "invalid_question"
    assert recall_ok(auth, question="é" * 4096)["reach"]["terms"] == 1


def test_too_many_terms_is_refused(auth):
    words = " ".join(f"w{i}" for i in range(130))  # 514 windows
    assert recall_error(auth, {"question": words}) == "invalid_question"
    assert recall_ok(auth, question=" ".join(f"w{i}" for i in range(129)))["reach"]["terms"] == 510


def test_nul_in_question_is_invalid_question(auth):
    assert recall_error(auth, {"question": "Atlas\u0000"}) == "invalid_question"


def test_a_refusal_writes_one_refused_ledger_row(project, auth):
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM audit_entry WHERE project = %s", [project])
        before = cursor.fetchone()[0]
        recall_error(auth, {"question": "Atlas", "surfaces": []})
        cursor.execute("SELECT operation, outcome, magnitude FROM audit_entry WHERE project = %s ORDER BY entry_id",
                       [project])
        rows = cursor.fetchall()
    assert len(rows) == before + 1
    assert rows[-1] == ("recall", "refused", 0)


def test_ledger_magnitude_is_the_number_of_facts_returned(atlas, project, auth):
    bundle = recall_ok(auth, question="Atlas", source_roles=["user", "tool", "system"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, outcome, magnitude FROM audit_entry WHERE project = %s ORDER BY entry_id DESC"
                       " LIMIT 1", [project])
        assert cursor.fetchone() == ("recall", "allowed", 3)
    assert len(bundle["facts"]) == 3


# --- budget ------------------------------------------------------------------------------------


def fact_size(fact):
    texts = [fact["subject"], fact["predicate"], fact["object"], fact["statement"], fact["source_role"],
             fact["evidence"]["quote"], fact["evidence"]["context"], *fact["path"], *fact["via"]]
    return sum(len(t) for t in texts)


@pytest.fixture
def two_facts(project):
    """Two facts in walk order: a large lives_in then a small works_at."""
    big = "Zed lives in Ålesund, a town of many ünïcödé letters and a very long description. " * 3
    write_fact(project, content=big, quote="Zed lives in Ålesund", predicate="lives_in", subject="Zed",
               object="Ålesund")
    write_fact(project, content="Zed works at Ko.", quote="Zed works at Ko", predicate="works_at", subject="Zed",
               object="Ko")


def test_budget_counts_code_points_and_stops_at_the_first_misfit(two_facts, auth):
    full = recall_ok(auth, question="Zed", surfaces=["facts", "reports"])
    assert [f["predicate"] for f in full["facts"]] == ["lives_in", "works_at"]
    first, second = (fact_size(f) for f in full["facts"])
    assert full["characters"] == first + second and full["truncated"] is False
    assert first > second

    exact = recall_ok(auth, question="Zed", max_characters=first, surfaces=["facts", "reports"])
    assert [f["predicate"] for f in exact["facts"]] == ["lives_in"]
    assert exact["characters"] == first and exact["truncated"] is True

    # The first fact does not fit; the smaller second one would, but the surface never skips ahead.
    starved = recall_ok(auth, question="Zed", max_characters=first - 1, surfaces=["facts", "reports"])
    assert starved["facts"] == [] and starved["characters"] == 0 and starved["truncated"] is True
    assert starved["anchors"] != []


def test_tiny_budget_versus_nothing_known(two_facts, auth):
    tiny = recall_ok(auth, question="Zed", max_characters=1)
    assert (tiny["facts"], tiny["characters"], tiny["truncated"]) == ([], 0, True)
    nothing = recall_ok(auth, question="Nobody", max_characters=1)
    assert (nothing["facts"], nothing["characters"], nothing["truncated"]) == ([], 0, False)
    assert nothing["reach"]["named_nothing_known"] is True


# --- degraded ----------------------------------------------------------------------------------

DEGRADED = [
    # name, request, expected degraded
    ("omitted_unanchored", {"question": "Nobody"}, []),
    ("explicit_all_unanchored", {"question": "Nobody", "surfaces": ["facts", "reports", "passages"]},
     ["semantic_anchors", "reports", "passages"]),
    ("explicit_all_anchored", {"question": "Atlas", "surfaces": ["facts", "reports", "passages"]}, ["passages"]),
    ("explicit_all_anchored_themes", {"question": "Atlas", "surfaces": ["passages", "reports", "facts"],
                                      "themes": True}, ["reports", "passages"]),
    ("omitted_anchored_themes", {"question": "Atlas", "themes": True}, []),
    ("omitted_unanchored_subject", {"question": "Nobody", "data_subject_id": "carol"},
     ["reports_withheld_for_subject"]),
    ("explicit_unanchored_subject", {"question": "Nobody", "data_subject_id": "carol",
                                     "surfaces": ["reports", "facts"]},
     ["semantic_anchors", "reports_withheld_for_subject"]),
    ("explicit_facts_only_unanchored", {"question": "Nobody", "surfaces": ["facts"]}, ["semantic_anchors"]),
    ("explicit_facts_only_anchored", {"question": "Atlas", "surfaces": ["facts"]}, []),
    ("explicit_reports_anchored_no_themes", {"question": "Atlas", "surfaces": ["reports"]}, []),
    ("explicit_passages_only", {"question": "Atlas", "surfaces": ["passages"]}, ["passages"]),
]


@pytest.mark.parametrize("name,body,expected", DEGRADED, ids=[c[0] for c in DEGRADED])
def test_degraded_table(atlas, auth, name, body, expected):
    bundle = recall_ok(auth, **body)
    assert bundle["degraded"] == expected
    # No reports surface exists; passages found here are lexical (no embedder in this server).
    assert bundle["reports"] == []


def test_passages_are_not_mentioned_when_the_budget_is_spent(atlas, auth):
    size = fact_size(recall_ok(auth, question="Atlas", surfaces=["facts"])["facts"][0])
    spent = recall_ok(auth, question="Nothing Atlas ever said", surfaces=["facts"], max_characters=size)
    assert spent["characters"] == size and spent["degraded"] == []
    left = recall_ok(auth, question="Atlas", surfaces=["facts", "passages"], max_characters=size + 1000)
    assert left["degraded"] == ["passages"] and left["characters"] < size + 1000


def test_facts_deselected_runs_no_walk_but_counts_matches(atlas, auth):
    bundle = recall_ok(auth, question="Atlas and Postgres", surfaces=["passages"])
    assert bundle["anchors"] == [] and bundle["facts"] == []
    assert bundle["reach"] == {"terms": 6, "anchored": 2,
                               "named_nothing_known": False, "facts_per_anchor": {}}
    assert bundle["controls"]["surfaces"] == ["passages"]


def test_question_with_no_terms_is_the_empty_bundle(auth):
    bundle = recall_ok(auth, question="?!…", surfaces=["facts", "reports", "passages"], data_subject_id="carol")
    assert bundle == {
        "controls": {"max_characters": 16000, "max_rows": 200, "source_roles": ["user"], "hops": 1,
                     "surfaces": ["facts", "reports", "passages"], "themes": False},
        "anchors": [], "facts": [], "reports": [], "passages": [], "truncated": False, "characters": 0,
        "degraded": [], "reach": {"terms": 0, "anchored": 0, "named_nothing_known": False, "facts_per_anchor": {}},
    }


def test_citation_context_when_the_message_is_gone(atlas, auth):
    # The evidence FK is deferred: inside this never-committed transaction the message can vanish,
    # which is what a reader racing an erasure could see.
    with connection.cursor() as cursor:
        cursor.execute("SELECT source_observation_id FROM fact_evidence WHERE fact_id = %s", [atlas["user"]])
        observation_id = cursor.fetchone()[0]
        cursor.execute("DELETE FROM turn_message WHERE observation_id = %s RETURNING *", [observation_id])
        columns = [c.name for c in cursor.description]
        message = cursor.fetchone()
    bundle = recall_ok(auth, question="Atlas", source_roles=["user", "tool"])
    with connection.cursor() as cursor:  # put it back so the deferred check at teardown passes
        cursor.execute(f"INSERT INTO turn_message ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})",
                       list(message))
    by_role = {f["source_role"]: f for f in bundle["facts"]}
    assert by_role["user"]["evidence"]["context"] == "" and by_role["user"]["evidence"]["context_complete"] is False
    assert by_role["user"]["evidence"]["quote"] == "Atlas runs on Postgres"
    assert by_role["tool"]["evidence"]["context"] == ROLE_CONTENT["tool"]
    assert bundle["degraded"] == ["citation_context"]


def test_every_key_is_present_and_arrays_are_never_null(atlas, auth):
    bundle = recall_ok(auth, question="Atlas")
    assert list(bundle) == ["controls", "anchors", "facts", "reports", "passages", "truncated", "characters",
                            "degraded", "reach"]
    fact = bundle["facts"][0]
    assert set(fact) == {"fact_id", "subject", "predicate", "object", "statement", "confidence", "valid_from",
                         "valid_until", "anchored_on", "source_role", "hops", "path", "via", "co_derived_with",
                         "evidence"}
    assert set(fact["evidence"]) == {"observation_id", "source_ordinal", "quote", "byte_start", "byte_end",
                                     "context", "context_start", "context_complete"}
    assert fact["valid_until"] is None and fact["confidence"] == 0.9
    assert fact["path"] == [] and fact["via"] == [] and fact["co_derived_with"] == []
    assert bundle["anchors"] == [{"entity_id": fact["anchored_on"], "name": "Atlas", "type": "thing",
                                  "matched": "atlas"}]


def test_wrong_method_and_slash(auth):
    from django.test import Client

    assert Client().get("/v1/recalls", **auth).status_code == 405
    assert post(auth, "/v1/recalls/", {"question": "Atlas"}).status_code == 404

"""Entity vectors: the `entity-evidence/v1` text, the follower embedding entities after passages,
`POST /v1/entities/candidates`, semantic anchors in recall, the read-time evidence re-check, and erasure."""
import pytest
from django.db import connection

from governance.erasure import erase
from memory import entity_candidates, generations, recall
from memory.entity_candidates import compose
from tests.passages.test_passages import build_all
from tests.recall.conftest import post, recall_ok, write_fact

pytestmark = pytest.mark.django_db


def count(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def entity_id(project, name):
    with connection.cursor() as cursor:
        cursor.execute("SELECT entity_id::text FROM entity WHERE scope = %s AND normalized_name = %s", [project, name])
        return cursor.fetchone()[0]


def follow_all(project):
    while generations.follow(project, budget=30):
        pass


def test_evidence_text_is_name_aliases_then_sorted_whole_quotes_within_2000_bytes():
    text, sources = compose("Acme", ["ACME Ltd", "Acme Co"], [("zebra quote", "o2"), ("apple quote", "o1"),
                                                                ("apple quote", "o3")])
    assert text == "Acme | ACME Ltd | Acme Co | apple quote | zebra quote"
    assert sources == {"o1", "o2", "o3"}
    long = [("a" * 900, "o1"), ("b" * 900, "o2"), ("c" * 900, "o3"), ("d", "o4")]
    text, sources = compose("X", [], long)
    assert len(text.encode()) <= 2000 and text.endswith("b" * 900) and sources == {"o1", "o2"}
    # A multi-byte name longer than the cap is cut on a character boundary.
    text, _ = compose("é" * 1500, [], [])
    assert len(text.encode()) <= 2000 and text == "é" * 1000


def test_candidates_route_answers_nearest_entities_by_names_and_quotes(project, auth, fake, endpoint_embedder):
    write_fact(project, content="Maria works at Acme Robotics.", quote="Maria works at Acme Robotics",
               predicate="works_at", subject="Maria", object="Acme Robotics", subject_type="person")
    write_fact(project, content="Tom lives in Galway.", quote="Tom lives in Galway", predicate="lives_in",
               subject="Tom", object="Galway", subject_type="person")
    generation = build_all(project, endpoint_embedder)
    follow_all(project)
    assert count("SELECT count(*) FROM entity_vector WHERE scope = %s", [project]) == 4
    response = post(auth, "/v1/entities/candidates", {"question": "galway lives", "limit": 2})
    assert response.status_code == 200, response.content
    answer = response.json()
    assert set(answer) == {"generation_id", "target_count", "build_state", "approximate", "candidates"}
    assert answer["generation_id"] == str(generation.generation_id)
    assert answer["target_count"] == 4 and answer["build_state"] == "complete" and answer["approximate"] is False
    top = answer["candidates"][0]
    assert set(top) == {"entity_id", "identity_kind", "name_preview", "name_bytes", "name_truncated", "similarity"}
    assert top["name_preview"] == "Galway" and top["entity_id"] == entity_id(project, "galway")
    assert top["identity_kind"] == "named" and top["name_bytes"] == 6 and top["name_truncated"] is False
    assert 0 < answer["candidates"][1]["similarity"] <= top["similarity"] <= 1
    assert len(answer["candidates"]) == 2
    # Approximate through the index when candidates > 0; the same data gives the same answer.
    approx = post(auth, "/v1/entities/candidates", {"question": "galway lives", "limit": 1, "candidates": 8}).json()
    assert approx["approximate"] is True and approx["candidates"][0]["name_preview"] == "Galway"
    assert post(auth, "/v1/entities/candidates", {"question": "galway lives", "limit": 2}).json() == answer


def test_candidates_route_validates_first_then_answers_503_without_a_generation(project, auth):
    bad = post(auth, "/v1/entities/candidates", {"question": " ", "limit": 2})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_entity_candidate_query"
    assert post(auth, "/v1/entities/candidates", {"question": "x", "limit": 5, "candidates": 2}).status_code == 400
    response = post(auth, "/v1/entities/candidates", {"question": "anything"})
    assert response.status_code == 503 and response.json()["error"]["code"] == "entity_candidates_unavailable"


def test_a_question_naming_no_entity_anchors_semantically(project, auth, fake, endpoint_embedder):
    write_fact(project, content="Maria works at Acme Robotics.", quote="Maria works at Acme Robotics",
               predicate="works_at", subject="Maria", object="Acme Robotics", subject_type="person")
    write_fact(project, content="Tom lives in Galway.", quote="Tom lives in Galway", predicate="lives_in",
               subject="Tom", object="Galway", subject_type="person")
    build_all(project, endpoint_embedder)
    follow_all(project)
    bundle = recall_ok(auth, question="who works at robotics companies?", surfaces=["facts", "passages"])
    assert bundle["anchors"], bundle
    assert all(a["matched"].startswith("semantic:") for a in bundle["anchors"])
    assert len(bundle["anchors"]) <= 4
    score = float(bundle["anchors"][0]["matched"].split(":")[1])
    assert recall.MIN_SEMANTIC_SIMILARITY <= score <= 1
    assert "works_at" in [f["predicate"] for f in bundle["facts"]]
    assert bundle["reach"]["anchored"] == len(bundle["anchors"])
    assert bundle["reach"]["named_nothing_known"] is False
    assert "semantic_anchors" not in bundle["degraded"]
    # An exact name wins: no semantic anchor is added beside it.
    exact = recall_ok(auth, question="Where does Tom live?")
    assert [a["matched"] for a in exact["anchors"]] == ["tom"]


def test_without_an_embedder_the_semantic_anchor_surface_reports_degraded(project, auth):
    write_fact(project, content="Maria works at Acme Robotics.", quote="Maria works at Acme Robotics",
               predicate="works_at", subject="Maria", object="Acme Robotics", subject_type="person")
    bundle = recall_ok(auth, question="who works at robotics companies?", surfaces=["facts"])
    assert bundle["anchors"] == [] and bundle["degraded"] == ["semantic_anchors"]


def test_an_entity_whose_words_changed_is_dropped_until_embedded_again(project, auth, fake, endpoint_embedder):
    write_fact(project, content="Tom lives in Galway.", quote="Tom lives in Galway", predicate="lives_in",
               subject="Tom", object="Galway", subject_type="person")
    build_all(project, endpoint_embedder)
    follow_all(project)
    question = {"question": "galway lives", "limit": 5}
    assert "Galway" in [c["name_preview"] for c in post(auth, "/v1/entities/candidates", question).json()["candidates"]]
    # New words about Galway: its stored vector no longer matches its evidence, so it is not answered from.
    write_fact(project, content="Galway is part of Connacht.", quote="Galway is part of Connacht",
               predicate="part_of", subject="Galway", object="Connacht")
    stale = post(auth, "/v1/entities/candidates", question).json()
    assert "Galway" not in [c["name_preview"] for c in stale["candidates"]]
    assert stale["build_state"] == "catching_up"  # the new entity (Connacht) has no vector yet
    follow_all(project)
    fresh = post(auth, "/v1/entities/candidates", question).json()
    assert "Galway" in [c["name_preview"] for c in fresh["candidates"]] and fresh["build_state"] == "complete"


def test_erasure_removes_entity_vectors_built_from_the_subjects_words(project, fake, endpoint_embedder):
    write_fact(project, content="I prefer Quokkaville.", quote="I prefer Quokkaville", predicate="prefers",
               subject="I", object="Quokkaville", data_subject="ann")
    write_fact(project, content="Galway is part of Connacht.", quote="Galway is part of Connacht",
               predicate="part_of", subject="Galway", object="Connacht", data_subject="bob")
    build_all(project, endpoint_embedder)
    follow_all(project)
    ann_vectors = count("SELECT count(*) FROM entity_vector WHERE scope = %s AND source_ids && ARRAY("
                        "SELECT observation_id FROM observation WHERE scope = %s AND data_subject_id = 'ann')",
                        [project, project])
    assert ann_vectors >= 2  # ann's speaker entity and Quokkaville
    receipt = erase(project=project, data_subject_id="ann", principal="cli", principal_kind="operator")
    assert receipt["deleted"]["entity_vector"] == ann_vectors and receipt["residual"]["entity_vector"] == 0
    assert receipt["clean"] is True
    left = count("SELECT count(*) FROM entity_vector WHERE scope = %s", [project])
    assert left >= 1  # bob's entities keep theirs
    with connection.cursor() as cursor:
        cursor.execute("SELECT e.canonical_name FROM entity_vector v JOIN entity e USING (entity_id)"
                       " WHERE v.scope = %s", [project])
        assert "Quokkaville" not in {row[0] for row in cursor.fetchall()}
    assert entity_candidates.entity_storage_ready()

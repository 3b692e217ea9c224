"""One project never sees another's objects (api.md §2, P10): every id-taking /v1 route, called with project B's
real ids and keys under project A's token, answers exactly as a fresh project answers the same call with ids
nobody holds — same status, same body once generated ids and times are set aside — and B is left untouched."""
import base64
import uuid

import pytest
from django.db import connection

from formation.driver import drain
from formation.rules import RulesProposer

from .support import call, new_project, normalise, routes

pytestmark = pytest.mark.django_db

# Routes that take no object id, key or subject of another project (listed so a new route must be classified).
NO_OBJECT_ROUTES = {
    "/v1/freshness", "/v1/schema", "/v1/passages/search", "/v1/entities/candidates", "/v1/reports/candidates",
    "/v1/notifications/endpoints/register", "/v1/notifications/endpoints/list",
    "/v1/notifications/endpoints/disable", "/v1/notifications/deliveries/list",
}


def _project_b():
    """Project B with one of everything: a turn, a formed fact and its entities, a chunk, a feedback report,
    a subject, an artifact, and the idempotency keys it used."""
    name, token, _ = new_project()
    turn_key = str(uuid.uuid4())
    status, receipt, _ = call(token, "POST", "/v1/observations", {
        "idempotency_key": turn_key, "data_subject_id": "alice",
        "messages": [{"role": "user", "content": "I live in Dublin and work at Acme."}]})
    assert status == 201
    assert drain(name, proposer=RulesProposer()).turns_formed == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT f.fact_id::text, f.version::text, f.object_entity_id::text FROM fact f"
                       " WHERE f.scope = %s AND f.predicate = 'lives_in'", [name])
        fact_id, fact_version, entity_id = cursor.fetchone()
        cursor.execute("SELECT chunk_id::text FROM turn_message WHERE observation_id = %s", [receipt["id"]])
        chunk_id = cursor.fetchone()[0]
    status, feedback, _ = call(token, "POST", "/v1/feedback/record", {"record_id": fact_id, "note": "wrong city"})
    assert status == 200
    subject_key, record_key = str(uuid.uuid4()), str(uuid.uuid4())
    status, subject, _ = call(token, "POST", "/v1/subjects/register",
                              {"idempotency_key": subject_key, "external_reference": "ref-b", "label": "B"})
    assert status == 200
    status, artifact, _ = call(token, "POST", "/v1/artifacts/put", {
        "id": str(uuid.uuid4()), "data_subject_id": "alice", "kind": "state", "name": "notes",
        "content": base64.b64encode(b"B's private notes").decode()})
    assert status == 200
    status, _, _ = call(token, "POST", "/v1/records/assert", {"records": [{
        "idempotency_key": record_key, "data_subject_id": "alice", "subject": "Alice", "predicate": "speaks",
        "object": "Irish", "statement": "Alice speaks Irish."}]})
    assert status == 200
    return {
        "name": name, "token": token, "observation": receipt["id"], "turn_key": turn_key, "fact": fact_id,
        "fact_version": fact_version, "entity": entity_id, "chunk": chunk_id, "feedback": feedback["id"],
        "subject": subject["id"], "subject_version": subject["version"], "subject_key": subject_key,
        "artifact": artifact["id"], "artifact_version": artifact["version"], "record_key": record_key,
        "person": "alice",
    }


def _cases(ids):
    """(path, body) per id-taking route; `ids` maps each kind of id to B's value or to one nobody holds.
    Reads come first, while A and the baseline project are still empty, so cursors page over nothing alike."""
    turn = [{"role": "user", "content": "I live in Dublin and work at Acme."}]
    return [
        ("/v1/recalls", {"question": "Where do I live?", "data_subject_id": ids["person"]}),
        ("/v1/contexts", {"data_subject_id": ids["person"]}),
        ("/v1/citations/resolve", {"id": ids["fact"]}),
        ("/v1/messages/get", {"chunk_id": ids["chunk"]}),
        ("/v1/records/list", {"data_subject_id": ids["person"]}),
        ("/v1/records/list", {"after": {"id": ids["fact"]}}),
        ("/v1/records/history", {"id": ids["fact"]}),
        ("/v1/entities/list", {"after": {"id": ids["entity"]}}),
        ("/v1/entities/get", {"id": ids["entity"]}),
        ("/v1/feedback/list", {"record_id": ids["fact"]}),
        ("/v1/feedback/list", {"after": {"recorded_at": "2030-01-01T00:00:00Z", "id": ids["feedback"]}}),
        ("/v1/subjects/get", {"id": ids["subject"]}),
        ("/v1/subjects/get", {"external_reference": "ref-b"}),
        ("/v1/subjects/list", {"after": ids["subject"]}),
        ("/v1/artifacts/get", {"id": ids["artifact"]}),
        ("/v1/artifacts/list", {"data_subject_id": ids["person"]}),
        ("/v1/artifacts/list", {"after": ids["artifact"]}),
        ("/v1/exports", {"data_subject_id": ids["person"]}),
        ("/v1/exports", {"source_observation_ids": [ids["observation"]]}),
        # Writes naming B's objects: each must find nothing, exactly as an unknown id does.
        ("/v1/records/correct", {"records": [{"id": ids["fact"], "expected_version": ids["fact_version"],
                                              "object": "Cork", "statement": "I live in Cork."}]}),
        ("/v1/records/retract", {"records": [{"id": ids["fact"], "expected_version": ids["fact_version"]}]}),
        ("/v1/feedback/record", {"record_id": ids["fact"], "note": "looks wrong"}),
        ("/v1/feedback/promote", {"id": ids["feedback"], "expected_version": ids["fact_version"]}),
        ("/v1/entities/purge", {"id": ids["entity"], "reason": "cleanup", "confirm": True}),
        ("/v1/subjects/update", {"id": ids["subject"], "expected_version": ids["subject_version"], "label": "A"}),
        ("/v1/artifacts/put", {"id": ids["artifact"], "data_subject_id": "alice", "kind": "state",
                               "content": "", "expected_version": ids["artifact_version"]}),
        ("/v1/artifacts/delete", {"id": ids["artifact"], "expected_version": ids["artifact_version"]}),
        ("/v1/erasures", {"source_observation_ids": [ids["observation"]], "reason": "request"}),
        ("/v1/erasures", {"data_subject_id": ids["person"], "reason": "request"}),
        # B's idempotency keys are B's alone: under A they start new work, never replay or conflict with B's.
        ("/v1/records/assert", {"records": [{
            "idempotency_key": ids["record_key"], "data_subject_id": "alice", "subject": "Alice",
            "predicate": "speaks", "object": "Welsh", "statement": "Alice speaks Welsh."}]}),
        ("/v1/subjects/register", {"idempotency_key": ids["subject_key"], "external_reference": "ref-b",
                                   "label": "B"}),
        ("/v1/observations", {"idempotency_key": ids["turn_key"], "data_subject_id": "alice", "messages": turn}),
    ]


def _b_view(b):
    """What B itself sees of its objects: must be identical before and after A's attempts."""
    reads = [("/v1/citations/resolve", {"id": b["fact"]}), ("/v1/entities/get", {"id": b["entity"]}),
             ("/v1/messages/get", {"chunk_id": b["chunk"]}), ("/v1/subjects/get", {"id": b["subject"]}),
             ("/v1/artifacts/get", {"id": b["artifact"]}), ("/v1/feedback/list", {}),
             ("/v1/records/list", {}), ("/v1/exports", {"data_subject_id": "alice"})]
    out = []
    for path, body in reads:
        status, data, _ = call(b["token"], "POST", path, body)
        assert status == 200, (path, data)
        data.pop("exported_at", None)
        out.append((path, data))
    out.append(call(b["token"], "GET", "/v1/freshness")[1])
    return out


def test_every_id_taking_route_answers_a_foreign_id_like_an_unknown_one():
    b = _project_b()
    before = _b_view(b)
    a_name, a_token, _ = new_project()
    c_name, c_token, _ = new_project()  # the baseline: a fresh project asking with ids nobody holds
    # In C nobody holds these ids, and "alice" and "ref-b" name nobody either: the same call from a fresh project.
    unknown = {key: str(uuid.uuid4()) for key in b if key not in ("name", "token", "person")}
    unknown["person"] = b["person"]

    foreign_cases, unknown_cases = _cases(b), _cases(unknown)
    covered = {path for path, _ in foreign_cases}
    assert covered | NO_OBJECT_ROUTES == {path for path, _ in routes()}  # every route is classified

    for (path, foreign_body), (_, unknown_body) in zip(foreign_cases, unknown_cases, strict=True):
        foreign = call(a_token, "POST", path, foreign_body)
        baseline = call(c_token, "POST", path, unknown_body)
        assert foreign[0] == baseline[0], (path, foreign_body, foreign[1], baseline[1])
        assert normalise(foreign[1], [a_name, c_name]) == normalise(baseline[1], [a_name, c_name]), path
        assert b["name"] not in str(foreign[1]) and "Dublin" not in str(foreign[1]), path
    assert _b_view(b) == before


def test_putting_an_artifact_under_a_foreign_id_creates_its_own():
    """Artifacts are named by (project, id): A's put of an id B holds is an ordinary create in A, with nothing
    of B's in the answer, and B's artifact is untouched."""
    b = _project_b()
    a_name, a_token, _ = new_project()
    body = {"data_subject_id": "alice", "kind": "state", "content": ""}
    fresh = call(a_token, "POST", "/v1/artifacts/put", {"id": str(uuid.uuid4()), **body})
    foreign = call(a_token, "POST", "/v1/artifacts/put", {"id": b["artifact"], **body})
    assert (foreign[0], foreign[1]["replayed"], foreign[1]["bytes"]) == (fresh[0], fresh[1]["replayed"], 0) == (
        200, False, 0)
    assert set(foreign[1]) == set(fresh[1])
    assert foreign[1]["authored_by"] == fresh[1]["authored_by"] and foreign[1]["id"] == b["artifact"]
    status, data, _ = call(b["token"], "POST", "/v1/artifacts/get", {"id": b["artifact"]})
    assert status == 200 and base64.b64decode(data["content"]) == b"B's private notes"

"""POST /v1/observations through the real URLconf: strict bodies, turn rules, idempotency, check order."""
import json
import uuid

import pytest
from django.db import connection
from django.test import Client

from governance import services
from tests.conftest import unique_name

pytestmark = pytest.mark.django_db


def post(client, token, body, path="/v1/observations"):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.generic("POST", path, data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def rows_for(project):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM observation WHERE scope = %s),"
            " (SELECT count(*) FROM turn_message m JOIN observation o USING (observation_id) WHERE o.scope = %s),"
            " (SELECT count(*) FROM watermark WHERE scope = %s),"
            " (SELECT count(*) FROM observation_retry WHERE scope = %s)", [project] * 4)
        return cursor.fetchone()


def ledger(project, op=None):
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, outcome, principal_kind, magnitude FROM audit_entry WHERE project = %s"
                       + (" AND operation = %s" if op else "") + " ORDER BY entry_id", [project] + ([op] if op else []))
        return cursor.fetchall()


TURN = {"messages": [{"role": "user", "content": "I live in Dublin."}], "data_subject_id": "alice"}

INVALID_BODIES = {
    "empty": b"",
    "whitespace only": b"  \n",
    "null": b"null",
    "array": b"[]",
    "scalar": b"42",
    "string": b'"x"',
    "trailing data": b'{"messages": []} {}',
    "trailing garbage": b'{"messages": []}x',
    "bom": b"\xef\xbb\xbf" + json.dumps(TURN).encode(),
    "over 1 MiB": json.dumps({"messages": [{"role": "user", "content": "a" * 1_100_000}]}).encode(),
    "invalid utf-8": b'{"data_subject_id": "\xff\xfe", "messages": []}',
    "lone surrogate": b'{"data_subject_id": "\\ud800", "messages": []}',
    "NaN": b'{"messages": [{"role": "user", "content": "x", "group_ordinal": NaN}]}',
    "Infinity": b'{"messages": [{"role": "user", "content": "x", "group_ordinal": Infinity}]}',
    "-Infinity": b'{"messages": [{"role": "user", "content": "x", "group_ordinal": -Infinity}]}',
    "duplicate key": b'{"messages": [], "messages": []}',
    "duplicate key casefolded": b'{"data_subject_id": "a", "DATA_SUBJECT_ID": "b", "messages": []}',
    "nested duplicate": b'{"messages": [{"role": "user", "Role": "user", "content": "x"}]}',
    "too deep": b'{"messages": ' + b"[" * 130 + b"]" * 130 + b"}",
    "unknown field": json.dumps({**TURN, "scope": "other"}).encode(),
    "unknown project field": json.dumps({**TURN, "project": "other"}).encode(),
    "unknown nested field": json.dumps({"messages": [{"role": "user", "content": "x", "name": "n"}]}).encode(),
    "case-different field": json.dumps({"Messages": TURN["messages"]}).encode(),
    "string for array": json.dumps({"messages": "hello"}).encode(),
    "int as string": json.dumps({"messages": [{"role": "user", "content": "x", "group_ordinal": "0"}]}).encode(),
    "int as float": json.dumps({"messages": [{"role": "user", "content": "x", "group_ordinal": 0.0}]}).encode(),
    "bool for int": json.dumps({"messages": [{"role": "user", "content": "x", "group_ordinal": True}]}).encode(),
    "int beyond 64 bits": b'{"messages": [{"role": "user", "content": "x", "group_ordinal": 9223372036854775808}]}',
    "number for string": json.dumps({"messages": [{"role": "user", "content": 5}]}).encode(),
    "null array element": json.dumps({"messages": [None]}).encode(),
    "timestamp with space": json.dumps({**TURN, "occurred_at": "2026-01-01 10:00:00Z"}).encode(),
    "timestamp without zone": json.dumps({**TURN, "occurred_at": "2026-01-01T10:00:00"}).encode(),
    "impossible date": json.dumps({**TURN, "occurred_at": "2026-02-30T00:00:00Z"}).encode(),
    "message timestamp bad": json.dumps({"messages": [{"role": "user", "content": "x",
                                                       "occurred_at": "yesterday"}]}).encode(),
}


@pytest.mark.parametrize("case", sorted(INVALID_BODIES))
def test_invalid_body_is_refused_and_writes_nothing(new_project, case):
    project, token = new_project
    response = post(Client(), token, INVALID_BODIES[case])
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid_body", "message": "the request body could not be read"}}
    assert rows_for(project) == (0, 0, 0, 0)
    assert ledger(project, "observe") == [("observe", "refused", "credential", 0)]


INVALID_TURNS = {
    "no messages": {"messages": []},
    "missing messages": {"data_subject_id": "a"},
    "null messages": {"messages": None},
    "65 messages": {"messages": [{"role": "user", "content": "x"}] * 65},
    "unknown role": {"messages": [{"role": "User", "content": "x"}]},
    "missing role": {"messages": [{"content": "x"}]},
    "blank content": {"messages": [{"role": "user", "content": " \u3000\n"}]},
    "missing content": {"messages": [{"role": "user"}]},
    "nul in content": {"messages": [{"role": "user", "content": "a\u0000b"}]},
    "message over 64 KiB": {"messages": [{"role": "user", "content": "é" * 32769}]},
    "turn over 256 KiB": {"messages": [{"role": "user", "content": "a" * 65536}] * 5},
    "tool without groups": {"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]},
    "groups on some messages": {"messages": [{"role": "user", "content": "x", "group_ordinal": 0},
                                             {"role": "user", "content": "y"}]},
    "groups not from 0": {"messages": [{"role": "user", "content": "x", "group_ordinal": 1}]},
    "group skips": {"messages": [{"role": "user", "content": "x", "group_ordinal": 0},
                                 {"role": "assistant", "content": "y", "group_ordinal": 2}]},
    "group goes back": {"messages": [{"role": "user", "content": "x", "group_ordinal": 0},
                                     {"role": "user", "content": "y", "group_ordinal": 1},
                                     {"role": "user", "content": "z", "group_ordinal": 0}]},
    "key not a uuid": {**TURN, "idempotency_key": "abc"},
    "key with braces": {**TURN, "idempotency_key": "{0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31}"},
    "key unhyphenated": {**TURN, "idempotency_key": "0b6f4a523c1e4d7a9f102a7c5e9d8b31"},
    "subject over 1 KiB": {**TURN, "data_subject_id": "s" * 1025},
    "subject with nul": {**TURN, "data_subject_id": "a\u0000"},
}


@pytest.mark.parametrize("case", sorted(INVALID_TURNS))
def test_invalid_turn_is_refused_and_writes_nothing(new_project, case):
    project, token = new_project
    response = post(Client(), token, INVALID_TURNS[case])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_turn"
    assert rows_for(project) == (0, 0, 0, 0)


def test_observe_stores_turn_and_answers_receipt(new_project):
    project, token = new_project
    body = {"messages": [{"role": "user", "content": "I live in Dublin.", "group_ordinal": 0},
                         {"role": "tool", "content": "lookup done", "group_ordinal": 1,
                          "occurred_at": "2026-03-04T10:12:00.1234567+01:00"}],
            "data_subject_id": "alice", "occurred_at": "2026-03-04T10:00:00Z",
            "idempotency_key": "0B6F4A52-3C1E-4D7A-9F10-2A7C5E9D8B31"}
    response = post(Client(), token, body)
    assert response.status_code == 201
    assert response["Content-Type"] == "application/json; charset=utf-8"
    data = response.json()
    assert set(data) == {"id", "scope", "log_offset"}
    assert data["scope"] == project and data["log_offset"] == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT kind, source_role, data_subject_id, occurred_at FROM observation"
                       " WHERE observation_id = %s", [data["id"]])
        kind, role, subject, occurred = cursor.fetchone()
        cursor.execute("SELECT ordinal, role, group_ordinal, occurred_at FROM turn_message WHERE observation_id = %s"
                       " ORDER BY ordinal", [data["id"]])
        messages = cursor.fetchall()
    assert (kind, role, subject) == ("turn", "user", "alice")
    assert occurred.isoformat() == "2026-03-04T10:00:00+00:00"
    assert [m[:3] for m in messages] == [(0, "user", 0), (1, "tool", 1)]
    assert messages[0][3] == occurred
    assert messages[1][3].isoformat() == "2026-03-04T09:12:00.123456+00:00"  # truncated, in UTC
    assert ledger(project, "observe") == [("observe", "allowed", "credential", 2)]


def test_replay_with_new_timestamp_returns_original_receipt(new_project):
    project, token = new_project
    key = str(uuid.uuid4())
    first = post(Client(), token, {**TURN, "idempotency_key": key, "occurred_at": "2026-01-01T00:00:00Z"})
    second = post(Client(), token, {**TURN, "idempotency_key": key.upper(), "occurred_at": "2026-06-01T00:00:00Z"})
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert rows_for(project) == (1, 1, 1, 1)
    assert [row[3] for row in ledger(project, "observe")] == [1, 0]


@pytest.mark.parametrize("change", ["content", "role", "subject", "order", "grouping"])
def test_same_key_different_turn_conflicts(new_project, change):
    project, token = new_project
    key = str(uuid.uuid4())
    base = {"idempotency_key": key, "data_subject_id": "alice",
            "messages": [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]}
    changed = json.loads(json.dumps(base))
    if change == "content":
        changed["messages"][0]["content"] = "one!"
    elif change == "role":
        changed["messages"][1]["role"] = "system"
    elif change == "subject":
        changed["data_subject_id"] = "bob"
    elif change == "order":
        changed["messages"].reverse()
    else:
        for i, m in enumerate(changed["messages"]):
            m["group_ordinal"] = 0 if i == 0 else 0
    assert post(Client(), token, base).status_code == 201
    response = post(Client(), token, changed)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "idempotency_conflict"
    assert rows_for(project)[0] == 1


def test_key_of_an_erased_turn_conflicts_forever(new_project):
    project, token = new_project
    key = str(uuid.uuid4())
    receipt = post(Client(), token, {**TURN, "idempotency_key": key}).json()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM observation WHERE observation_id = %s", [receipt["id"]])
        cursor.execute("SELECT observation_id, request_digest FROM observation_retry WHERE scope = %s", [project])
        assert cursor.fetchall() == [(None, None)]  # a tombstone: the key stays, the payload is forgotten
    for _ in range(2):
        response = post(Client(), token, {**TURN, "idempotency_key": key})
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "idempotency_conflict"


def test_no_key_always_appends(new_project):
    project, token = new_project
    offsets = [post(Client(), token, TURN).json()["log_offset"] for _ in range(3)]
    assert offsets == [0, 1, 2]


def test_check_order_401_before_403_before_400(new_project, db):
    project, token = new_project
    _, read_only = services.issue_credential(project=project, name="ro", access="read_only", principal="cli")
    client = Client()
    garbage = b"\xff not json"
    assert post(client, "mem_" + "A" * 43, garbage).status_code == 401
    response = post(client, read_only, garbage)
    assert response.status_code == 403 and response.json()["error"]["code"] == "forbidden"
    assert post(client, token, garbage).status_code == 400
    # A read-only credential may read.
    assert client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {read_only}").status_code == 200


@pytest.mark.parametrize("header", [
    None, "", "Bearer", "Bearer ", "Basic abc", "Bearer mem_short", "Bearer mem_" + "A" * 42 + "!",
    "Bearer " + "x" * 47, "Token mem_" + "A" * 43, "Bearer mem_" + "A" * 43,
])
def test_every_credential_problem_gets_one_401(new_project, header):
    client = Client()
    kwargs = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = client.get("/v1/freshness", **kwargs)
    assert response.status_code == 401
    assert response.json() == {"error": {"code": "unauthenticated", "message": "a credential is required"}}
    assert "WWW-Authenticate" not in response


def test_scheme_is_case_insensitive_and_token_trimmed(new_project):
    _, token = new_project
    response = Client().get("/v1/freshness", HTTP_AUTHORIZATION=f"  bEaReR   {token}  ")
    assert response.status_code == 200


def test_revoked_and_suspended_are_refused_on_the_next_request(new_project):
    project, token = new_project
    credential, second = services.issue_credential(project=project, name="two", principal="cli")
    client = Client()
    assert client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {second}").status_code == 200
    services.revoke_credential(credential_id=credential.credential_id, principal="cli")
    assert client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {second}").status_code == 401
    services.suspend_project(name=project, principal="cli")
    assert client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
    services.resume_project(name=project, principal="cli")
    assert client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_trailing_slash_and_unknown_routes_are_404_never_redirects(new_project):
    project, token = new_project
    client = Client()
    for path in ("/v1/observations/", "/v1/recalls/", "/v1/nope", "/v1/", "/v1"):
        response = post(client, token, TURN, path=path)
        assert response.status_code == 404, path
        assert response.json() == {"error": {"code": "not_found", "message": "not found"}}
    assert ledger(project, "route.unknown")[0][:2] == ("route.unknown", "refused")
    assert post(client, "bad", TURN, path="/v1/nope").status_code == 401
    assert post(client, "bad", TURN, path="/v1").status_code == 401


def test_a_disallowed_host_on_v1_gets_the_json_envelope_and_the_console_keeps_its_page(new_project):
    _, token = new_project
    client = Client()
    api = client.generic(
        "POST", "/v1/observations", json.dumps(TURN).encode(), HTTP_HOST="evil.example",
        HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.status_code == 400
    assert api["Content-Type"] == "application/json; charset=utf-8"
    assert api.json()["error"]["code"] == "invalid_body"
    console = client.get("/console/", HTTP_HOST="evil.example")
    assert console.status_code == 400 and not console["Content-Type"].startswith("application/json")


def test_wrong_method_is_405_with_allow(new_project):
    project, token = new_project
    response = Client().get("/v1/observations", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert ledger(project, "observe") == [("observe", "refused", "credential", 0)]


def test_freshness_shape(new_project):
    project, token = new_project
    client = Client()
    empty = client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert empty.json() == {"scope": project, "stored": None, "formed": None, "parked": 0}
    post(client, token, TURN)
    assert client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {token}").json() == {
        "scope": project, "stored": 0, "formed": None, "parked": 0}


def test_projects_never_see_each_other(new_project):
    project_a, token_a = new_project
    project_b = unique_name()
    services.create_project(name=project_b, principal="cli")
    _, token_b = services.issue_credential(project=project_b, name="b", principal="cli")
    client = Client()
    for _ in range(3):
        post(client, token_a, TURN)
    b = post(client, token_b, TURN).json()
    assert b["scope"] == project_b and b["log_offset"] == 0  # offsets never share a counter
    fresh_b = client.get("/v1/freshness", HTTP_AUTHORIZATION=f"Bearer {token_b}").json()
    assert fresh_b == {"scope": project_b, "stored": 0, "formed": None, "parked": 0}


def test_health_and_ready_need_no_credential(db):
    client = Client()
    health = client.get("/health")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    ready = client.get("/ready")
    assert ready.status_code == 200 and ready.json() == {"status": "ready"}
    assert ready["Cache-Control"] == "no-store"
    assert health["Content-Type"] == "application/json; charset=utf-8"
    for path in ("/health", "/ready"):
        refused = Client(enforce_csrf_checks=True).post(path)
        assert refused.status_code == 405 and refused["Allow"] == "GET, HEAD", path
        assert refused.json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("path,body", [
    ("/v1/citations/resolve", {"id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f"}),
    ("/v1/records/history", {"id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f"}),
    ("/v1/entities/get", {"id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f"}),
    ("/v1/messages/get", {"chunk_id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f"}),
    ("/v1/subjects/get", {"id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f"}),
    ("/v1/artifacts/get", {"id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f"}),
    ("/v1/feedback/record", {"record_id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f", "note": "wrong"}),
    ("/v1/entities/purge", {"id": "6f1c1f4e-8a49-4d4e-9d8a-2b1f3c4d5e6f", "reason": "bad"}),
    ("/v1/no/such/route", {}),
])
def test_every_404_has_one_body(new_project, path, body):
    _, token = new_project
    response = post(Client(), token, body, path=path)
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "not found"}}

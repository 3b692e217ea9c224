"""POST /v1/erasures and /v1/exports on the live server (api.md §7.8): answers, refusals, access, ledger rows."""
import uuid

import httpx
import pytest
from django.db import connection

from tests.conftest import make_project
from tests.governance.support import form

pytestmark = pytest.mark.live


def _ledger(committed, project, op):
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT principal_kind, magnitude, outcome FROM audit_entry WHERE project = %s"
                       " AND operation = %s ORDER BY entry_id", [project, op])
        return cursor.fetchall()


def _observe(api, subject, text):
    response = api.post("/v1/observations", json={"data_subject_id": subject, "idempotency_key": str(uuid.uuid4()),
                                                  "messages": [{"role": "user", "content": text}]})
    assert response.status_code == 201
    return response.json()["id"]


def test_an_erased_subject_is_gone_from_recall_and_its_receipt_is_clean(api, committed):
    _observe(api, "alice", "I live in Dublin.")
    _observe(api, "bob", "I live in Cork.")
    with committed():
        form(api.project)
    assert api.post("/v1/recalls", json={"question": "Where do I live?", "data_subject_id": "alice"}).json()["facts"]

    response = api.post("/v1/erasures", json={"data_subject_id": "alice", "reason": "asked"})
    assert response.status_code == 200
    receipt = response.json()
    assert set(receipt) == {"request_id", "scope", "data_subject_id", "completed_at", "deleted", "residual", "clean"}
    assert receipt["scope"] == api.project and receipt["clean"] is True
    assert receipt["completed_at"].endswith("Z") and receipt["deleted"]["observation"] == 1
    magnitude = sum(v for k, v in receipt["deleted"].items() if k != "fact_evidence_orphaned")
    assert _ledger(committed, api.project, "erase") == [("credential", magnitude, "allowed")]

    recall = api.post("/v1/recalls", json={"question": "Where do I live?", "data_subject_id": "alice"})
    assert recall.status_code == 200 and recall.json()["facts"] == []
    assert api.post("/v1/recalls", json={"question": "Where do I live?", "data_subject_id": "bob"}).json()["facts"]


def test_erasure_refusals_have_their_codes_and_leave_only_a_refused_row(api, committed):
    cases = [
        ({}, 400, "no_subject"),
        ({"data_subject_id": "", "source_observation_ids": []}, 400, "no_subject"),
        ({"data_subject_id": "a", "source_observation_ids": [str(uuid.uuid4())]}, 400, "invalid_erasure"),
        ({"source_observation_ids": ["x"]}, 400, "invalid_erasure"),
        ({"source_observation_ids": "x"}, 400, "invalid_body"),
        ({"data_subject_id": "a", "scope": "other"}, 400, "invalid_body"),
    ]
    for body, status, code in cases:
        response = api.post("/v1/erasures", json=body)
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), body
    assert _ledger(committed, api.project, "erase") == [("credential", 0, "refused")] * len(cases)
    assert api.post("/v1/erasures/", json={"data_subject_id": "a"}).status_code == 404


def test_exports_answer_every_section_and_read_only_may_export_but_not_erase(api, committed, live_server_url):
    source = _observe(api, "alice", "I live in Dublin.")
    with committed():
        form(api.project)
    response = api.post("/v1/exports", json={"source_observation_ids": [source]})
    assert response.status_code == 200
    result = response.json()
    assert result["source_observation_ids"] == [source] and result["data_subject_id"] == ""
    assert result["rows"]["fact"] == 1 and result["sections"]["message"][0]["content"] == "I live in Dublin."
    assert len(result["sections"]) == 15
    assert _ledger(committed, api.project, "export") == [("credential", sum(result["rows"].values()), "allowed")]
    assert api.post("/v1/exports", json={}).json()["error"]["code"] == "no_subject"
    assert api.post("/v1/exports", json={"source_observation_ids": ["x"]}).json()["error"]["code"] == "invalid_export"

    project, token, _ = make_project(committed, access="read_only")
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.post(live_server_url + "/v1/exports", json={"data_subject_id": "a"}, headers=headers).status_code == 200
    refused = httpx.post(live_server_url + "/v1/erasures", json={"data_subject_id": "a"}, headers=headers)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM erasure_request WHERE scope = %s", [project])
        assert cursor.fetchone()[0] == 0

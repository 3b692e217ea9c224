"""Tokens and content never reach the logs or the ledger (api.md §1.1, governance.md §4): a live gunicorn server
and a Celery worker, both logging to files, serve requests carrying a distinctive token and distinctive words —
including refusals, an unreadable body and a formation failure whose model reply echoes the message — and then
the server log, the worker log and every ledger row written meanwhile are searched for them."""
import base64
import json
import uuid
from pathlib import Path

import httpx
import pytest
from django.db import connection

from governance import services
from tests.conftest import make_project
from tests.fakemodel import fake_model
from tests.support.processes import CeleryWorker, RedisProcess, WebServer, service_env, wait_for

pytestmark = [pytest.mark.live, pytest.mark.worker]


def _ledger_mark(committed):
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(entry_id), 0) FROM audit_entry")
        return cursor.fetchone()[0]


def _ledger_text_since(committed, mark):
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(a)::text FROM audit_entry a WHERE entry_id > %s", [mark])
        return [row[0] for row in cursor.fetchall()]


def _turn_state(committed, project):
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT formed_at IS NOT NULL, formation_error IS NOT NULL FROM observation"
                       " WHERE scope = %s AND kind = 'turn' ORDER BY log_offset", [project])
        return cursor.fetchall()


def test_tokens_and_content_never_reach_logs_or_ledger(test_database_name, committed):
    mark = uuid.uuid4().hex[:10]
    place, secret, subject = f"Zorblat{mark}", f"Quindle{mark}", f"subject-{mark}"
    said = f"I live in {place}."
    echoed = f"I keep my diary in {secret}."  # the model's broken reply quotes this back
    reply = json.dumps({"claims": [{
        "subject": "I", "predicate": "lives_in", "object": place, "statement": f"I live in {place}.",
        "confidence": 0.9, "quote": f"I live in {place}", "polarity": "asserted", "tense": "present"}]})

    project, token, _ = make_project(committed)
    with committed():
        revoked_credential, revoked = services.issue_credential(project=project, name="old", principal="cli")
        services.revoke_credential(credential_id=revoked_credential.credential_id, principal="cli")
    ledger_from = _ledger_mark(committed)
    redis = RedisProcess().start()
    with fake_model({said: reply, echoed: f"not json at all: {echoed} {secret}"}) as fake:
        env = service_env(test_database_name, redis.url, MEMOIR_EXTRACTOR="model", MEMOIR_LOG_LEVEL="DEBUG",
                          MEMOIR_EXTRACTION_ENDPOINT=fake.base_url, MEMOIR_EXTRACTION_MODEL="fake-extractor",
                          MEMOIR_EXTRACTION_ALLOWLIST=fake.authority)
        web = WebServer(env, workers=1, threads=4).start()
        worker = CeleryWorker(env).start()  # no beat: only this project's kicks, no sweep of other tests' turns
        try:
            with httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api:
                def post(path, body, expected):
                    response = api.post(path, content=body if isinstance(body, bytes) else json.dumps(body))
                    assert response.status_code == expected, (path, response.text)
                    return response.json()

                for content in (said, echoed):
                    post("/v1/observations", {"idempotency_key": str(uuid.uuid4()), "data_subject_id": subject,
                                              "messages": [{"role": "user", "content": content}]}, 201)
                wait_for(lambda: _turn_state(committed, project) == [(True, False), (False, True)], 30,
                         what="one turn formed and one failed")
                post("/v1/observations", f'{{"messages": [{{"role": "user", "content": "{secret}"'.encode(), 400)
                post("/v1/recalls", {"question": f"Do I live in {place}?", "data_subject_id": subject}, 200)
                post("/v1/contexts", {"data_subject_id": subject}, 200)
                post("/v1/records/assert", {"records": [{
                    "idempotency_key": str(uuid.uuid4()), "data_subject_id": subject, "subject": secret,
                    "predicate": "speaks", "object": place, "statement": f"{secret} speaks {place}."}]}, 200)
                record = post("/v1/records/list", {"data_subject_id": subject}, 200)["records"][0]
                post("/v1/feedback/record", {"record_id": record["id"], "note": f"not {secret}"}, 200)
                post("/v1/subjects/register", {"idempotency_key": str(uuid.uuid4()), "external_reference": secret,
                                               "label": place}, 200)
                post("/v1/artifacts/put", {"id": str(uuid.uuid4()), "data_subject_id": subject, "kind": "state",
                                           "name": secret, "content": base64.b64encode(said.encode()).decode()}, 200)
                post("/v1/exports", {"data_subject_id": subject}, 200)
                post("/v1/erasures", {"data_subject_id": subject, "reason": f"asked by {secret}"}, 200)
            for bad in (revoked, f"mem_{mark}", "mem_" + "A" * 43):
                response = httpx.get(web.url + "/v1/freshness", headers={"Authorization": f"Bearer {bad}"})
                assert response.status_code == 401
        finally:
            worker.stop()
            web.stop()
            redis.stop()
    logs = {"server": Path(web.log.name).read_text(errors="replace"),
            "worker": Path(worker.log.name).read_text(errors="replace")}
    assert "Booting worker" in logs["server"] and "drain_project" in logs["worker"]  # the logs were captured
    ledger = _ledger_text_since(committed, ledger_from)
    assert len(ledger) >= 14  # every request above left its row
    secrets = {"token": token, "token prefix": token[:12], "revoked token": revoked, "revoked prefix": revoked[:12],
               "malformed token": f"mem_{mark}", "place": place, "secret": secret, "subject": subject}
    found = {(what, where) for what, value in secrets.items()
             for where, text in [*logs.items(), ("ledger", "\n".join(ledger))] if value in text}
    assert found == set()

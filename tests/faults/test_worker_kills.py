"""A Celery worker SIGKILLed again and again in the middle of model calls, then a last worker: every turn forms
exactly once (one fact, one evidence row), nothing parks, and the killed turns only cost attempts.

Runs in a private database on the private cluster with a private Redis, so no other worker shares either."""
import json
import uuid

import httpx
import psycopg
import pytest

from tests.fakemodel import fake_model
from tests.support.processes import CeleryWorker, WebServer, wait_for

from .conftest import private_env

pytestmark = [pytest.mark.live, pytest.mark.worker]

TURNS = 30
KILLS = 3
MODEL_DELAY = 0.3  # seconds per model reply: a kill right after a request arrives lands inside the call


def content(i):
    return f"I live in Kiltown{i}."


def reply(i):
    return json.dumps({"claims": [{
        "subject": "I", "predicate": "lives_in", "object": f"Kiltown{i}", "statement": f"I live in Kiltown{i}.",
        "confidence": 0.9, "quote": f"I live in Kiltown{i}", "polarity": "asserted", "tense": "present"}]})


def test_repeated_sigkill_during_formation_forms_every_turn_exactly_once(private_db, redis):
    db_url, projects = private_db
    project, token = projects[0]
    auth = {"Authorization": f"Bearer {token}"}
    replies = {content(i): {"content": reply(i), "delay": MODEL_DELAY} for i in range(TURNS)}
    with fake_model(replies) as fake:
        env = private_env(db_url, redis.url, MEMOIR_FORMATION_INTERVAL=1, MEMOIR_FORMATION_BACKOFF=1,
                          MEMOIR_EXTRACTOR="model", MEMOIR_EXTRACTION_ENDPOINT=fake.base_url,
                          MEMOIR_EXTRACTION_MODEL="fake-extractor", MEMOIR_EXTRACTION_ALLOWLIST=fake.authority)
        web = WebServer(env, workers=1, threads=2).start()
        worker = None
        try:
            for i in range(TURNS):
                body = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": "alice",
                        "messages": [{"role": "user", "content": content(i)}]}
                assert httpx.post(web.url + "/v1/observations", json=body, headers=auth, timeout=10).status_code == 201
            for _ in range(KILLS):
                worker = CeleryWorker(env, beat=True).start()
                target = len(fake.requests) + 4
                wait_for(lambda target=target: len(fake.requests) >= target, 30, interval=0.01, what="model calls")
                worker.kill_hard()  # SIGKILL to the whole group, mid-call: no outcome is ever reported
            worker = CeleryWorker(env, beat=True).start()

            def freshness():
                return httpx.get(web.url + "/v1/freshness", headers=auth, timeout=10).json()

            wait_for(lambda: freshness()["formed"] == TURNS - 1, 60, interval=0.5, what="every turn formed")
            assert freshness() == {"scope": project, "stored": TURNS - 1, "formed": TURNS - 1, "parked": 0}
        finally:
            if worker is not None:
                worker.stop()
            web.stop()
        asked = [r.content for r in fake.requests]

    with psycopg.connect(db_url) as conn:
        facts = conn.execute(
            "SELECT o.canonical_name, count(DISTINCT f.fact_id), count(e.*) FROM fact f"
            " JOIN entity o ON o.entity_id = f.object_entity_id JOIN fact_evidence e USING (fact_id)"
            " WHERE f.scope = %s GROUP BY 1 ORDER BY 1", [project]).fetchall()
        turns = conn.execute(
            "SELECT formation_attempts, formed_at IS NOT NULL, parked_at IS NULL FROM observation"
            " WHERE scope = %s", [project]).fetchall()
        refusals = conn.execute("SELECT count(*) FROM rejected_claim WHERE scope = %s", [project]).fetchone()[0]
    # One fact per turn with one evidence row each: re-forming a killed turn reused its derived ids.
    assert facts == sorted((f"Kiltown{i}", 1, 1) for i in range(TURNS))
    assert refusals == 0
    assert all(formed and unparked for _, formed, unparked in turns)
    attempts = [a for a, _, _ in turns]
    print(f"{KILLS} kills: attempts {sorted(attempts, reverse=True)[:6]}..., {len(asked)} model calls")
    # Each kill cost the turn inside the model call one attempt, far from the 6 that would park it.
    assert sum(a - 1 for a in attempts) >= KILLS and max(attempts) < 6, attempts
    assert len(asked) >= TURNS + KILLS and set(asked) == {content(i) for i in range(TURNS)}

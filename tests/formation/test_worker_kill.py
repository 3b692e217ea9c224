"""A worker killed with SIGKILL in the middle of a turn: the turn is formed exactly once afterwards.

Its own module so that no other worker (with another extractor) shares the database while it runs."""

import pytest
from django.db import connection

from tests.conftest import make_project
from tests.fakemodel import fake_model
from tests.formation.test_worker import fact_rows, freshness, observe
from tests.support.processes import CeleryWorker, RedisProcess, WebServer, service_env, wait_for

pytestmark = [pytest.mark.live, pytest.mark.worker]


def test_worker_killed_mid_turn_forms_it_exactly_once(test_database_name, committed):
    project, token, _ = make_project(committed)
    content = "I live in Galway."
    reply = ('{"claims": [{"subject": "I", "predicate": "lives_in", "object": "Galway", "statement": "I live in'
             ' Galway.", "confidence": 0.8, "quote": "I live in Galway", "polarity": "asserted", "tense": "present"}]}')
    redis = RedisProcess().start()
    with fake_model({content: {"content": reply, "delay": 30}}) as fake:
        env = service_env(test_database_name, redis.url, MEMOIR_FORMATION_INTERVAL=1, MEMOIR_FORMATION_BACKOFF=1,
                          MEMOIR_EXTRACTOR="model", MEMOIR_EXTRACTION_ENDPOINT=fake.base_url,
                          MEMOIR_EXTRACTION_MODEL="fake-extractor", MEMOIR_EXTRACTION_ALLOWLIST=fake.authority)
        web = WebServer(env, workers=1, threads=4).start()
        worker = CeleryWorker(env, beat=True).start()
        try:
            assert observe(web.url, token, content)[0].status_code == 201
            wait_for(lambda: any(r.content == content for r in fake.requests), 30, what="the model call")
            worker.kill_hard()  # SIGKILL while the turn is inside its model call
            fake.set_replies({content: reply})
            worker = CeleryWorker(env, beat=True).start()
            wait_for(lambda: freshness(web.url, token)["formed"] == 0, 60, what="re-formation")
        finally:
            worker.stop()
            web.stop()
            redis.stop()
    assert fact_rows(committed, project) == [("lives_in", "Galway", "I live in Galway")]
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT formation_attempts, formed_at IS NOT NULL, parked_at IS NULL FROM observation"
                       " WHERE scope = %s", [project])
        attempts, formed, unparked = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM fact_evidence WHERE scope = %s", [project])
        evidence = cursor.fetchone()[0]
    assert attempts >= 2 and formed and unparked
    assert evidence == 1

"""Delivery with real parts: a Celery worker (with beat), a private Redis, the web server and the fake model,
all separate processes on loopback (formation.md §3). Nothing acknowledged is lost."""
import json
import time
import uuid

import httpx
import pytest
from django.db import connection

from tests.conftest import make_project
from tests.support.processes import CeleryWorker, RedisProcess, WebServer, service_env, wait_for

pytestmark = [pytest.mark.live, pytest.mark.worker]


def observe(url, token, content, subject="alice"):
    body = {"messages": [{"role": "user", "content": content}], "data_subject_id": subject,
            "idempotency_key": str(uuid.uuid4())}
    started = time.monotonic()
    response = httpx.post(url + "/v1/observations", content=json.dumps(body),
                          headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return response, time.monotonic() - started


def freshness(url, token):
    return httpx.get(url + "/v1/freshness", headers={"Authorization": f"Bearer {token}"}, timeout=10).json()


def fact_rows(committed, project):
    with committed(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.predicate, o.canonical_name, e.quote FROM fact f JOIN fact_evidence e USING (fact_id)"
            " JOIN entity o ON o.entity_id = f.object_entity_id WHERE f.scope = %s ORDER BY f.predicate", [project])
        return cursor.fetchall()


@pytest.fixture(scope="module")
def stack(test_database_name):
    redis = RedisProcess().start()
    env = service_env(test_database_name, redis.url, MEMOIR_FORMATION_INTERVAL=1, MEMOIR_FORMATION_BACKOFF=1,
                      MEMOIR_EXTRACTOR="rules")
    web = WebServer(env, workers=1, threads=4).start()
    worker = CeleryWorker(env, beat=True).start()
    yield {"redis": redis, "web": web, "worker": worker, "env": env}
    worker.stop()
    web.stop()
    redis.stop()


def test_observe_forms_through_the_worker(stack, committed):
    project, token, _ = make_project(committed)
    url = stack["web"].url
    response, _ = observe(url, token, "I live in Dublin and work at Acme.")
    assert response.status_code == 201
    wait_for(lambda: freshness(url, token)["formed"] == 0, 30, what="formation")
    assert fact_rows(committed, project) == [("lives_in", "Dublin", "I live in Dublin"),
                                             ("works_at", "Acme", "work at Acme")]


def test_turns_observed_while_redis_is_down_form_after_it_returns(stack, committed):
    project, token, _ = make_project(committed)
    url = stack["web"].url
    stack["redis"].stop()
    try:
        response, seconds = observe(url, token, "I speak Irish.")
        assert response.status_code == 201
        assert seconds < 5  # the failed kick never holds the answer up for long
        second, _ = observe(url, token, "I use Django.")
        assert second.status_code == 201
        time.sleep(2)
        assert freshness(url, token)["formed"] is None
    finally:
        stack["redis"].start()
    # Nobody re-sends anything: the beat sweep finds the backlog once the broker is back.
    wait_for(lambda: freshness(url, token)["formed"] == 1, 120, what="formation after redis returned")
    assert [p for p, *_ in fact_rows(committed, project)] == ["speaks", "uses"]

"""Offsets are dense per project under concurrency, and the backlog cap keeps nothing (formation.md §1)."""
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.db import connection

from core.errors import RateLimited
from memory import services
from tests.conftest import make_project

pytestmark = pytest.mark.live


def _observe(url, token, n, subject="s"):
    def one(i):
        body = {"messages": [{"role": "user", "content": f"turn {i}"}], "data_subject_id": subject,
                "idempotency_key": str(uuid.uuid4())}
        response = httpx.post(url + "/v1/observations", content=json.dumps(body),
                              headers={"Authorization": f"Bearer {token}"}, timeout=60)
        return response.status_code, response.json()

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(one, range(n)))


def test_64_concurrent_observes_get_offsets_0_to_63(live_server_url, committed):
    project, token, _ = make_project(committed)
    results = _observe(live_server_url, token, 64)
    assert [status for status, _ in results] == [201] * 64
    assert sorted(body["log_offset"] for _, body in results) == list(range(64))
    assert len({body["id"] for _, body in results}) == 64
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*), min(log_offset), max(log_offset) FROM observation WHERE scope = %s",
                       [project])
        assert cursor.fetchone() == (64, 0, 63)


def test_two_projects_never_share_a_counter(live_server_url, committed):
    (a, token_a, _), (b, token_b, _) = make_project(committed), make_project(committed)
    out = {}

    def run(name, token):
        out[name] = _observe(live_server_url, token, 24)

    threads = [threading.Thread(target=run, args=("a", token_a)), threading.Thread(target=run, args=("b", token_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in ("a", "b"):
        assert sorted(body["log_offset"] for _, body in out[name]) == list(range(24))
    assert {body["scope"] for _, body in out["a"]} == {a}
    assert {body["scope"] for _, body in out["b"]} == {b}


def test_full_project_backlog_refuses_and_keeps_nothing(committed):
    project, _, _ = make_project(committed)
    message = [{"role": "user", "content": "x", "group_ordinal": 0}]
    with committed():
        replay_key = str(uuid.uuid4())
        services.observe(project=project, messages=message, idempotency_key=replay_key)
        for _ in range(511):
            services.observe(project=project, messages=message)
        with pytest.raises(RateLimited):
            services.observe(project=project, messages=message, idempotency_key=str(uuid.uuid4()))
        # A replay needs no capacity, so it still answers with the original receipt.
        assert services.observe(project=project, messages=message, idempotency_key=replay_key).log_offset == 0
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*), max(log_offset) FROM observation WHERE scope = %s", [project])
            assert cursor.fetchone() == (512, 511)
            cursor.execute("SELECT log_offset FROM watermark WHERE scope = %s", [project])
            assert cursor.fetchone()[0] == 511  # the refused turn used no offset
            cursor.execute("SELECT count(*) FROM observation_retry WHERE scope = %s", [project])
            assert cursor.fetchone()[0] == 1
            cursor.execute("SELECT pending FROM ingestion_project_usage WHERE scope = %s", [project])
            assert cursor.fetchone()[0] == 512
            # Drain the project's reservations so later tests on this database have capacity.
            cursor.execute("UPDATE observation SET formed_at = now() WHERE scope = %s", [project])
            cursor.execute("SELECT count(*) FROM ingestion_project_usage WHERE scope = %s", [project])
            assert cursor.fetchone()[0] == 0

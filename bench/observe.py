"""Observe throughput and latency over HTTP at concurrency 1 and 8, beside the same append transaction
issued directly with psycopg (the raw floor), and the ratio. Run: `make bench` or `.venv/bin/python bench/observe.py`.
BENCH_OBSERVE_FOLLOWER=1 also runs a Celery worker on the default queue (the lexical follower, kicked by every
observe; no embedder, no formation) on the same 2 cores, to show what indexing behind the requests costs them."""
import hashlib
import json
import logging
import os
import sys
import time
import uuid

import httpx
import psycopg
from _common import ensure_bench_database, fmt, setup_django, timed_pool

from tests.support.processes import CeleryWorker, WebServer

logging.getLogger("httpx").setLevel(logging.WARNING)
REQUESTS = int(os.environ.get("BENCH_OBSERVE_REQUESTS", "2000"))
CONTENT = "I live in Dublin and I work at Acme. We are planning a trip to Lisbon next spring."


def make_project():
    from governance import services

    name = "bench_" + uuid.uuid4().hex[:10]
    services.create_project(name=name, principal="cli")
    _, token = services.issue_credential(project=name, name="bench", principal="cli")
    return name, token


def start_server(db_url):
    env = dict(os.environ, DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="config.settings.local",
               MEMOIR_ADMISSION_PER_CREDENTIAL="0", MEMOIR_ADMISSION_PER_PROJECT="0")
    return WebServer(env, workers=3, threads=4).start()


def http_run(url, token, concurrency, n):
    def call(client, i):
        body = json.dumps({"idempotency_key": str(uuid.uuid4()), "data_subject_id": f"s{i % 50}",
                           "messages": [{"role": "user", "content": CONTENT}]})
        started = time.perf_counter()
        response = client.post(url + "/v1/observations", content=body)
        elapsed = time.perf_counter() - started
        assert response.status_code == 201, response.text
        return elapsed, None

    rate, stats, _ = timed_pool(
        range(n), concurrency, call=call,
        open_resource=lambda: httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30))
    return rate, stats


def raw_run(db_url, project, concurrency, n):
    """The same append transaction with psycopg and no framework: the floor HTTP is compared with."""

    def call(conn, i):
        key = hashlib.sha256(uuid.uuid4().bytes).digest()
        fingerprint = hashlib.sha256(CONTENT.encode()).digest()
        oid = str(uuid.uuid4())
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('memoir:observe-retry:' || %s || ':'"
                         " || encode(%s::bytea, 'hex'), 0))", [project, key])
            conn.execute("SELECT observation_id FROM observation_retry WHERE scope = %s AND key_digest = %s"
                         " FOR UPDATE", [project, key]).fetchone()
            offset = conn.execute(
                "INSERT INTO watermark AS w (scope, log_offset, watermark_at, updated_at) VALUES (%s, 0, now(), now())"
                " ON CONFLICT (scope) DO UPDATE SET log_offset = w.log_offset + 1,"
                " watermark_at = greatest(w.watermark_at, EXCLUDED.watermark_at), updated_at = now()"
                " RETURNING log_offset", [project]).fetchone()[0]
            conn.execute("INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
                         " data_subject_id, formation_attempts) VALUES (%s, %s, %s, 'turn', now(), 'user', %s, 0)",
                         [oid, project, offset, f"s{i % 50}"])
            conn.execute("INSERT INTO turn_message (observation_id, ordinal, role, content, group_ordinal,"
                         " occurred_at, chunk_id) VALUES (%s, 0, 'user', %s, 0, now(), gen_random_uuid())",
                         [oid, CONTENT])
            conn.execute("INSERT INTO observation_retry (scope, key_digest, request_digest, observation_id)"
                         " VALUES (%s, %s, %s, %s)", [project, key, fingerprint, oid])
        return time.perf_counter() - started, None

    rate, stats, _ = timed_pool(range(n), concurrency, call=call, open_resource=lambda: psycopg.connect(db_url))
    return rate, stats


def start_follower(db_url):
    """A worker consuming only the default queue, where observe's passage kicks go."""
    env = dict(os.environ, DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="config.settings.local", MEMOIR_EMBEDDER="none")
    worker = CeleryWorker(env, queues="default")
    worker.start()
    print(f"lexical follower worker running (log {worker.log.name})")
    return worker


def main():
    db_url = ensure_bench_database()
    setup_django()
    server = start_server(db_url)
    url = server.url
    follower = start_follower(db_url) if os.environ.get("BENCH_OBSERVE_FOLLOWER") else None
    try:
        print(f"observe benchmark: {REQUESTS} turns per run, one project per run, {os.cpu_count()} cores")
        results, http_projects = {}, []
        for concurrency in (1, 8):
            http_project, token = make_project()
            http_projects.append(http_project)
            http_rate, http_stats = http_run(url, token, concurrency, REQUESTS)
            raw_project, _ = make_project()
            raw_rate, raw_stats = raw_run(db_url, raw_project, concurrency, REQUESTS)
            results[concurrency] = (http_rate, raw_rate)
            print(f"c={concurrency} HTTP  {http_rate:8.1f} turns/s  {fmt(http_stats)}")
            print(f"c={concurrency} raw   {raw_rate:8.1f} turns/s  {fmt(raw_stats)}")
            print(f"c={concurrency} ratio HTTP/raw = {http_rate / raw_rate:.2f}")
        ok = results[8][0] >= results[8][1] / 3
        print(f"target (HTTP >= 1/3 of raw at c=8): {'met' if ok else 'NOT met'}")
        if follower is not None:
            from memory import lexical_index

            time.sleep(3)
            behind = set(lexical_index.projects_behind()) & set(http_projects)
            print(f"HTTP projects the follower had not caught up with 3 s after the end: {len(behind)}")
    finally:
        server.stop()
        if follower is not None:
            follower.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

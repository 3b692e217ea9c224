"""Mixed load: observe / recall / freshness from 16 concurrent clients over several projects and subjects, against
gunicorn, with a Celery worker forming (rules extractor); throughput, p50/p99 per route, errors by code, then
proof that every acknowledged turn is stored and formed. Stops by itself (BENCH_LOAD_SECONDS, default 60).
Run: `.venv/bin/python bench/load.py` (or `make bench`). Uses its own database, recreated on each run."""
import logging
import os
import sys
import uuid

os.environ.setdefault("MEMOIR_BENCH_DB", "memoir_bench_load")  # before _common reads it

from _common import bench_url, ensure_bench_database, setup_django  # noqa: E402

logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would bury the figures

SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "60"))
CLIENTS = int(os.environ.get("BENCH_LOAD_CLIENTS", "16"))
PROJECTS = 4
SUBJECTS = 8


def main():
    ensure_bench_database(fresh=True)  # no earlier benchmark's unformed backlog for the worker to chew on
    setup_django()
    from governance import services
    from tests.support.load import report, run_load, unformed_acknowledged, wait_until_formed
    from tests.support.processes import CeleryWorker, RedisProcess, WebServer

    projects = []
    for _ in range(PROJECTS):
        name = "load_" + uuid.uuid4().hex[:10]
        services.create_project(name=name, principal="cli")
        projects.append((name, services.issue_credential(project=name, name="load", principal="cli")[1]))
    redis = RedisProcess().start()  # private, so no other worker on this machine takes our drains
    env = dict(os.environ, DATABASE_URL=bench_url(), REDIS_URL=redis.url, DJANGO_SETTINGS_MODULE="config.settings.local",
               MEMOIR_EXTRACTOR="rules", MEMOIR_FORMATION_INTERVAL="1", PYTHONUNBUFFERED="1")
    web = WebServer(env).start()
    worker = CeleryWorker(env, concurrency=2, beat=True).start()
    try:
        print(f"load benchmark: {CLIENTS} clients, {PROJECTS} projects x {SUBJECTS} subjects, {SECONDS:.0f}s,"
              f" gunicorn {web.workers}x{web.threads} threads, one worker (2 processes, rules/v1),"
              f" {os.cpu_count()} cores", flush=True)
        result = run_load(web.url, projects, clients=CLIENTS, seconds=SECONDS, subjects=SUBJECTS)
        formed_seconds, freshness = wait_until_formed(web.url, projects, timeout=max(300.0, SECONDS * 3))
    finally:
        worker.stop()
        web.stop()
        redis.stop()
    print(report(result, formed_seconds=formed_seconds))
    problems = unformed_acknowledged(bench_url(), result)
    print("every acknowledged turn stored and formed: " + ("yes" if not problems else f"NO {problems}"))
    server_errors = result.server_errors()
    print("5xx / transport errors: " + (str(server_errors) if server_errors else "none"))
    return 1 if problems or server_errors else 0


if __name__ == "__main__":
    sys.exit(main())

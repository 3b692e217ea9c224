"""A short run of the mixed load (the same code as bench/load.py): 16 clients over several projects and subjects
against gunicorn, a Celery worker forming with the rules extractor; no 5xx, and every acknowledged turn formed."""
import psycopg
import pytest

from tests.support.load import report, run_load, unformed_acknowledged, wait_until_formed
from tests.support.processes import CeleryWorker, WebServer

from .conftest import private_env

pytestmark = [pytest.mark.live, pytest.mark.worker]

SECONDS = 20


def test_short_mixed_load_has_no_server_errors_and_forms_every_acknowledged_turn(private_db, redis):
    db_url, projects = private_db
    env = private_env(db_url, redis.url, MEMOIR_EXTRACTOR="rules", MEMOIR_FORMATION_INTERVAL=1)
    web = WebServer(env).start()
    worker = CeleryWorker(env, concurrency=2, beat=True).start()
    try:
        result = run_load(web.url, projects, clients=16, seconds=SECONDS, subjects=6)
        formed_seconds, freshness = wait_until_formed(web.url, projects, timeout=120)
    finally:
        worker.stop()
        web.stop()
    print(report(result, formed_seconds=formed_seconds))
    assert result.server_errors() == {}
    # A full backlog answers 429 rate_limited with Retry-After (the spec's backpressure); anything else is an error.
    assert result.errors() == {}
    assert result.backpressure_without_retry_after == 0
    assert all(len(result.acked[p]) > 0 for p, _ in projects)
    for project, _ in projects:
        assert freshness[project]["stored"] == len(result.acked[project]) - 1
    assert unformed_acknowledged(db_url, result) == {}


def test_load_against_a_full_backlog_gets_backpressure_and_loses_nothing(private_db, redis):
    """With a tiny per-project backlog the same load meets 429 rate_limited + Retry-After; what was refused kept
    nothing (stored offsets stay dense over the acknowledged turns) and every acknowledged turn still forms."""
    db_url, projects = private_db
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("UPDATE ingestion_budget SET max_pending_per_project = 8")
    env = private_env(db_url, redis.url, MEMOIR_EXTRACTOR="rules", MEMOIR_FORMATION_INTERVAL=1)
    web = WebServer(env).start()
    worker = CeleryWorker(env, concurrency=1, beat=True).start()
    try:
        result = run_load(web.url, projects, clients=16, seconds=8, subjects=3)
        formed_seconds, freshness = wait_until_formed(web.url, projects, timeout=120)
    finally:
        worker.stop()
        web.stop()
    print(report(result, formed_seconds=formed_seconds))
    assert result.backpressure() > 0
    assert result.backpressure_without_retry_after == 0
    assert result.server_errors() == {}
    assert result.errors() == {}
    for project, _ in projects:
        assert freshness[project]["stored"] == len(result.acked[project]) - 1
    assert unformed_acknowledged(db_url, result) == {}

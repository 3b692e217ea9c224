"""A short run of the mixed load (the same code as bench/load.py): 16 clients over several projects and subjects
against gunicorn, a Celery worker forming with the rules extractor; no 5xx, and every acknowledged turn formed."""
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
        formed_seconds, freshness = wait_until_formed(web.url, projects, timeout=60)
    finally:
        worker.stop()
        web.stop()
    print(report(result, formed_seconds=formed_seconds))
    assert result.server_errors() == {}
    assert result.errors() == {}
    assert all(len(result.acked[p]) > 0 for p, _ in projects)
    for project, _ in projects:
        assert freshness[project]["stored"] == len(result.acked[project]) - 1
    assert unformed_acknowledged(db_url, result) == {}

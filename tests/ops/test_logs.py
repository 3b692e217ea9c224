"""Logs (issue 14): MEMOIR_LOG_FORMAT=json gives one JSON object per line with request id, op, status and
duration and never content; expected refusals (4xx, 501, 503) are not ERRORs; and `make run`'s stack is quiet
after start-up although beat keeps sending its periodic tasks."""
import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from config.logs import ExpectedRefusalFilter, JsonFormatter, build_logging
from tests.conftest import make_project
from tests.support.processes import ROOT, WebServer, free_port, service_env, wait_for

WORD = "Quixotically"


def test_expected_refusals_do_not_reach_django_request_at_error():
    refusal_filter = ExpectedRefusalFilter()

    def record(status):
        rec = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Service Unavailable: /v1/x", (), None)
        rec.status_code = status
        return rec

    assert not refusal_filter.filter(record(503)) and not refusal_filter.filter(record(501))
    assert not refusal_filter.filter(record(404))
    assert refusal_filter.filter(record(500)) and refusal_filter.filter(record(502))
    config = build_logging(fmt="json", level="INFO")
    assert config["loggers"]["django.request"]["filters"] == ["expected_refusals"]
    for quiet in ("celery.beat", "celery.app.trace", "celery.worker.strategy"):
        assert config["loggers"][quiet]["level"] == "WARNING"
    assert build_logging(level="DEBUG")["loggers"]["celery.beat"]["level"] == "DEBUG"
    with pytest.raises(ValueError):
        build_logging(fmt="xml")


def test_the_json_formatter_keeps_only_its_fields():
    rec = logging.LogRecord("memoir.request", logging.INFO, __file__, 1, "POST %s", (201,), None)
    rec.request_id, rec.op, rec.status, rec.duration_ms = "abc", "observe", 201, 1.5
    rec.request = object()  # an arbitrary extra (django.request passes the request) is never written
    rec.body = WORD
    line = json.loads(JsonFormatter().format(rec))
    assert line["message"] == "POST 201" and line["op"] == "observe" and line["status"] == 201
    assert set(line) == {"ts", "level", "logger", "message", "request_id", "op", "status", "duration_ms"}
    try:
        raise ValueError(f"bad value {WORD}")
    except ValueError:
        rec = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = json.loads(JsonFormatter().format(rec))
    assert line["exc_type"] == "ValueError" and WORD not in json.dumps(line)


@pytest.mark.live
def test_json_request_lines_from_a_live_server(committed, test_database_name, session_redis):
    project, token, _ = make_project(committed)
    server = WebServer(service_env(test_database_name, session_redis.url, MEMOIR_LOG_FORMAT="json")).start()
    try:
        headers = {"Authorization": f"Bearer {token}", "X-Request-ID": "req-" + uuid.uuid4().hex[:8]}
        body = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": "subject-" + WORD,
                "messages": [{"role": "user", "content": f"I live in {WORD}."}]}
        created = httpx.post(server.url + "/v1/observations", json=body, headers=headers, timeout=30)
        assert created.status_code == 201 and created.headers["X-Request-ID"] == headers["X-Request-ID"]
        refused = httpx.post(server.url + "/v1/recalls", json={"question": WORD, "bogus": 1}, headers=headers,
                             timeout=30)
        assert refused.status_code == 400
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200
    finally:
        server.stop()
    lines = [line for line in Path(server.log.name).read_text().splitlines() if line.startswith("{")]
    parsed = [json.loads(line) for line in lines]
    requests = [p for p in parsed if p["logger"] == "memoir.request"]
    observe = next(p for p in requests if p.get("op") == "observe")
    assert observe["status"] == 201 and observe["request_id"] == headers["X-Request-ID"]
    assert observe["duration_ms"] >= 0 and observe["route"] == "v1/observations"
    recall = next(p for p in requests if p.get("op") == "recall")
    assert recall["status"] == 400 and recall["level"] == "INFO"
    assert not [p for p in parsed if p["level"] == "ERROR"]
    assert WORD not in Path(server.log.name).read_text()


@pytest.mark.live
@pytest.mark.worker
def test_the_run_stack_is_quiet_after_start_up(committed, test_database_name, session_redis, tmp_path):
    """scripts/run_stack.py (what `make run` ends in), with beat sending every second: after start-up no line
    is printed while the heartbeat shows the periodic sweep kept running."""
    from formation.models import FormationHeartbeat

    port = free_port()
    env = service_env(test_database_name, session_redis.url, MEMOIR_FORMATION_INTERVAL="1",
                      MEMOIR_BIND=f"127.0.0.1:{port}", PROMETHEUS_MULTIPROC_DIR=str(tmp_path))
    output = tmp_path / "stack.log"
    with open(output, "wb") as sink:
        stack = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "run_stack.py")], cwd=ROOT, env=env,
                                 stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: b"ready." in output.read_bytes() and _healthy(port), 90, what="the stack")
        time.sleep(3)  # start-up lines (beat's first due tasks, gunicorn's boot) settle

        def passes():
            with committed():
                beat = FormationHeartbeat.objects.filter(id=1).first()
                return beat.passes if beat else 0

        start_lines, start_passes = len(output.read_bytes().splitlines()), passes()
        time.sleep(6)
        after = output.read_bytes().splitlines()
        assert passes() >= start_passes + 3  # the sweep ran every second or so
        # Only real work may speak: a drain that formed turns another test left waiting on this database, or the
        # one-time report of a rebuild job (another test's) whose target this worker cannot build.
        new = [line.decode(errors="replace") for line in after[start_lines:]]
        assert [line for line in new if "drain formed" not in line
                and "rebuild target cannot be built" not in line] == [], new
        everything = output.read_text(errors="replace")
        assert "Sending due task" not in everything and "succeeded in" not in everything
    finally:
        os.killpg(stack.pid, signal.SIGTERM)
        try:
            stack.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(stack.pid, signal.SIGKILL)
            stack.wait(10)


def _healthy(port):
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False

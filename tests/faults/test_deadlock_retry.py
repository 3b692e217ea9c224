"""A write that loses a deadlock is run again, not answered 500 (api.md §2: only the declared 5xx).

The deadlock is made on purpose, in the order an erasure makes it: the artifact put holds the project's
watermark and waits for the storage policy (its accounting trigger); another transaction holds the policy
and then asks for the watermark (an erasure deleting artifacts, then recomputing the watermark)."""
import base64
import threading
import time
import uuid

import psycopg
import pytest
from django.conf import settings

from tests.governance.support import form, say
from tests.support.processes import database_url

pytestmark = pytest.mark.live


def _url():
    return database_url(settings.DATABASES["default"]["NAME"])


def _deadlocks(conn):
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return conn.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").fetchone()[0]


def _wait_until_blocked_by(observer, holder, seconds=20):
    """Until some backend waits on a lock `holder` (a connection) holds: the other side of the cycle has
    started waiting first, however slow the machine (a fixed sleep was not enough on a loaded one)."""
    pid = holder.info.backend_pid
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if observer.execute("SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                            [pid]).fetchone()[0]:
            return
        time.sleep(0.05)
    raise AssertionError("nothing started waiting on the lock")


def _put(api, artifact_id):
    return api.post("/v1/artifacts/put", json={"id": artifact_id, "data_subject_id": "bystander", "kind": "state",
                                               "content": base64.b64encode(b"notes").decode()})


def test_an_artifact_put_that_loses_a_deadlock_is_run_again(api):
    assert _put(api, str(uuid.uuid4())).status_code == 200  # the project's watermark row now exists
    with psycopg.connect(_url(), autocommit=True) as observer, psycopg.connect(_url()) as rival:
        before = _deadlocks(observer)
        rival.execute("SELECT 1 FROM agent_storage_policy WHERE scope = %s FOR UPDATE", [api.project])
        answer = {}
        put = threading.Thread(target=lambda: answer.update(response=_put(api, str(uuid.uuid4()))))
        put.start()
        _wait_until_blocked_by(observer, rival)  # the put holds the watermark and waits on the policy
        time.sleep(0.1)  # ...and will have waited the longest, so it is the one that finds the cycle
        rival.execute("SELECT 1 FROM watermark WHERE scope = %s FOR UPDATE", [api.project])  # the cycle
        rival.commit()
        put.join(30)
        response = answer["response"]
        assert response.status_code == 200, response.text
        deadline = time.monotonic() + 10
        while _deadlocks(observer) == before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _deadlocks(observer) == before + 1  # there really was a deadlock, and the put was its victim
    listed = api.post("/v1/artifacts/list", json={"data_subject_id": "bystander"}).json()
    assert len(listed["artifacts"]) == 2


def test_feedback_queues_behind_an_erasure_instead_of_deadlocking_with_it(api, committed):
    """Feedback locks the record's sources before the record, as an erasure does, so the two queue."""
    with committed():
        observation_id = say(api.project, "carol", "I live in Sligo.")
        form(api.project)
    record = api.post("/v1/records/list", json={"data_subject_id": "carol"}).json()["records"][0]["id"]
    with psycopg.connect(_url(), autocommit=True) as observer, psycopg.connect(_url()) as eraser:
        before = _deadlocks(observer)
        # An erasure's first step: the selected observations, FOR UPDATE.
        eraser.execute("SELECT 1 FROM observation WHERE observation_id = %s FOR UPDATE", [observation_id])
        answer = {}
        feedback = threading.Thread(target=lambda: answer.update(response=api.post(
            "/v1/feedback/record", json={"record_id": record, "note": "moved last spring"})))
        feedback.start()
        _wait_until_blocked_by(observer, eraser)
        eraser.execute("SELECT 1 FROM fact WHERE fact_id = %s FOR UPDATE", [record])  # its next step
        time.sleep(1.5)  # past deadlock_timeout: a cycle would have been found by now
        eraser.rollback()
        feedback.join(30)
        assert answer["response"].status_code == 200, answer["response"].text
        time.sleep(1.2)
        assert _deadlocks(observer) == before

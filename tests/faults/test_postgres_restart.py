"""PostgreSQL restarted (fast, and immediate = a crash) while clients keep observing: every acknowledged turn
is stored whole, nothing is half-written or duplicated, refusals are JSON 5xx bodies, and service resumes.

Clients behave as real ones do: a turn that got no 201 is re-sent with the same idempotency key until it does,
so a turn committed just before its answer was lost must come back as a replay, never as a second turn."""
import json
import threading
import time
import uuid
from collections import Counter

import httpx
import psycopg
import pytest

from tests.support.processes import WebServer, wait_for

from .conftest import private_env

pytestmark = pytest.mark.live

CLIENTS = 8
CLIENT_TIMEOUT = 10  # seconds; a request never comes back later than this, or the test fails
MAX_TURNS_PER_CLIENT = 400
MAX_ATTEMPTS_PER_TURN = 100


class Client(threading.Thread):
    def __init__(self, url, project, token, number, stop):
        super().__init__(daemon=True)
        self.url, self.project, self.token, self.number, self.stop = url, project, token, number, stop
        self.acked = []  # (observation id, log_offset, messages sent, first-attempt time)
        self.answers = Counter()  # (status, error code) of every answer
        self.unacked = []  # turns that never got a 201
        self.last_201_at = 0.0
        self.errors = []

    def run(self):
        with httpx.Client(headers={"Authorization": f"Bearer {self.token}"}, timeout=CLIENT_TIMEOUT) as http:
            for n in range(MAX_TURNS_PER_CLIENT):
                if self.stop.is_set():
                    return
                self._one_turn(http, n)

    def _one_turn(self, http, n):
        key = str(uuid.uuid4())
        messages = [{"role": "user", "content": f"I live in Town{self.number}x{n}."},
                    {"role": "assistant", "content": "Noted."},
                    {"role": "user", "content": f"My reference is {key}."}]
        body = json.dumps({"idempotency_key": key, "data_subject_id": f"s{self.number}", "messages": messages})
        for _ in range(MAX_ATTEMPTS_PER_TURN):
            try:
                response = http.post(self.url + "/v1/observations", content=body)
            except httpx.TimeoutException:
                self.answers[("timeout", None)] += 1
                self.errors.append("a request outlived the client timeout")
                return
            except httpx.TransportError as exc:
                self.answers[("transport", type(exc).__name__)] += 1
                time.sleep(0.05)
                continue
            if response.status_code == 201:
                self.answers[(201, None)] += 1
                data = response.json()
                self.acked.append((data["id"], data["log_offset"], messages))
                self.last_201_at = time.monotonic()
                return
            try:
                code = response.json()["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = "not-json:" + response.text[:80]
            self.answers[(response.status_code, code)] += 1
            time.sleep(0.05)
        self.unacked.append(key)


def _rows(db_url, project):
    with psycopg.connect(db_url) as conn:
        observations = conn.execute(
            "SELECT observation_id::text, log_offset FROM observation WHERE scope = %s ORDER BY log_offset",
            [project]).fetchall()
        messages = {}
        for oid, ordinal, role, content in conn.execute(
                "SELECT m.observation_id::text, m.ordinal, m.role, m.content FROM turn_message m"
                " JOIN observation o USING (observation_id) WHERE o.scope = %s ORDER BY 1, 2", [project]):
            messages.setdefault(oid, []).append((ordinal, role, content))
        watermark = conn.execute("SELECT log_offset FROM watermark WHERE scope = %s", [project]).fetchone()
        keys = conn.execute("SELECT count(*), count(DISTINCT observation_id) FROM observation_retry"
                            " WHERE scope = %s", [project]).fetchone()
    return observations, messages, watermark[0] if watermark else None, keys


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_restart_under_load_loses_and_duplicates_nothing(private_pg, private_db, redis, mode):
    db_url, projects = private_db
    web = WebServer(private_env(db_url, redis.url), workers=2, threads=4).start()
    stop = threading.Event()
    clients = [Client(web.url, *projects[i % len(projects)], i, stop) for i in range(CLIENTS)]
    try:
        for client in clients:
            client.start()
        wait_for(lambda: sum(len(c.acked) for c in clients) >= 40, 20, what="load before the restart")
        acked_before = sum(len(c.acked) for c in clients)
        restarted_at = time.monotonic()
        private_pg.restart(mode)
        restart_seconds = time.monotonic() - restarted_at
        # Every client must get a 201 again after the restart: service resumes without any operator step.
        wait_for(lambda: all(c.last_201_at > restarted_at + restart_seconds for c in clients), 30,
                 what="every client served after the restart")
        time.sleep(1)
    finally:
        stop.set()
        for client in clients:
            client.join(CLIENT_TIMEOUT * 3)
        web.stop()

    assert not any(c.is_alive() for c in clients)
    answers = sum((c.answers for c in clients), Counter())
    print(f"restart {mode}: {restart_seconds:.2f}s, answers {dict(answers)}")
    assert [e for c in clients for e in c.errors] == []
    assert [k for c in clients for k in c.unacked] == []
    failures = {answer: n for answer, n in answers.items() if answer[0] != 201}
    # The restart really hit the load, and every refusal it caused was a documented JSON 5xx.
    assert failures, answers
    assert set(failures) <= {(500, "internal"), (503, "no_database_capacity")}, failures
    assert sum(len(c.acked) for c in clients) > acked_before

    for project, _ in projects:
        acked = [a for c in clients if c.project == project for a in c.acked]
        observations, messages, watermark, (keys, keyed_turns) = _rows(db_url, project)
        # Every acknowledged turn is stored, at the offset it was given, with exactly the messages sent.
        stored = dict(observations)
        for oid, offset, sent in acked:
            assert stored.get(oid) == offset, oid
            assert messages[oid] == [(i, m["role"], m["content"]) for i, m in enumerate(sent)], oid
        # Nothing else: one turn per key (lost answers came back as replays), no half-written turn, dense offsets.
        assert len({oid for oid, _, _ in acked}) == len(acked) == len(observations) == keys == keyed_turns
        assert all(len(messages.get(oid, [])) == 3 for oid, _ in observations)
        assert [offset for _, offset in observations] == list(range(len(observations)))
        assert watermark == len(observations) - 1
    with psycopg.connect(db_url) as conn:
        pending, unformed = conn.execute(
            "SELECT (SELECT pending FROM ingestion_budget), (SELECT count(*) FROM observation"
            " WHERE kind = 'turn' AND formed_at IS NULL)").fetchone()
    assert pending == unformed  # the backlog reservation survived the crash in step with the turns

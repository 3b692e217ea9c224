"""Redis down or hung: admission fails open (api.md §1.4), so requests still answer, and quickly; once Redis is
back, admission counts again. (Formation across a Redis outage is covered in tests/formation/test_worker.py.)"""
import json
import socket
import time
import uuid

import httpx
import pytest
import redis as redis_client
from django.db import connection

from tests.conftest import make_project
from tests.support.processes import RedisProcess, WebServer, service_env, wait_for

pytestmark = pytest.mark.live

QUICK = 2.0  # seconds: the bound on any answer while Redis is unavailable


def _calls(url, token):
    """One round of the routes an agent calls most, each with its status and duration."""
    auth = {"Authorization": f"Bearer {token}"}
    turn = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": "alice",
            "messages": [{"role": "user", "content": "I live in Sligo."}]}
    out = []
    for method, path, body, expected in [
        ("POST", "/v1/observations", turn, 201),
        ("GET", "/v1/freshness", None, 200),
        ("POST", "/v1/recalls", {"question": "Where do I live?", "data_subject_id": "alice"}, 200),
        ("POST", "/v1/observations", dict(turn, idempotency_key=str(uuid.uuid4())), 201),
    ]:
        started = time.monotonic()
        response = httpx.request(method, url + path, headers=auth, timeout=10,
                                 content=None if body is None else json.dumps(body))
        out.append((path, response.status_code, expected, time.monotonic() - started))
    return out


class HungRedis:
    """Accepts connections on Redis's port and never answers: the worst kind of outage."""

    def __init__(self, port):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(128)

    def close(self):
        self.sock.close()


def _stored(committed, project):
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM observation WHERE scope = %s", [project])
        return cursor.fetchone()[0]


@pytest.fixture
def stack(test_database_name, committed):
    project, token, credential_id = make_project(committed)
    server = RedisProcess().start()
    web = WebServer(service_env(test_database_name, server.url), workers=1, threads=4).start()
    try:
        yield {"project": project, "token": token, "slot": f"memoir:inflight:credential:{credential_id}",
               "redis": server, "url": web.url}
    finally:
        web.stop()
        server.stop()


def _rounds_answer_quickly(url, token, rounds=2):
    # The second round runs after admission's (1 s) and the kick's (5 s) skip windows have passed.
    for n in range(rounds):
        for path, status, expected, seconds in _calls(url, token):
            assert status == expected, path
            assert seconds < QUICK, (n, path, seconds)
        if n + 1 < rounds:
            time.sleep(5.2)


def test_admission_fails_open_quickly_while_redis_is_down(stack, committed):
    url, token, server = stack["url"], stack["token"], stack["redis"]
    assert all(status == expected for _, status, expected, _ in _calls(url, token))
    assert _admission_counts(url, token, server, stack["slot"])  # admission really counts in Redis

    server.stop()
    _rounds_answer_quickly(url, token)
    assert _stored(committed, stack["project"]) == 2 + 2 * 2

    server.start()  # an empty Redis: a slot key in it was written after it came back

    def counted_again():
        _calls(url, token)
        return _admission_counts(url, token, server, stack["slot"])

    wait_for(counted_again, 15, interval=0.5, what="admission counting again")


def _fill(server, slot, *, age_seconds, count=64):
    """Slots held by requests that started `age_seconds` ago (a live burst, or slots leaked by dead workers)."""
    started = time.time() - age_seconds
    redis_client.Redis(port=server.port).zadd(slot, {f"held-{n}": started for n in range(count)})


def _admission_counts(url, token, server, slot):
    """True when a full credential is refused with 429 + Retry-After and admitted again once the slots free."""
    _fill(server, slot, age_seconds=0)
    refused = httpx.get(url + "/v1/freshness", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    redis_client.Redis(port=server.port).delete(slot)
    again = httpx.get(url + "/v1/freshness", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    return (refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
            and refused.headers.get("Retry-After") == "1" and again.status_code == 200)


def test_a_full_credential_answers_429_and_a_finished_request_gives_its_slot_back(stack):
    url, token, server, slot = stack["url"], stack["token"], stack["redis"], stack["slot"]
    _fill(server, slot, age_seconds=0, count=63)  # one slot left
    for _ in range(3):  # sequential requests each take the last slot and give it back
        assert httpx.get(url + "/v1/freshness", headers={"Authorization": f"Bearer {token}"},
                         timeout=10).status_code == 200
    assert redis_client.Redis(port=server.port).zcard(slot) == 63
    assert _admission_counts(url, token, server, slot)


def test_slots_leaked_by_dead_requests_age_out_even_while_the_client_keeps_retrying(stack):
    """A killed web worker never releases its slot; retries within the window must not keep it alive."""
    url, token, server, slot = stack["url"], stack["token"], stack["redis"], stack["slot"]
    _fill(server, slot, age_seconds=57)  # leaked 57 s ago; every slot is in use (2 s of margin for a slow machine)
    auth = {"Authorization": f"Bearer {token}"}
    assert httpx.get(url + "/v1/freshness", headers=auth, timeout=10).status_code == 429
    time.sleep(1)
    assert httpx.get(url + "/v1/freshness", headers=auth, timeout=10).status_code == 429  # a retry, still full
    time.sleep(2.5)
    assert httpx.get(url + "/v1/freshness", headers=auth, timeout=10).status_code == 200  # aged out
    assert redis_client.Redis(port=server.port).zcard(slot) == 0


def test_requests_answer_quickly_while_redis_hangs(stack):
    stack["redis"].stop()
    hung = HungRedis(stack["redis"].port)
    try:
        _rounds_answer_quickly(stack["url"], stack["token"])
    finally:
        hung.close()

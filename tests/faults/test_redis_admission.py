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
    assert redis_client.Redis(port=server.port).exists(stack["slot"])  # admission really counts in Redis

    server.stop()
    _rounds_answer_quickly(url, token)
    assert _stored(committed, stack["project"]) == 2 + 2 * 2

    server.start()  # an empty Redis: a slot key in it was written after it came back

    def counted_again():
        _calls(url, token)
        return redis_client.Redis(port=server.port).exists(stack["slot"])

    wait_for(counted_again, 15, interval=0.5, what="admission counting again")


def test_requests_answer_quickly_while_redis_hangs(stack):
    stack["redis"].stop()
    hung = HungRedis(stack["redis"].port)
    try:
        _rounds_answer_quickly(stack["url"], stack["token"])
    finally:
        hung.close()

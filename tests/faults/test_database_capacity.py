"""PostgreSQL out of connections: every /v1 request answers 503 no_database_capacity with Retry-After: 1
(api.md §2) instead of hanging or failing with a 500, stores nothing, and service resumes once slots free up."""
import json
import time
import uuid

import httpx
import psycopg
import pytest

from tests.support.postgres import APP_ROLE
from tests.support.processes import WebServer

from .conftest import private_env

pytestmark = pytest.mark.live

CAPACITY = {"error": {"code": "no_database_capacity", "message": "the database has no free capacity"}}


def _requests(token):
    auth = {"Authorization": f"Bearer {token}"}
    turn = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": "alice",
            "messages": [{"role": "user", "content": "I live in Cork."}]}
    return [
        ("POST", "/v1/observations", auth, turn),
        ("GET", "/v1/freshness", auth, None),
        ("POST", "/v1/recalls", auth, {"question": "Where do I live?", "data_subject_id": "alice"}),
        ("POST", "/v1/records/list", auth, {}),
        ("POST", "/v1/no/such/route", auth, {}),
    ]


def _send(url, method, path, headers, body):
    started = time.monotonic()
    response = httpx.request(method, url + path, headers=headers, timeout=15,
                             content=None if body is None else json.dumps(body))
    return response, time.monotonic() - started


def _count(db_url, project):
    with psycopg.connect(db_url) as conn:
        return conn.execute("SELECT count(*) FROM observation WHERE scope = %s", [project]).fetchone()[0]


# The superuser fills every slot ("too many clients"); an ordinary role, as production runs, is refused
# earlier with "remaining connection slots are reserved" — the same SQLSTATE 53300, a different message.
@pytest.mark.parametrize("role", ["postgres", APP_ROLE])
def test_exhausted_connections_answer_503_with_retry_after_then_recover(private_pg, private_db, redis, role):
    db_url, projects = private_db
    project, token = projects[0]
    app_url = db_url.replace("postgres://postgres@", f"postgres://{role}@")
    # Without persistent connections every request must connect, so every request meets the refusal.
    web = WebServer(private_env(app_url, redis.url, MEMOIR_CONN_MAX_AGE=0), workers=1, threads=4).start()
    try:
        first = _send(web.url, *_requests(token)[0])[0]
        assert first.status_code == 201, first.text

        held = private_pg.hold_every_connection(user=role)
        try:
            for method, path, headers, body in _requests(token):
                response, seconds = _send(web.url, method, path, headers, body)
                assert response.status_code == 503, (path, response.status_code, response.text)
                assert response.json() == CAPACITY, path
                assert response.headers["Retry-After"] == "1", path
                assert response.headers["Content-Type"] == "application/json; charset=utf-8"
                assert seconds < 5, (path, seconds)
        finally:
            for conn in held:
                conn.close()

        assert _count(db_url, project) == 1  # the refused observe stored nothing
        for method, path, headers, body in _requests(token)[:4]:
            response = _send(web.url, method, path, headers, body)[0]
            assert response.status_code == (201 if method == "POST" and path == "/v1/observations" else 200), \
                (path, response.text)
        assert _count(db_url, project) == 2
    finally:
        web.stop()

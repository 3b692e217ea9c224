"""The followers with a real Celery worker and Redis: observe kicks them (no indexing or embedding on the request
path), the lexical follower writes passage sources behind it, a fresh project's first generation starts and
activates itself, and a new message is searchable by vector in seconds."""
import json
import time
import uuid

import httpx
import psycopg
import pytest

from tests.conftest import make_project
from tests.fakeembeddings import fake_embeddings
from tests.support.processes import CeleryWorker, RedisProcess, WebServer, database_url, service_env, wait_for

pytestmark = [pytest.mark.live, pytest.mark.worker]


def _end_other_projects_embedding(database_name):
    """Committed projects left by earlier tests share this database. A real worker with autostart would start and
    build a generation for each of them before reaching this module's project, so end their embedding as an
    operator would (a cancelled generation is never restarted on its own): this worker follows only what the
    tests below create."""
    with psycopg.connect(database_url(database_name), autocommit=True) as conn:
        conn.execute("UPDATE embedding_generation SET state = 'cancelled', ended_at = now()"
                     " WHERE state IN ('building', 'active')")
        conn.execute(
            "INSERT INTO embedding_generation (generation_id, scope, provider, model, revision, dimensions, metric,"
            " input_format, state, auto_activate, started_by, created_at, ended_at)"
            " SELECT gen_random_uuid(), p.name, 'endpoint', 'ended-by-test', '', 384, 'cosine', 'message-text/v1',"
            " 'cancelled', false, 'test', now(), now() FROM project p"
            " WHERE NOT EXISTS (SELECT 1 FROM embedding_generation g WHERE g.scope = p.name)")


@pytest.fixture(scope="module")
def stack(test_database_name):
    _end_other_projects_embedding(test_database_name)
    with fake_embeddings() as fake:
        redis = RedisProcess().start()
        env = service_env(test_database_name, redis.url, MEMOIR_EXTRACTOR="rules", MEMOIR_EMBEDDER="endpoint",
                          MEMOIR_EMBEDDING_ENDPOINT=fake.base_url, MEMOIR_EMBEDDING_MODEL="fake-bag",
                          MEMOIR_EMBEDDING_ALLOWLIST=fake.authority, MEMOIR_EMBEDDING_INTERVAL=2)
        web = WebServer(env, workers=1, threads=4).start()
        worker = CeleryWorker(env, beat=True).start()
        yield {"web": web, "fake": fake}
        worker.stop()
        web.stop()
        redis.stop()


def call(url, token, path, body):
    response = httpx.post(url + path, content=json.dumps(body), headers={"Authorization": f"Bearer {token}"},
                          timeout=30)
    return response


def test_new_messages_become_searchable_by_vector_within_seconds(stack, committed):
    project, token, _ = make_project(committed)
    url = stack["web"].url
    body = {"messages": [{"role": "user", "content": "Ferrets sleep most of the day."}],
            "idempotency_key": str(uuid.uuid4())}
    assert call(url, token, "/v1/observations", body).status_code == 201

    def semantic():
        answer = call(url, token, "/v1/passages/search", {"question": "ferrets sleep"}).json()
        return answer if answer["build_state"] == "complete" else None

    wait_for(semantic, 30, what="the first generation")
    first = semantic()
    assert first["generation_id"] and first["passages"][0]["preview"] == "Ferrets sleep most of the day."
    started = time.monotonic()
    body = {"messages": [{"role": "user", "content": "Otters hold hands while sleeping."}],
            "idempotency_key": str(uuid.uuid4())}
    assert call(url, token, "/v1/observations", body).status_code == 201

    def covered():
        answer = call(url, token, "/v1/passages/search", {"question": "otters hands"}).json()
        return answer["build_state"] == "complete" and answer["covered_through_offset"] == 1

    wait_for(covered, 20, what="the follower")
    assert time.monotonic() - started < 20
    answer = call(url, token, "/v1/passages/search", {"question": "otters hands"}).json()
    assert answer["generation_id"] == first["generation_id"]  # the same generation, kept current
    assert answer["passages"][0]["preview"] == "Otters hold hands while sleeping."


def test_the_worker_writes_passage_sources_behind_observe(stack, committed, test_database_name):
    project, token, _ = make_project(committed)
    url = stack["web"].url
    for n in range(3):
        body = {"messages": [{"role": "user", "content": f"Badger sighting number {n} by the canal."}],
                "idempotency_key": str(uuid.uuid4())}
        assert call(url, token, "/v1/observations", body).status_code == 201

    def indexed():
        with psycopg.connect(database_url(test_database_name), autocommit=True) as conn:
            sources = conn.execute("SELECT count(*) FROM passage_source WHERE scope = %s", [project]).fetchone()[0]
            cursor = conn.execute("SELECT indexed_through FROM passage_lexical_state WHERE scope = %s", [project])
            row = cursor.fetchone()
        return sources == 3 and row is not None and row[0] == 2

    wait_for(indexed, 20, what="the lexical follower")
    answer = call(url, token, "/v1/passages/search", {"question": "badger canal", "limit": 5}).json()
    assert sorted(p["preview"] for p in answer["passages"]) == [
        f"Badger sighting number {n} by the canal." for n in range(3)]

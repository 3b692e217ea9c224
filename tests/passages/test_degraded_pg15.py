"""The degraded path on the machine's PostgreSQL 15 without pgvector (127.0.0.1:5432, trust auth): migrations
apply, lexical passages answer 200, the semantic parts say they are unavailable, nothing answers 500."""
import json
import socket
import subprocess
import sys
import uuid

import psycopg
import pytest

from tests.support.processes import ROOT

HOST, PORT = "127.0.0.1", 5432

# Runs in a child process against the PG15 database: the real app, its real routes, in-process HTTP.
_SCRIPT = r"""
import json, django
django.setup()
from django.test import Client
from governance import services
services.create_project(name="degraded", principal="cli")
_, token = services.issue_credential(project="degraded", name="t", principal="cli")
client = Client(HTTP_AUTHORIZATION="Bearer " + token)
def post(path, body):
    r = client.post(path, data=json.dumps(body), content_type="application/json")
    return r.status_code, r.json()
out = {}
out["observe"] = post("/v1/observations", {"data_subject_id": "ann", "messages": [
    {"role": "user", "content": "My violin teacher lives in Galway."}]})[0]
out["search"] = post("/v1/passages/search", {"question": "Who teaches the violin?"})
out["recall"] = post("/v1/recalls", {"question": "Who teaches the violin?", "surfaces": ["facts", "passages"]})
out["candidates"] = post("/v1/entities/candidates", {"question": "Who teaches the violin?"})
from memory import lexical_index
out["indexed"] = lexical_index.follow("degraded")
out["search_indexed"] = post("/v1/passages/search", {"question": "Who teaches the violin?"})
from governance.erasure import erase
out["erase"] = [200, erase(project="degraded", data_subject_id="ann", principal="cli", principal_kind="operator")]
from memory import generations
from core.errors import Unavailable
try:
    generations.start(project="degraded", principal="cli", principal_kind="operator")
    out["start"] = "started"
except Unavailable as exc:
    out["start"] = exc.code
print(json.dumps(out))
"""


def _reachable():
    try:
        with socket.create_connection((HOST, PORT), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def pg15_database():
    if not _reachable():
        pytest.skip(f"no PostgreSQL on {HOST}:{PORT}: the PostgreSQL 15 degraded-path test needs the machine's server")
    name = f"memoir_degraded_{uuid.uuid4().hex[:10]}"
    admin = f"postgres://postgres@{HOST}:{PORT}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        version = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()[0]
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://postgres@{HOST}:{PORT}/{name}", version
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_postgresql_without_pgvector_answers_lexically(pg15_database):
    url, version = pg15_database
    with psycopg.connect(url) as conn:
        available = conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()[0]
    if available:
        pytest.skip("this server ships pgvector: it cannot show the degraded path")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.test", "DATABASE_URL": url, "MEMOIR_EMBEDDER": "auto",
           "PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    migrate = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    with psycopg.connect(url) as conn:
        tables = {row[0] for row in conn.execute(
            "SELECT to_regclass(t)::text FROM unnest(ARRAY['passage_source', 'passage_vector', 'entity_vector']) t")}
    assert tables == {"passage_source", None}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["observe"] == 201
    status, search = out["search"]
    assert status == 200 and search["build_state"] == "lexical_only" and search["generation_id"] == ""
    assert [p["preview"] for p in search["passages"]] == ["My violin teacher lives in Galway."]
    assert out["indexed"] == 1 and out["search_indexed"] == out["search"]  # the follower's source reads the same
    status, bundle = out["recall"]
    assert status == 200 and bundle["degraded"] == ["semantic_anchors", "passages"]
    assert [p["quote"] for p in bundle["passages"]] == ["My violin teacher lives in Galway."]
    status, refused = out["candidates"]
    assert status == 503 and refused["error"]["code"] == "entity_candidates_unavailable"
    status, receipt = out["erase"]
    assert status == 200 and receipt["clean"] is True
    assert receipt["deleted"]["passage_source"] == 1 and receipt["deleted"]["passage_vector"] == 0
    assert receipt["deleted"]["entity_vector"] == receipt["residual"]["entity_vector"] == 0
    assert out["start"] == "passage_unavailable"

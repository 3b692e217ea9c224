"""A PostgreSQL with the server's default log settings (this machine's PostgreSQL 15 on 127.0.0.1:5432, when
reachable) keeps none of a subject's words or id after the conflicting-value scenario, a refused artifact put and
an erasure: parameters are bound on the server, and no refusal is left to a constraint. The system check warns
about that server until its settings are fixed. Skipped when that server or its log file is not there."""
import base64
import glob
import os
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
HOST, PORT, SUPERUSER = "127.0.0.1", 5432, "postgres"


def _admin(dbname="postgres"):
    return psycopg.connect(host=HOST, port=PORT, user=SUPERUSER, dbname=dbname, autocommit=True, connect_timeout=3)


def _server_log(probe):
    """The log file the server writes, found by a warning it is asked to log."""
    candidates = [Path(p) for p in glob.glob("/var/log/postgresql/*.log") if os.access(p, os.R_OK)]
    if not candidates:
        return None
    with _admin() as conn:
        conn.execute(f"DO $$ BEGIN RAISE WARNING '{probe}'; END $$")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for path in candidates:
            if probe in path.read_text("utf-8", "replace"):
                return path
        time.sleep(0.1)
    return None


@pytest.fixture
def default_log_server():
    try:
        with _admin() as conn:
            settings_now = dict(conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN ('log_min_error_statement',"
                " 'log_error_verbosity')").fetchall())
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    if settings_now != {"log_min_error_statement": "error", "log_error_verbosity": "default"}:
        pytest.skip("the PostgreSQL on 5432 does not have the default log settings")
    log = _server_log(f"memoir-log-probe-{uuid.uuid4().hex}")
    if log is None:
        pytest.skip("the PostgreSQL on 5432 writes no log file this test can read")
    name = f"memoir_logtest_{uuid.uuid4().hex[:12]}"
    with _admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "MIGRATION_DATABASE_URL": "",
               "DATABASE_URL": f"postgres://{SUPERUSER}@{HOST}:{PORT}/{name}"}
        migrated = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=300)
        if migrated.returncode != 0 and 'extension "vector" is not available' in migrated.stderr:
            pytest.skip("the PostgreSQL on 5432 has no pgvector")
        assert migrated.returncode == 0, migrated.stderr[-2000:]
        yield name, log
    finally:
        with _admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def connected_to(name, django_db_blocker):
    """Django's default connection, with the settings' OPTIONS (server-side binding included), on `name`."""
    saved = {key: connection.settings_dict[key] for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT")}
    assert connection.settings_dict["OPTIONS"]["server_side_binding"] is True
    with django_db_blocker.unblock():
        connection.close()
        connection.settings_dict.update(NAME=name, USER=SUPERUSER, PASSWORD="", HOST=HOST, PORT=PORT)
        try:
            yield
        finally:
            connection.close()
            connection.settings_dict.update(saved)


def _logged_since(log, start, probe):
    """What the server logged after `start`, once the probe (logged last) has arrived."""
    with _admin() as conn:
        conn.execute(f"DO $$ BEGIN RAISE WARNING '{probe}'; END $$")
    deadline = time.monotonic() + 10
    while True:
        with log.open("rb") as handle:
            handle.seek(start)
            written = handle.read().decode("utf-8", "replace")
        if probe in written or time.monotonic() > deadline:
            return written
        time.sleep(0.1)


def test_refusals_and_an_erasure_leave_no_words_or_ids_in_a_default_server_log(default_log_server,
                                                                                django_db_blocker):
    from django.contrib.auth.models import User
    from django.test import Client

    from governance import artifacts, checks, dblog, services
    from governance.erasure import erase
    from memory.models import RejectedClaim
    from tests.governance.support import form, say

    name, log = default_log_server
    token = uuid.uuid4().hex[:10]
    subject, old_city, new_city = f"subj-{token}", f"Galwayx{token}", f"Corkx{token}"
    artifact_bytes = f"artifact words {token}".encode()
    secrets = [subject, old_city, new_city, artifact_bytes.hex(), base64.b64encode(artifact_bytes).decode(), token]
    with connected_to(name, django_db_blocker):
        warned = checks.database_log_keeps_no_content()
        assert [w.id for w in warned] == ["memoir.W001"]
        assert "log_min_error_statement = error" in warned[0].msg and "panic" in warned[0].msg
        start = log.stat().st_size
        project = f"p_{token}"
        services.create_project(name=project, principal="cli")
        say(project, subject, f"I live in {old_city.title()}.", minutes_ago=5)
        form(project)
        say(project, subject, f"I live in {new_city.title()}.", minutes_ago=10)  # older, another value
        form(project)
        assert RejectedClaim.objects.filter(project=project, reason="conflicting_value").count() == 1
        artifact_id = str(uuid.uuid4())
        content = base64.b64encode(artifact_bytes).decode()
        artifacts.put_artifact(project=project, artifact_id=artifact_id, data_subject_id=subject, kind="state",
                               content=content, principal="cli")
        with pytest.raises(Exception) as refused:
            artifacts.put_artifact(project=project, artifact_id=artifact_id, data_subject_id=f"{subject}-other",
                                   kind="file", content=content, principal="cli")
        assert getattr(refused.value, "code", None) == "artifact_conflict"
        receipt = erase(project=project, data_subject_id=subject, principal="cli", principal_kind="operator")
        assert receipt["clean"] is True
        # The control: with its values spliced into the text (client-side binding), a failing statement's words
        # do reach this server's log, so their absence above is the code's doing, not the server's.
        control = f"control-{uuid.uuid4().hex}"
        with pytest.raises(psycopg.Error), psycopg.ClientCursor(connection.connection) as cursor:
            cursor.execute("SELECT 1 / 0 FROM (SELECT %s::text AS words) AS turn", [control])
        connection.connection.rollback()
        written = _logged_since(log, start, f"memoir-log-probe-{uuid.uuid4().hex}")
        assert "memoir-log-probe" in written and control in written  # the right file, read to its end
        for secret in secrets:
            assert secret not in written and secret.lower() not in written.lower(), secret
        # /ready and every console page say the same in one line.
        dblog._cache.update(at=-dblog._CACHE_SECONDS, value=None)
        ready = Client().get("/ready").json()
        assert ready["status"] == "ready" and "log_min_error_statement = panic" in ready["warnings"][0]
        console = Client()
        console.force_login(User.objects.create_superuser(f"root_{token}", password="pw-root-0001"))
        assert 'id="database-log-warning"' in console.get("/console/").content.decode()
        # Fixed for this database (per-database settings are read like server-wide ones), the warnings go.
        with _admin() as conn:
            conn.execute(f'ALTER DATABASE "{name}" SET log_min_error_statement = panic')
            conn.execute(f'ALTER DATABASE "{name}" SET log_error_verbosity = terse')
        connection.close()
        assert checks.database_log_keeps_no_content() == []
        dblog._cache.update(at=-dblog._CACHE_SECONDS, value=None)
        assert Client().get("/ready").json() == {"status": "ready"}
        assert 'id="database-log-warning"' not in console.get("/console/").content.decode()
    assert settings.DATABASES["default"]["PORT"] != PORT

"""The embedded PostgreSQL's own log holds no content (governance.md §1.3, §4.2): the statement text of a
failing query and the DETAIL of a key violation would keep words and subject ids where erasure cannot reach.
Run against the cluster scripts/services.sh starts; skipped when DATABASE_URL names another server."""
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection, transaction
from psycopg import ClientCursor

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "var" / "log" / "postgres.log"


def _embedded():
    """Is the test database on the cluster under var/pg/data? (The runtime role may not read data_directory.)"""
    pid_file = ROOT / "var" / "pg" / "data" / "postmaster.pid"
    if not LOG.exists() or not pid_file.exists():
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT inet_server_port()")
        port = cursor.fetchone()[0]
    lines = pid_file.read_text().splitlines()
    return len(lines) > 3 and lines[3].strip() == str(port)


def _fail(sql, params):
    """Send `sql` with its values inlined into the statement text, as client-side binding does."""
    raw = connection.connection
    try:
        with transaction.atomic(), ClientCursor(raw) as cursor:
            cursor.execute(sql, params)
    except Exception as exc:  # the refusal is the point
        return exc
    raise AssertionError("the statement was expected to fail")


def test_failing_statements_leave_no_content_in_the_server_log(new_project):
    if not _embedded():
        pytest.skip("DATABASE_URL names a server whose logging its operator configures")
    project, _ = new_project
    marker = f"marker_{uuid.uuid4().hex}"
    start = LOG.stat().st_size
    _fail("SELECT 1 / 0 FROM (SELECT %s::text AS words) AS turn", [marker])
    _fail("INSERT INTO project (name, label, retention_days, suspended_at, created_at)"
          " SELECT name, %s, NULL, NULL, now() FROM project WHERE name = %s", [marker, project])
    _fail("INSERT INTO project (name, label, created_at) VALUES (%s, 'x', now()), (%s, 'x', now())",
          [marker, marker])  # a DETAIL line would quote the key: (name)=(marker_…)
    deadline = time.monotonic() + 5
    while True:
        written = LOG.read_bytes()[start:].decode("utf-8", "replace")
        if written.count("duplicate key") >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert "division by zero" in written  # the errors are logged: this is the right file
    assert written.count("duplicate key") >= 2
    assert marker not in written

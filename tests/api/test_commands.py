"""Operator commands: each writes its ledger row as an operator, and a token is printed exactly once."""
import hashlib
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from governance.models import Credential, Project
from tests.conftest import unique_name

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def ledger(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, principal, principal_kind, outcome FROM audit_entry WHERE project = %s"
                       " ORDER BY entry_id", [project])
        return cursor.fetchall()


def test_project_lifecycle_commands_write_operator_rows():
    name = unique_name()
    run("memoir_project", "create", name, "--label", "Demo", "--retention-days", "30")
    listing, _ = run("memoir_project", "list")
    assert name in listing and "30 days" in listing
    run("memoir_project", "suspend", name)
    assert Project.objects.get(name=name).suspended_at is not None
    run("memoir_project", "resume", name)
    assert Project.objects.get(name=name).suspended_at is None
    run("memoir_project", "retention", name, "indefinite")
    assert Project.objects.get(name=name).retention_days is None
    assert [row[0] for row in ledger(name)] == ["project.create", "project.suspend", "project.resume",
                                                "project.retention"]
    assert {row[1:] for row in ledger(name)} == {("cli", "operator", "allowed")}
    with connection.cursor() as cursor:
        cursor.execute("SELECT principal_kind FROM audit_entry WHERE operation = 'project.list'"
                       " ORDER BY entry_id DESC LIMIT 1")
        assert cursor.fetchone() == ("operator",)


@pytest.mark.parametrize("args", [
    ("memoir_project", "create", "Bad-Name"),
    ("memoir_project", "create", "ok_name", "--retention-days", "0"),
    ("memoir_project", "retention", "nope_missing", "10"),
    ("memoir_credential", "issue", "x", "--project", "nope_missing"),
    ("memoir_credential", "revoke", "00000000-0000-4000-8000-000000000000"),
])
def test_bad_commands_fail_cleanly(args):
    with pytest.raises(CommandError):
        run(*args)


def test_credential_commands_print_the_token_once_and_store_only_its_digest():
    name = unique_name()
    run("memoir_project", "create", name)
    out, err = run("memoir_credential", "issue", "app", "--project", name, "--read-only")
    token = out.strip()
    assert token.startswith("mem_") and len(token) == 47
    assert "shown once" in err
    credential = Credential.objects.get(project_id=name)
    assert bytes(credential.token_digest) == hashlib.sha256(token.encode()).digest()
    assert credential.token_prefix == token[:12] and credential.access == "read_only"
    listing, _ = run("memoir_credential", "list", "--project", name)
    assert token[:12] in listing and token not in listing
    run("memoir_credential", "revoke", str(credential.credential_id))
    credential.refresh_from_db()
    assert credential.revoked_at is not None
    assert [row[0] for row in ledger(name)] == ["project.create", "credential.issue", "credential.list",
                                                "credential.revoke"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM audit_entry WHERE principal_kind <> 'operator' AND project = %s", [name])
        assert cursor.fetchone()[0] == 0


def test_revocation_cannot_be_undone_even_by_sql():
    from django.db import DatabaseError, transaction

    name = unique_name()
    run("memoir_project", "create", name)
    run("memoir_credential", "issue", "app", "--project", name)
    credential = Credential.objects.get(project_id=name)
    run("memoir_credential", "revoke", str(credential.credential_id))
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE credential SET revoked_at = NULL WHERE credential_id = %s", [credential.credential_id])
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE credential SET access = 'read_only' WHERE credential_id = %s",
                       [credential.credential_id])


def test_bootstrap_creates_once():
    project = unique_name()
    first, _ = run("memoir_bootstrap", "--project", project, "--admin", unique_name("admin"))
    assert "mem_" in first and "password" in first
    second, _ = run("memoir_bootstrap", "--project", project, "--admin", "admin_x")
    assert "already has a live credential" in second

"""The runtime role cannot forge or rewrite the ledger (issue 15): every attempt fails as that role, the owner meets
the tables' own triggers, and `verify` names rows outside the sealed ranges, gaps, and a head that is gone."""
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction

from core import audit
from governance import ledger
from governance.roles import APPEND_ONLY


def _refused(sql, params=()):
    with pytest.raises(DatabaseError) as info:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    return str(info.value)


def _one(sql, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def _write(n):
    for _ in range(n):
        audit.record(op="project.list", principal="cli", principal_kind="operator", project="", magnitude=1)


def _last_entry():
    return _one("SELECT max(entry_id) FROM audit_entry")[0]


@pytest.mark.django_db
def test_the_runtime_role_is_neither_superuser_nor_owner():
    user, superuser, owns = _one(
        "SELECT current_user::text, r.rolsuper, EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n"
        " ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relowner = r.oid)"
        " FROM pg_roles r WHERE r.rolname = current_user")
    assert user == "memoir_app" and superuser is False and owns is False
    assert _one("SELECT pg_get_userbyid(relowner)::text FROM pg_class WHERE relname = 'audit_entry'") == (
        "memoir_owner",)


@pytest.mark.django_db
@pytest.mark.parametrize("sql", [
    "UPDATE audit_entry SET magnitude = magnitude + 1",
    "DELETE FROM audit_entry",
    "TRUNCATE audit_entry",
    "UPDATE audit_seal SET digest = digest",
    "DELETE FROM audit_seal",
    "TRUNCATE audit_seal",
    "INSERT INTO audit_seal (from_entry, to_entry, entry_count, entries_digest, previous_digest, digest)"
    " VALUES (1, 1, 1, sha256(''), sha256(''), sha256(''))",
    "SET session_replication_role = replica",
    "SET LOCAL session_replication_role = replica",
    "ALTER TABLE audit_entry DISABLE TRIGGER USER",
    "ALTER TABLE audit_entry DISABLE TRIGGER ALL",
    "ALTER TABLE audit_seal DISABLE TRIGGER audit_seal_append_only",
    "CREATE OR REPLACE FUNCTION memoir_audit_entries_digest(lo bigint, hi bigint) RETURNS bytea"
    " LANGUAGE sql AS $$ SELECT sha256('') $$",
    "CREATE OR REPLACE FUNCTION memoir_audit_seal_now() RETURNS SETOF public.audit_seal LANGUAGE sql"
    " AS $$ SELECT * FROM public.audit_seal $$",
    "CREATE FUNCTION public.memoir_forged() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$",
    "ALTER FUNCTION memoir_audit_entries_digest(bigint, bigint) OWNER TO memoir_app",
    "DROP TRIGGER pgtrigger_audit_entry_append_only_e4f0f ON audit_entry",
    "UPDATE projection_kind SET projection_table = 'segment'",
    "INSERT INTO audit_entry (entry_id, operation, principal, principal_kind, project, magnitude, outcome)"
    " VALUES (0, 'erase', 'cli', 'operator', '', 1, 'allowed')",
    "INSERT INTO audit_entry (operation, principal, principal_kind, project, magnitude, outcome, occurred_at)"
    " VALUES ('erase', 'cli', 'operator', '', 1, 'allowed', '2020-01-01')",
    "INSERT INTO audit_entry (entry_id, operation, principal, principal_kind, project, magnitude, outcome,"
    " occurred_at) SELECT max(entry_id) + 1000, 'erase', 'cli', 'operator', '', 1, 'allowed', '2020-01-01'"
    " FROM audit_entry",
    "SELECT setval(pg_get_serial_sequence('audit_entry', 'entry_id'), 1000000)",
])
def test_every_forgery_fails_as_the_runtime_role(sql):
    _write(1)
    before = _one("SELECT count(*), max(entry_id) FROM audit_entry")
    message = _refused(sql)
    assert "permission denied" in message or "must be owner" in message, message
    assert _one("SELECT count(*), max(entry_id) FROM audit_entry") == before


@pytest.mark.django_db
def test_the_runtime_may_append_with_the_databases_own_id_and_time():
    _write(1)
    entry_id, matches_now = _one("SELECT entry_id, occurred_at = statement_timestamp() FROM audit_entry"
                                 " ORDER BY entry_id DESC LIMIT 1")
    assert entry_id == _last_entry()
    assert set(APPEND_ONLY["audit_entry"]) == {"operation", "principal", "principal_kind", "project", "magnitude",
                                               "outcome"}


def test_even_the_owner_cannot_name_an_entrys_id_or_time(owner_db):
    _write(1)
    for sql in ("INSERT INTO audit_entry (entry_id, operation, principal, principal_kind, project, magnitude,"
                " outcome) SELECT max(entry_id) + 1000, 'erase', 'cli', 'operator', '', 1, 'allowed' FROM audit_entry",
                "INSERT INTO audit_entry (operation, principal, principal_kind, project, magnitude, outcome,"
                " occurred_at) VALUES ('erase', 'cli', 'operator', '', 1, 'allowed', '2020-01-01')"):
        assert "assigns its own entry_id and occurred_at" in _refused(sql)
    assert "append-only" in _refused("TRUNCATE audit_entry")


def _forge(sql, params=()):
    """What only the owner can do, with the table's triggers off for the statement."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_entry DISABLE TRIGGER USER")
        cursor.execute("ALTER TABLE audit_seal DISABLE TRIGGER USER")
        cursor.execute(sql, params)
        cursor.execute("ALTER TABLE audit_entry ENABLE TRIGGER USER")
        cursor.execute("ALTER TABLE audit_seal ENABLE TRIGGER USER")


def _verify(**kwargs):
    return ledger.verify(principal="cli", principal_kind="operator", **kwargs)


def _seal():
    return ledger.seal(principal="cli", principal_kind="operator")


def test_verify_names_a_row_outside_every_sealed_range(owner_db):
    _write(2)
    _seal()
    assert _verify()["valid"] is True
    _forge("INSERT INTO audit_entry (entry_id, operation, principal, principal_kind, project, magnitude, outcome,"
           " occurred_at) VALUES (0, 'erase', 'cli', 'operator', '', 1, 'allowed', '2020-01-01')")
    result = _verify()
    assert result["valid"] is False
    assert result["outside"] == [0] and result["failure"] == "entry 0: outside every sealed range"


def test_verify_names_a_gap_by_id(owner_db):
    _write(3)
    middle = _last_entry() - 1
    _forge("DELETE FROM audit_entry WHERE entry_id = %s", [middle])
    assert [middle, middle] in _verify()["gaps"]
    # Sealed over, the same gap is a removed entry, which fails the chain.
    _seal()
    _forge("DELETE FROM audit_entry WHERE entry_id = %s", [middle + 1])
    result = _verify()
    assert result["valid"] is False and "entries removed or added" in result["failure"]
    assert [middle, middle + 1] in result["gaps"]


def test_expect_head_catches_a_deleted_last_seal(owner_db):
    _write(2)
    _seal()
    kept = ledger.head()
    _write(1)
    assert _verify(expect_head=kept["head"])["valid"] is True
    _forge("DELETE FROM audit_seal WHERE seal_id = %s", [kept["seal_id"]])
    # Without the kept digest the shortened chain looks whole; with it, the loss shows.
    assert _verify()["valid"] is True
    result = _verify(expect_head=kept["head"])
    assert result["valid"] is False and result["failure"] == "the expected head is no longer a seal of the chain"


def test_expect_head_catches_a_consistently_recomputed_seal(owner_db):
    _write(2)
    sealed = _seal()
    kept = ledger.head()
    _forge("UPDATE audit_entry SET magnitude = 99 WHERE entry_id = %s", [sealed["to_entry"]])
    _forge("DELETE FROM audit_seal WHERE seal_id = %s", [sealed["seal_id"]])
    recomputed = _seal()
    assert recomputed["from_entry"] == sealed["from_entry"] and recomputed["digest"] != kept["head"]
    assert _verify()["valid"] is True
    assert _verify(expect_head=kept["head"])["valid"] is False


def test_memoir_audit_head_and_verify_expect_head(owner_db):
    _write(1)
    call_command("memoir_audit", "seal", stdout=io.StringIO())
    out = io.StringIO()
    call_command("memoir_audit", "head", stdout=out)
    kept = json.loads(out.getvalue())
    assert len(kept["head"]) == 64 and kept["seal_id"] == ledger.head()["seal_id"]
    out = io.StringIO()
    call_command("memoir_audit", "verify", "--expect-head", kept["head"], stdout=out)
    assert json.loads(out.getvalue())["valid"] is True
    _forge("DELETE FROM audit_seal WHERE seal_id = %s", [kept["seal_id"]])
    with pytest.raises(CommandError) as info:
        call_command("memoir_audit", "verify", "--expect-head", kept["head"], stdout=io.StringIO())
    assert info.value.returncode == 1
    with pytest.raises(CommandError) as bad:
        call_command("memoir_audit", "verify", "--expect-head", "nothex", stdout=io.StringIO())
    assert bad.value.returncode == 2

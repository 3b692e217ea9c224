"""Ledger seals and verification (governance.md §4.3). Tampering is done as the table owner (`owner_db`) with the
triggers disabled, inside the test's transaction, so the shared ledger is restored by the rollback."""
import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from core import audit
from governance import ledger
from tests.governance.support import one, rows


def _run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def _seal():
    return ledger.seal(principal="cli", principal_kind="operator")


def _verify():
    return ledger.verify(principal="cli", principal_kind="operator")


def _write(n):
    for _ in range(n):
        audit.record(op="project.list", principal="cli", principal_kind="operator", project="", magnitude=1)


def _tamper(table, sql, params=()):
    """What only a role that may disable triggers can do; verification exists to catch it."""
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER ALL")
        cursor.execute(sql, params)
        cursor.execute(f"ALTER TABLE {table} ENABLE TRIGGER ALL")


@pytest.fixture
def sealed(owner_db):
    _write(3)
    seal = _seal()
    assert seal is not None
    return seal


def test_a_seal_chains_its_digests_and_verification_counts_what_came_after(sealed):
    previous = one("SELECT digest FROM audit_seal WHERE seal_id < %s ORDER BY seal_id DESC LIMIT 1",
                   [sealed["seal_id"]])
    assert sealed["previous_digest"] == (bytes(previous[0]).hex() if previous else "00" * 32)
    assert sealed["digest"] == hashlib.sha256(
        bytes.fromhex(sealed["previous_digest"]) + bytes.fromhex(sealed["entries_digest"])).hexdigest()
    assert sealed["entry_count"] == one("SELECT count(*) FROM audit_entry WHERE entry_id BETWEEN %s AND %s",
                                        [sealed["from_entry"], sealed["to_entry"]])[0]
    _write(3)
    seals, entries = one("SELECT count(*), sum(entry_count) FROM audit_seal")
    after = one("SELECT count(*) FROM audit_entry WHERE entry_id > %s", [sealed["to_entry"]])[0]
    result = _verify()
    # The audit.seal row and the three written since are unsealed, and a valid chain still shows them.
    assert after >= 4
    assert {k: v for k, v in result.items() if k != "gaps"} == {
        "valid": True, "seals": seals, "entries": entries, "unsealed": after, "head": sealed["digest"], "failure": "",
        "outside": []}
    assert rows("SELECT operation, magnitude FROM audit_entry WHERE entry_id > %s AND principal = 'cli'"
                " AND operation LIKE 'audit.%%' ORDER BY entry_id", [sealed["to_entry"]]) == [
        ("audit.seal", sealed["entry_count"]), ("audit.verify", seals)]


def test_the_next_seal_starts_where_the_last_ended(sealed):
    _write(2)
    following = _seal()
    assert following["from_entry"] == sealed["to_entry"] + 1
    assert following["previous_digest"] == sealed["digest"]
    assert _verify()["valid"] is True


def test_an_altered_entry_is_named(sealed):
    _tamper("audit_entry", "UPDATE audit_entry SET magnitude = magnitude + 1 WHERE entry_id = %s",
            [sealed["to_entry"]])
    result = _verify()
    assert result["valid"] is False and result["failure"] == f"seal {sealed['seal_id']}: altered entry"


def test_a_removed_entry_is_named(sealed):
    _tamper("audit_entry", "DELETE FROM audit_entry WHERE entry_id = %s", [sealed["to_entry"]])
    assert _verify()["failure"] == f"seal {sealed['seal_id']}: entries removed or added"


def test_a_relinked_seal_is_named(sealed):
    _tamper("audit_seal", "UPDATE audit_seal SET previous_digest = digest WHERE seal_id = %s", [sealed["seal_id"]])
    assert _verify()["failure"] == f"seal {sealed['seal_id']}: re-linked chain"


def test_a_rewritten_digest_is_named(sealed):
    _tamper("audit_seal", "UPDATE audit_seal SET digest = sha256(digest) WHERE seal_id = %s", [sealed["seal_id"]])
    result = _verify()
    assert result["failure"] == f"seal {sealed['seal_id']}: digest mismatch"
    assert result["head"] == hashlib.sha256(bytes.fromhex(sealed["digest"])).hexdigest()


def test_a_gap_between_seals_is_named(sealed):
    _write(3)
    start = sealed["to_entry"] + 3
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_seal (from_entry, to_entry, entry_count, entries_digest, previous_digest, digest)"
            " SELECT %s, %s, 1, memoir_audit_entries_digest(%s, %s), %s, %s RETURNING seal_id",
            [start, start, start, start, bytes.fromhex(sealed["digest"]), bytes(32)])
        forged = cursor.fetchone()[0]
    assert _verify()["failure"] == f"seal {forged}: gap before entry {start}"


def test_verification_stops_at_the_first_broken_seal(sealed):
    _write(2)
    second = _seal()
    _tamper("audit_entry", "UPDATE audit_entry SET principal = 'someone' WHERE entry_id = %s", [second["to_entry"]])
    _tamper("audit_entry", "UPDATE audit_entry SET principal = 'someone' WHERE entry_id = %s", [sealed["to_entry"]])
    assert _verify()["failure"] == f"seal {sealed['seal_id']}: altered entry"


def test_memoir_audit_verify_exits_1_when_the_chain_is_broken(owner_db):
    from core import audit

    audit.record(op="project.list", principal="cli", principal_kind="operator", project="", magnitude=0)
    sealed = json.loads(_run("memoir_audit", "seal"))
    assert json.loads(_run("memoir_audit", "verify"))["valid"] is True
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_entry DISABLE TRIGGER ALL")
        cursor.execute("UPDATE audit_entry SET magnitude = magnitude + 7 WHERE entry_id = %s", [sealed["to_entry"]])
        cursor.execute("ALTER TABLE audit_entry ENABLE TRIGGER ALL")
    out = io.StringIO()
    with pytest.raises(CommandError) as info:
        call_command("memoir_audit", "verify", stdout=out)
    assert info.value.returncode == 1
    assert json.loads(out.getvalue())["failure"] == f"seal {sealed['seal_id']}: altered entry"

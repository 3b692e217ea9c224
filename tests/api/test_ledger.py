"""The audit ledger and receipts are append-only from the application's own connection, and refused
requests still leave their refused row (data-model.md §6, governance.md §4)."""
import json
import re
import subprocess
from pathlib import Path

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client

from core import audit
from governance import services
from tests.conftest import unique_name

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent.parent

APPEND_ONLY = {
    "audit_entry": "entry_id",
    "audit_seal": "seal_id",
    "erasure_request": "request_id",
    "retention_sweep": "sweep_id",
}


def _refused(sql, params=()):
    with pytest.raises(DatabaseError) as info:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    return str(info.value)


@pytest.fixture
def sealed_rows(db):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    audit.record(op="project.list", principal="cli", principal_kind="operator", project=project, magnitude=1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM memoir_audit_seal_now()")
        cursor.execute("INSERT INTO erasure_request (request_id, scope, selector, reason, principal, principal_kind,"
                       " requested_at, completed_at, deleted, residual) VALUES (gen_random_uuid(), %s, '{}', '',"
                       " 'cli', 'operator', now(), now(), '{}', '{}')", [project])
        cursor.execute("INSERT INTO retention_sweep (sweep_id, scope, swept_at, observations, deleted)"
                       " VALUES (gen_random_uuid(), %s, now(), 0, '{}')", [project])
    return project


@pytest.mark.parametrize("table", sorted(APPEND_ONLY))
def test_update_is_refused(sealed_rows, table):
    column = APPEND_ONLY[table]
    assert _refused(f"UPDATE {table} SET {column} = {column}")


@pytest.mark.parametrize("table", sorted(APPEND_ONLY))
def test_delete_is_refused(sealed_rows, table):
    assert _refused(f"DELETE FROM {table}")


@pytest.mark.parametrize("table", sorted(APPEND_ONLY))
def test_truncate_is_refused(sealed_rows, table):
    # Fire the fixture's deferred FK checks first, so the TRUNCATE reaches the table's own trigger.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    message = _refused(f"TRUNCATE {table} CASCADE")
    # The runtime role holds no TRUNCATE privilege at all; the owner meets the tables' triggers
    # (tests/security/test_ledger_forgery.py).
    assert "permission denied" in message


def test_ledger_rows_survive_refused_tampering(sealed_rows):
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM audit_entry WHERE project = %s", [sealed_rows])
        before = cursor.fetchone()[0]
    _refused("DELETE FROM audit_entry WHERE project = %s", [sealed_rows])
    _refused("UPDATE audit_entry SET magnitude = 99 WHERE project = %s", [sealed_rows])
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), max(magnitude) FROM audit_entry WHERE project = %s", [sealed_rows])
        assert cursor.fetchone() == (before, 1)


def test_closed_sets_are_refused_by_database_and_model():
    from django.core.exceptions import ValidationError

    from governance.models import AuditEntry

    assert _refused("INSERT INTO audit_entry (operation, principal, principal_kind, project, magnitude, outcome)"
                    " VALUES ('observe.everything', 'cli', 'operator', '', 0, 'allowed')")
    assert _refused("INSERT INTO audit_entry (operation, principal, principal_kind, project, magnitude, outcome)"
                    " VALUES ('observe', 'cli', 'root', '', 0, 'allowed')")
    assert _refused("INSERT INTO audit_entry (operation, principal, principal_kind, project, magnitude, outcome)"
                    " VALUES ('observe', 'cli', 'operator', '', 0, 'maybe')")
    with pytest.raises(ValidationError):
        AuditEntry(operation="nope", principal="cli", principal_kind="operator", outcome="allowed").full_clean()
    with pytest.raises(audit.UnknownOperation):
        audit.record(op="nope", principal="cli", principal_kind="operator")


def test_vocabulary_is_seeded():
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE cardinality = 'one'), count(*) FILTER (WHERE event)"
                       " FROM predicate")
        assert cursor.fetchone() == (39, 11, 5)
        cursor.execute("SELECT count(*) FROM unresolvable_term")
        assert 30 <= cursor.fetchone()[0] == 43
        cursor.execute("SELECT count(*) FROM speaker_term")
        assert cursor.fetchone()[0] == 8
        cursor.execute("SELECT kind, survives_sharing FROM projection_kind ORDER BY kind")
        assert dict(cursor.fetchall()) == {
            "agent_artifact": False, "entity": True, "entity_vector": False, "fact": True, "fact_history": False, "feedback": False,
            "passage_source": False, "passage_speaker": False, "passage_vector": False,
            "rejected_claim": True, "segment": False}


def test_rejected_claim_reason_is_closed(new_project):
    assert _refused(
        "INSERT INTO rejected_claim (rejected_claim_id, scope, source_observation_id, source_ordinal, predicate,"
        " subject, object, statement, quote, reason, extractor_version, recorded_at)"
        " VALUES (gen_random_uuid(), %s, gen_random_uuid(), 0, 'x', '', '', '', '', 'felt_wrong', 'rules/v1', now())",
        [new_project[0]])


def _post(token, body, path="/v1/observations"):
    return Client().generic("POST", path, json.dumps(body).encode() if not isinstance(body, bytes) else body,
                            HTTP_AUTHORIZATION=f"Bearer {token}")


def _ledger(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, principal, principal_kind, outcome, magnitude FROM audit_entry"
                       " WHERE project = %s AND operation NOT IN ('project.create', 'credential.issue')"
                       " ORDER BY entry_id", [project])
        return cursor.fetchall()


def test_refused_requests_leave_their_refused_row(new_project):
    project, token = new_project
    credential, read_only = services.issue_credential(project=project, name="ro", access="read_only",
                                                      principal="cli")
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(magnitude), 0) FROM audit_entry WHERE operation = 'authenticate'")
        auth_before = cursor.fetchone()[0]
    assert _post("mem_" + "B" * 43, {"messages": []}).status_code == 401
    assert _post(read_only, {"messages": [{"role": "user", "content": "hi"}]}).status_code == 403
    assert _post(token, b"{").status_code == 400
    assert _post(token, {"messages": []}).status_code == 400
    rows = _ledger(project)
    assert rows == [
        ("observe", str(credential.credential_id), "credential", "refused", 0),
        ("observe", rows[1][1], "credential", "refused", 0),
        ("observe", rows[1][1], "credential", "refused", 0),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT principal, principal_kind, outcome, project, coalesce(sum(magnitude), 0)"
                       " FROM audit_entry WHERE operation = 'authenticate' GROUP BY 1, 2, 3, 4")
        principal, kind, outcome, scope, total = cursor.fetchone()
    assert (principal, kind, outcome, scope) == ("unresolved", "system", "refused", "")
    assert total >= auth_before + 1


def test_ledger_rows_hold_no_content(new_project):
    project, token = new_project
    secret = "my secret words 7f3a"
    _post(token, {"messages": [{"role": "user", "content": secret}], "data_subject_id": "subject-7f3a"})
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(a)::text FROM audit_entry a WHERE project = %s", [project])
        dumped = " ".join(row[0] for row in cursor.fetchall())
    assert "7f3a" not in dumped and token not in dumped and token[:12] not in dumped


def test_no_code_calls_pgtrigger_ignore():
    sources = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    sources += [str(p.relative_to(ROOT)) for p in ROOT.glob("**/*.py")
                if ".venv" not in p.parts and "var" not in p.parts]
    offenders = []
    for path in set(sources):
        text = (ROOT / path).read_text(encoding="utf-8", errors="replace")
        if re.search(r"pgtrigger\s*\.\s*ignore\s*\(", text) and path != "tests/api/test_ledger.py":
            offenders.append(path)
    assert offenders == []

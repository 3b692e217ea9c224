"""Helpers for the inspection-read tests: turns observed and formed for real (rules proposer), an
in-process /v1 caller, and small SQL helpers for rows a test needs in an exact state."""
import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from formation.driver import drain, mark_formed
from formation.rules import RulesProposer
from memory import services
from tests.support.db import one  # noqa: F401 - re-exported to the reads tests
from tests.support.db import rows as query

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def at(minutes):
    return T0 + timedelta(minutes=minutes)


def observe(project, messages, *, subject=None, occurred_at=None):
    """Append one turn; `messages` is a list of (role, content). Returns the receipt."""
    return services.observe(
        project=project,
        messages=[{"role": role, "content": content, "group_ordinal": i} for i, (role, content) in enumerate(messages)],
        data_subject_id=subject, occurred_at=occurred_at)


def form(project):
    return drain(project, proposer=RulesProposer())


def formed_turns(project, subject, count, *, start=0, text=None):
    """`count` turns marked formed without proposing anything: cheap history for contexts and compaction."""
    receipts = []
    for i in range(start, start + count):
        content = text(i) if text else f"Note {i} is here. Extra words {i}."
        receipt = observe(project, [("user", content), ("assistant", f"Reply {i}.")], subject=subject,
                          occurred_at=at(i))
        mark_formed(project, receipt.id)
        receipts.append(receipt)
    return receipts


def facts_of(project):
    return [str(r[0]) for r in query("SELECT fact_id FROM fact WHERE scope = %s ORDER BY fact_id", [project])]


def chunk_of(observation_id, ordinal=0):
    return str(one("SELECT chunk_id FROM turn_message WHERE observation_id = %s AND ordinal = %s",
                   [observation_id, ordinal])[0])


def insert_evidence(project, fact_id, observation_id, quote, byte_start, ordinal=0, version="rules/v1",
                    authored_by=None):
    query(
        "INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
        " byte_end, extractor_version, authored_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        [project, fact_id, observation_id, ordinal, quote, byte_start, byte_start + len(quote.encode()), version,
         authored_by])


def insert_retraction(project, fact_id, observation_id, *, replacement=None):
    """A record_retraction row as the retract service would leave it (governance.md §7)."""
    operation_id = str(uuid.uuid4())
    replacement_observation, replacement_fact = replacement or (None, None)
    query(
        "INSERT INTO record_retraction (scope, target_fact_id, source_observation_id, source_ordinal,"
        " claim_signature, operation_id, target_version, principal_id, retracted_at, replacement_observation_id,"
        " replacement_fact_id) VALUES (%s, %s, %s, 0, %s, %s, gen_random_uuid(), 'cred-1',"
        " '2026-02-01T10:00:00Z', %s, %s) RETURNING id",
        [project, fact_id, observation_id, hashlib.sha256(b"sig").digest(), operation_id, replacement_observation,
         replacement_fact])
    return operation_id


def post(auth, path, body):
    raw = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return Client().post(path, data=raw, content_type="application/json", **auth)


def ok(auth, path, body):
    response = post(auth, path, body)
    assert response.status_code == 200, response.content
    return response.json()


def refused(auth, path, body, status=400):
    response = post(auth, path, body)
    assert response.status_code == status, response.content
    return response.json()["error"]["code"]


def ledger(project, op):
    return query("SELECT outcome, magnitude FROM audit_entry WHERE project = %s AND operation = %s"
                 " ORDER BY entry_id", [project, op])


@pytest.fixture
def other(db):
    """A second project with its own token, for cross-project refusals."""
    from governance import services as governance
    from tests.conftest import unique_name

    name = unique_name()
    governance.create_project(name=name, principal="cli")
    _, token = governance.issue_credential(project=name, name="other", principal="cli")
    return name, {"HTTP_AUTHORIZATION": f"Bearer {token}"}

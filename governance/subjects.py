"""The subjects registry (governance.md §10): register, get, list and update data subjects.

Writes take their ledger row inside their own transaction; reads hide unknown, foreign and expired rows alike.
"""
import hashlib
import json
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction

from core import audit
from core.errors import Conflict, Invalid, NotFound
from core.locks import advisory_xact_lock
from core.strings import canonical_uuid, has_nul, is_blank, utf8_len

MAX_REFERENCE_BYTES = 1024
MAX_LABEL_BYTES = 256
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
REFERENCE_UNIQUE = "data_subject_reference_uniq"


@dataclass(frozen=True)
class Subject:
    id: str
    version: str
    external_reference: str | None
    label: str
    updated_by: str
    created_at: datetime
    updated_at: datetime
    inactive_after: datetime | None


def _invalid(message):
    return Invalid("invalid_subject", message)


def _conflict():
    return Conflict("subject_conflict", "the subject conflicts with an existing subject")


def _not_found():
    return NotFound("not_found", "not found")


def _uuid(value, what):
    canonical = canonical_uuid(value)
    if canonical is None:
        raise _invalid(f"{what} must be a UUID")
    return canonical


def _text(value, *, limit, what):
    """An optional field: None and "" mean absent; anything else must be non-blank, bounded and NUL-free."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or is_blank(value) or has_nul(value) or utf8_len(value) > limit:
        raise _invalid(f"{what} must be non-blank text of at most {limit} bytes")
    return value


def fingerprint(*, external_reference, label):
    """sha256(json([external_reference, label])), with an absent reference as ""."""
    text = json.dumps([external_reference or "", label or ""], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def key_digest(idempotency_key):
    return hashlib.sha256(uuid.UUID(idempotency_key).bytes).digest()


_COLUMNS = ("s.subject_id, s.version, s.external_reference, s.label, s.updated_by, s.created_at, s.updated_at,"
            " s.inactive_after")
# Expired means the sweep may delete it: past inactive_after and named by no remaining source
# (artifact owner observations carry the subject too, so artifacts are covered).
_LIVE = ("(s.inactive_after IS NULL OR s.inactive_after > coalesce(%s::timestamptz, now())"
         " OR EXISTS (SELECT 1 FROM observation o WHERE o.scope = s.scope"
         " AND o.data_subject_id = s.subject_id::text))")


def _row_to_subject(row):
    return Subject(id=str(row[0]), version=str(row[1]), external_reference=row[2], label=row[3],
                   updated_by=row[4], created_at=row[5], updated_at=row[6], inactive_after=row[7])


def _fetch(cursor, project, subject_id, *, now=None, lock=""):
    cursor.execute(
        f"SELECT {_COLUMNS}, s.previous_version, s.last_digest FROM data_subject s"
        f" WHERE s.scope = %s AND s.subject_id = %s AND {_LIVE} {lock}",
        [project, subject_id, now],
    )
    return cursor.fetchone()


@contextmanager
def _reference_conflicts():
    """A reference another subject took first (the unique index) is subject_conflict, not a fault."""
    try:
        yield
    except IntegrityError as exc:
        if _is_reference_taken(exc):
            raise _conflict() from None
        raise


def _written(cursor, *, op, project, subject_id, principal, principal_kind):
    """The subject as just written, with its ledger row in the same transaction: (Subject, replayed=False)."""
    row = _fetch(cursor, project, subject_id)
    audit.record(op=op, principal=principal, principal_kind=principal_kind, project=project, magnitude=1)
    return _row_to_subject(row), False


def _is_reference_taken(exc):
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    return diag is not None and diag.constraint_name == REFERENCE_UNIQUE


def _claim_reference(cursor, project, reference, subject_id=None):
    """Under the reference's lock, refuse one another subject holds: decided before the write, so a taken reference
    never reaches data_subject_reference_uniq (whose error would put the reference in the server's log)."""
    if not reference:
        return
    advisory_xact_lock(cursor, "subject-reference", project, reference)
    cursor.execute("SELECT 1 FROM data_subject WHERE scope = %s AND external_reference = %s"
                   " AND subject_id IS DISTINCT FROM %s::uuid", [project, reference, subject_id])
    if cursor.fetchone() is not None:
        raise _conflict()


def register_subject(*, project, idempotency_key, external_reference=None, label=None, principal,
                     principal_kind="credential"):
    """Register a subject, or replay a retry of the same key with its current state.

    Returns (Subject, replayed). Raises Invalid, or Conflict (subject_conflict) for a different
    request under the same key, a tombstoned key, or a reference another subject holds.
    """
    if idempotency_key is None or idempotency_key == "":
        raise _invalid("idempotency_key is required")
    key = _uuid(idempotency_key, "idempotency_key")
    reference = _text(external_reference, limit=MAX_REFERENCE_BYTES, what="external_reference")
    label = _text(label, limit=MAX_LABEL_BYTES, what="label")
    digest = key_digest(key)
    request_digest = fingerprint(external_reference=reference, label=label)
    with _reference_conflicts(), transaction.atomic(), connection.cursor() as cursor:
        advisory_xact_lock(cursor, "subject-retry", project, digest)
        cursor.execute(
            "SELECT subject_id, request_digest FROM subject_retry WHERE scope = %s AND key_digest = %s FOR UPDATE",
            [project, digest],
        )
        retry = cursor.fetchone()
        if retry is not None:
            subject_id, stored = retry
            if subject_id is None or bytes(stored) != request_digest:
                raise _conflict()
            row = _fetch(cursor, project, str(subject_id), lock="FOR SHARE OF s")
            if row is None:
                raise _conflict()
            audit.record(op="subject.register", principal=principal, principal_kind=principal_kind,
                         project=project, magnitude=0)
            return _row_to_subject(row), True
        subject_id = str(uuid.uuid4())
        _claim_reference(cursor, project, reference)
        cursor.execute(
            "INSERT INTO data_subject (subject_id, scope, external_reference, label, version, previous_version,"
            " last_digest, updated_by, created_at, updated_at, inactive_after)"
            " SELECT %s, p.name, %s, %s, %s, NULL, %s, %s, now(), now(),"
            " now() + make_interval(days => p.retention_days) FROM project p WHERE p.name = %s",
            [subject_id, reference or None, label, str(uuid.uuid4()), request_digest, principal, project],
        )
        if cursor.rowcount != 1:
            raise _not_found()
        cursor.execute(
            "INSERT INTO subject_retry (scope, key_digest, request_digest, subject_id) VALUES (%s, %s, %s, %s)",
            [project, digest, request_digest, subject_id],
        )
        return _written(cursor, op="subject.register", project=project, subject_id=subject_id, principal=principal,
                        principal_kind=principal_kind)


def get_subject(*, project, subject_id=None, external_reference=None, now=None):
    """One live subject by exactly one of id or external_reference; anything else hidden is 404."""
    has_id = subject_id is not None and subject_id != ""
    has_reference = external_reference is not None and external_reference != ""
    if has_id == has_reference:
        raise _invalid("give exactly one of id or external_reference")
    with connection.cursor() as cursor:
        if has_id:
            row = _fetch(cursor, project, _uuid(subject_id, "id"), now=now)
        else:
            reference = _text(external_reference, limit=MAX_REFERENCE_BYTES, what="external_reference")
            cursor.execute(
                f"SELECT {_COLUMNS} FROM data_subject s WHERE s.scope = %s AND s.external_reference = %s AND {_LIVE}",
                [project, reference, now],
            )
            row = cursor.fetchone()
    if row is None:
        raise _not_found()
    return _row_to_subject(row)


def list_subjects(*, project, after=None, limit=None, now=None):
    """A page of live subjects by id: (subjects, next_id or None). limit 0 or None means 20."""
    if limit is None or limit == 0:
        limit = DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise _invalid("limit is 1 to 100")
    cursor_id = _uuid(after, "after") if after not in (None, "") else None
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_COLUMNS} FROM data_subject s WHERE s.scope = %s"
            f" AND (%s::uuid IS NULL OR s.subject_id > %s::uuid) AND {_LIVE}"
            " ORDER BY s.subject_id LIMIT %s",
            [project, cursor_id, cursor_id, now, limit + 1],
        )
        rows = cursor.fetchall()
    subjects = [_row_to_subject(row) for row in rows[:limit]]
    next_id = subjects[-1].id if len(rows) > limit else None
    return subjects, next_id


def update_subject(*, project, subject_id, expected_version, external_reference=None, label=None, principal,
                   principal_kind="credential"):
    """Replace the reference and label (omitted or empty clears). Returns (Subject, replayed).

    An identical retry against the previous version replays; a stale version, a different retry or a
    reference another subject holds is Conflict (subject_conflict).
    """
    if subject_id is None or subject_id == "":
        raise _invalid("id is required")
    if expected_version is None or expected_version == "":
        raise _invalid("expected_version is required")
    subject_id = _uuid(subject_id, "id")
    expected = _uuid(expected_version, "expected_version")
    reference = _text(external_reference, limit=MAX_REFERENCE_BYTES, what="external_reference")
    label = _text(label, limit=MAX_LABEL_BYTES, what="label")
    request_digest = fingerprint(external_reference=reference, label=label)
    with _reference_conflicts(), transaction.atomic(), connection.cursor() as cursor:
        row = _fetch(cursor, project, subject_id, lock="FOR UPDATE OF s")
        if row is None:
            raise _not_found()
        current, previous, last = str(row[1]), row[8], row[9]
        if expected != current:
            if previous is None or expected != str(previous) or last is None or bytes(last) != request_digest:
                raise _conflict()
            audit.record(op="subject.update", principal=principal, principal_kind=principal_kind,
                         project=project, magnitude=0)
            return _row_to_subject(row), True
        _claim_reference(cursor, project, reference, subject_id)
        cursor.execute(
            "UPDATE data_subject SET external_reference = %s, label = %s, previous_version = version,"
            " version = %s, last_digest = %s, updated_by = %s, updated_at = now()"
            " WHERE scope = %s AND subject_id = %s",
            [reference or None, label, str(uuid.uuid4()), request_digest, principal, project, subject_id],
        )
        return _written(cursor, op="subject.update", project=project, subject_id=subject_id, principal=principal,
                        principal_kind=principal_kind)

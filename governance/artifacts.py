"""Agent artifacts (governance.md §11, api.md §7.7): put, get, list, delete and the storage policy.

Each artifact owns a born-formed `kind='artifact'` observation; writes take their ledger row inside their transaction.
An artifact is named by (project, id): the same id in two projects is two artifacts. Every collision is decided under
the id's lock before any write, so no refused request ever reaches a constraint (whose error would log its key).
"""
import base64
import binascii
import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import DatabaseError, connection, transaction

from core import audit
from core.errors import Conflict, Invalid, NotFound, RateLimited
from core.limits import MAX_SUBJECT_BYTES
from core.locks import advisory_xact_lock
from core.strings import canonical_uuid, has_nul, is_blank, utf8_len
from memory.services import claim_offset, recompute_watermark

MAX_CONTENT_BYTES = 524_288
MAX_NAME_BYTES = 256
KINDS = ("state", "file")
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
CAPACITY_CONSTRAINT = "agent_storage_capacity"
# The CHECK ranges of agent_storage_policy (data-model.md §8).
POLICY_RANGES = {
    "max_object_bytes": (1, 524_288),
    "max_bytes": (1, 1_073_741_824),
    "max_objects": (1, 100_000),
    "max_age_hours": (1, 8_760),
}


@dataclass(frozen=True)
class Artifact:
    id: str
    version: str
    data_subject_id: str
    kind: str
    name: str
    source_observation_id: str
    bytes: int
    authored_by: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    content: bytes | None = None


def _invalid(message):
    return Invalid("invalid_artifact", message)


def _conflict():
    return Conflict("artifact_conflict", "the artifact conflicts with an existing artifact")


def _not_found():
    return NotFound("not_found", "not found")


def _required_uuid(value, what):
    if value is None or value == "":
        raise _invalid(f"{what} is required")
    canonical = canonical_uuid(value)
    if canonical is None:
        raise _invalid(f"{what} must be a UUID")
    return canonical


def _optional_uuid(value, what):
    return None if value is None or value == "" else _required_uuid(value, what)


def _subject(value, *, required):
    """data_subject_id: non-blank, at most 1,024 B, no NUL. Optional filters treat "" as absent."""
    if value is None or value == "":
        if required:
            raise _invalid("data_subject_id is required")
        return None
    if not isinstance(value, str) or is_blank(value) or has_nul(value) or utf8_len(value) > MAX_SUBJECT_BYTES:
        raise _invalid("data_subject_id must be non-blank text of at most 1024 bytes")
    return value


def _name(value):
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or is_blank(value) or has_nul(value) or utf8_len(value) > MAX_NAME_BYTES:
        raise _invalid("name must be non-blank text of at most 256 bytes")
    return value


def _kind(value, *, required):
    if value is None or value == "":
        if required:
            raise _invalid("kind is required")
        return None
    if value not in KINDS:
        raise _invalid("kind is state or file")
    return value


def decode_content(value):
    """Canonical standard base64 with padding, decoded; "" is zero bytes. Over 524,288 B is invalid."""
    if value is None or not isinstance(value, str):
        raise _invalid("content is required")
    # Four base64 characters carry three bytes: refuse an oversized payload before decoding it.
    if len(value) > (MAX_CONTENT_BYTES + 2) // 3 * 4:
        raise _invalid("content is at most 524288 bytes")
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid("content must be standard base64") from None
    # Non-zero pad bits or other non-canonical spellings decode too; only the canonical form is accepted.
    if base64.b64encode(decoded).decode("ascii") != value:
        raise _invalid("content must be canonical standard base64")
    if len(decoded) > MAX_CONTENT_BYTES:
        raise _invalid("content is at most 524288 bytes")
    return decoded


def fingerprint(*, data_subject_id, kind, name, content):
    """sha256 over subject, kind, name and the content's own digest, with exact field boundaries."""
    text = json.dumps([data_subject_id, kind, name, hashlib.sha256(content).hexdigest()],
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def _constraint(exc):
    diag = getattr(exc.__cause__, "diag", None)
    return diag.constraint_name if diag is not None else None


_META = ("a.artifact_id, a.version, a.data_subject_id, a.kind, a.name, a.source_observation_id, a.bytes,"
         " a.authored_by, a.created_at, a.updated_at, a.expires_at")
_LIVE = "a.expires_at > coalesce(%s::timestamptz, now())"


def _row_to_artifact(row, content=None):
    return Artifact(id=str(row[0]), version=str(row[1]), data_subject_id=row[2], kind=row[3], name=row[4],
                    source_observation_id=str(row[5]), bytes=row[6], authored_by=row[7], created_at=row[8],
                    updated_at=row[9], expires_at=row[10], content=content)


def _lock_id(cursor, project, artifact_id):
    # Serializes concurrent puts and deletes of one id, including a create racing a create.
    advisory_xact_lock(cursor, "artifact", project, artifact_id)


def _read_meta(cursor, project, artifact_id):
    cursor.execute(f"SELECT {_META} FROM agent_artifact a WHERE a.scope = %s AND a.artifact_id = %s",
                   [project, artifact_id])
    return _row_to_artifact(cursor.fetchone())


def put_artifact(*, project, artifact_id, data_subject_id, kind, content, name=None, expected_version=None,
                 principal, principal_kind="credential"):
    """Create, update or replay one artifact (the outcome table of api.md §7.7).

    Without `expected_version` the put is unconditional (last write wins, as the official clients document);
    with it, compare-and-set (docs/decisions.md). `content` is the base64 text from the wire. Returns
    (Artifact, replayed). Raises Invalid
    (invalid_artifact), NotFound, Conflict (artifact_conflict) or RateLimited (storage_capacity).
    """
    artifact_id = _required_uuid(artifact_id, "id")
    data_subject_id = _subject(data_subject_id, required=True)
    kind = _kind(kind, required=True)
    name = _name(name)
    decoded = decode_content(content)
    expected = _optional_uuid(expected_version, "expected_version")
    digest = fingerprint(data_subject_id=data_subject_id, kind=kind, name=name, content=decoded)
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            _lock_id(cursor, project, artifact_id)
            cursor.execute(
                "SELECT a.data_subject_id, a.kind, a.version, a.previous_version, a.last_digest,"
                " a.expires_at > now() FROM agent_artifact a WHERE a.scope = %s AND a.artifact_id = %s"
                " FOR UPDATE",
                [project, artifact_id],
            )
            row = cursor.fetchone()
            if row is None or not row[5]:
                # An expired artifact awaiting its sweep is as spent as a deleted one.
                if row is not None or _tombstoned(cursor, project, artifact_id):
                    raise _conflict()
                if expected is not None:
                    raise _not_found()
                _create(cursor, project=project, artifact_id=artifact_id, data_subject_id=data_subject_id,
                        kind=kind, name=name, content=decoded, digest=digest, principal=principal)
                replayed = False
            else:
                replayed = _overwrite(cursor, row, project=project, artifact_id=artifact_id,
                                      data_subject_id=data_subject_id, kind=kind, name=name, content=decoded,
                                      digest=digest, expected=expected, principal=principal)
            artifact = _read_meta(cursor, project, artifact_id)
            audit.record(op="artifact.put", principal=principal, principal_kind=principal_kind,
                         project=project, magnitude=0 if replayed else 1)
    except DatabaseError as exc:
        if _constraint(exc) == CAPACITY_CONSTRAINT:
            raise RateLimited("storage_capacity", "storage capacity is exhausted") from None
        raise
    return artifact, replayed


def _tombstoned(cursor, project, artifact_id):
    cursor.execute("SELECT 1 FROM artifact_tombstone WHERE scope = %s AND artifact_id = %s",
                   [project, artifact_id])
    return cursor.fetchone() is not None


def _create(cursor, *, project, artifact_id, data_subject_id, kind, name, content, digest, principal):
    # least() skips NULL, so an indefinite project retention leaves the storage policy's age alone.
    cursor.execute(
        "SELECT least(now() + make_interval(hours => s.max_age_hours),"
        " now() + make_interval(days => p.retention_days))"
        " FROM agent_storage_policy s JOIN project p ON p.name = s.scope WHERE s.scope = %s",
        [project],
    )
    found = cursor.fetchone()
    if found is None:
        raise _not_found()
    expires_at = found[0]
    log_offset = claim_offset(cursor, project)
    observation_id = str(uuid.uuid4())
    # The owner observation carries no words; it is born formed so formation never waits on it.
    cursor.execute(
        "INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
        " data_subject_id, retention_until, formed_at, formation_attempts)"
        " VALUES (%s, %s, %s, 'artifact', now(), 'assistant', %s, %s, now(), 0)",
        [observation_id, project, log_offset, data_subject_id, expires_at],
    )
    cursor.execute(
        "INSERT INTO agent_artifact (artifact_id, scope, data_subject_id, kind, name, content, bytes, version,"
        " previous_version, last_digest, source_observation_id, authored_by, created_at, updated_at, expires_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, NULL, %s, %s, %s, now(), now(), %s)",
        [artifact_id, project, data_subject_id, kind, name, content, len(content), str(uuid.uuid4()), digest,
         observation_id, principal, expires_at],
    )
    cursor.execute(
        "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
        " data_subject_id, retention_until, pipeline_version, registered_at)"
        " VALUES (%s, %s, 'agent_artifact', %s, %s, %s, 'v1', now()) ON CONFLICT DO NOTHING",
        [project, observation_id, artifact_id, data_subject_id, expires_at],
    )
    recompute_watermark(cursor, project)


def _overwrite(cursor, row, *, project, artifact_id, data_subject_id, kind, name, content, digest, expected,
               principal):
    """The existing-id rows of the outcome table. Returns replayed; raises Conflict otherwise."""
    stored_subject, stored_kind, version, previous, last = row[0], row[1], str(row[2]), row[3], bytes(row[4])
    if stored_subject != data_subject_id or stored_kind != kind:
        raise _conflict()
    if expected is None and last == digest:
        return True  # the same request again: answered, no new version
    if expected is None or expected == version:
        cursor.execute(
            "UPDATE agent_artifact SET name = %s, content = %s, bytes = %s, previous_version = version,"
            " version = %s, last_digest = %s, authored_by = %s, updated_at = now()"
            " WHERE scope = %s AND artifact_id = %s",
            [name, content, len(content), str(uuid.uuid4()), digest, principal, project, artifact_id],
        )
        return False
    if previous is not None and expected == str(previous) and last == digest:
        return True
    raise _conflict()


def get_artifact(*, project, artifact_id, data_subject_id=None, now=None):
    """One live artifact with its bytes. Unknown, foreign, expired or another subject's: NotFound."""
    artifact_id = _required_uuid(artifact_id, "id")
    subject = _subject(data_subject_id, required=False)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_META}, a.content FROM agent_artifact a WHERE a.scope = %s AND a.artifact_id = %s"
            f" AND {_LIVE} AND (%s::text IS NULL OR a.data_subject_id = %s::text)",
            [project, artifact_id, now, subject, subject],
        )
        row = cursor.fetchone()
    if row is None:
        raise _not_found()
    return _row_to_artifact(row, content=bytes(row[11]))


def _like_prefix(prefix):
    """A LIKE pattern matching `prefix` literally: backslash, % and _ are escaped."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def list_artifacts(*, project, kind=None, name_prefix=None, data_subject_id=None, after=None, limit=None, now=None):
    """A page of live artifacts by id: (artifacts, next_id or None). limit 0 or None means 20."""
    kind = _kind(kind, required=False)
    if name_prefix is not None and (has_nul(name_prefix) or utf8_len(name_prefix) > MAX_NAME_BYTES):
        raise _invalid("name_prefix is at most 256 bytes with no NUL")
    subject = _subject(data_subject_id, required=False)
    cursor_id = _optional_uuid(after, "after")
    if limit is None or limit == 0:
        limit = DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise _invalid("limit is 1 to 100")
    clauses = ["a.scope = %s", _LIVE]
    params = [project, now]
    if cursor_id is not None:
        clauses.append("a.artifact_id > %s::uuid")
        params.append(cursor_id)
    if kind is not None:
        clauses.append("a.kind = %s")
        params.append(kind)
    if subject is not None:
        clauses.append("a.data_subject_id = %s")
        params.append(subject)
    if name_prefix:
        clauses.append("a.name LIKE %s ESCAPE '\\'")
        params.append(_like_prefix(name_prefix))
    params.append(limit + 1)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_META} FROM agent_artifact a WHERE {' AND '.join(clauses)} ORDER BY a.artifact_id LIMIT %s",
            params,
        )
        rows = cursor.fetchall()
    artifacts = [_row_to_artifact(row) for row in rows[:limit]]
    next_id = artifacts[-1].id if len(rows) > limit else None
    return artifacts, next_id


def delete_artifact(*, project, artifact_id, expected_version=None, data_subject_id=None, principal,
                    principal_kind="credential"):
    """Delete one live artifact, then its owner observation: at any version when `expected_version` is omitted,
    at that version otherwise.

    The database triggers write the tombstone and release the allowance. A repeat is NotFound; a
    stale version is Conflict (artifact_conflict).
    """
    artifact_id = _required_uuid(artifact_id, "id")
    expected = _optional_uuid(expected_version, "expected_version")
    subject = _subject(data_subject_id, required=False)
    with transaction.atomic(), connection.cursor() as cursor:
        _lock_id(cursor, project, artifact_id)
        cursor.execute(
            "SELECT a.version, a.source_observation_id FROM agent_artifact a"
            " WHERE a.scope = %s AND a.artifact_id = %s AND a.expires_at > now()"
            " AND (%s::text IS NULL OR a.data_subject_id = %s::text) FOR UPDATE",
            [project, artifact_id, subject, subject],
        )
        row = cursor.fetchone()
        if row is None:
            raise _not_found()
        if expected is not None and str(row[0]) != expected:
            raise _conflict()
        cursor.execute("DELETE FROM agent_artifact WHERE scope = %s AND artifact_id = %s", [project, artifact_id])
        cursor.execute("DELETE FROM observation WHERE scope = %s AND observation_id = %s", [project, str(row[1])])
        audit.record(op="artifact.delete", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)


@dataclass(frozen=True)
class StoragePolicy:
    project: str
    max_object_bytes: int
    max_bytes: int
    max_objects: int
    max_age_hours: int
    used_bytes: int
    used_objects: int


def get_storage_policy(*, project):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT scope, max_object_bytes, max_bytes, max_objects, max_age_hours, used_bytes, used_objects"
            " FROM agent_storage_policy WHERE scope = %s",
            [project],
        )
        row = cursor.fetchone()
    if row is None:
        raise _not_found()
    return StoragePolicy(*row)


def configure_storage(*, project, max_object_bytes, max_bytes, max_objects, max_age_hours, principal,
                      principal_kind="operator"):
    """Set all four limits together (console and `memoir_storage limits`). Existing artifacts stay."""
    limits = {"max_object_bytes": max_object_bytes, "max_bytes": max_bytes, "max_objects": max_objects,
              "max_age_hours": max_age_hours}
    for field, value in limits.items():
        low, high = POLICY_RANGES[field]
        if type(value) is not int or not low <= value <= high:
            raise _invalid(f"{field} is {low} to {high}")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE agent_storage_policy SET max_object_bytes = %s, max_bytes = %s, max_objects = %s,"
            " max_age_hours = %s WHERE scope = %s",
            [max_object_bytes, max_bytes, max_objects, max_age_hours, project],
        )
        if cursor.rowcount != 1:
            raise _not_found()
        audit.record(op="artifact.configure", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)
    return get_storage_policy(project=project)

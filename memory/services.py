"""Memory writes: appending turns to the source log (formation.md §1) and recomputing the watermark.

Raw SQL on purpose: observe is the hot path and every statement here is one the spec names.
"""
import hashlib
import json
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db import DatabaseError, connection, transaction

from core.errors import Conflict, RateLimited
from core.locks import advisory_xact_lock

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ObserveReceipt:
    id: str
    scope: str
    log_offset: int
    replayed: bool
    messages: int


def turn_fingerprint(*, project, data_subject_id, messages):
    """Shape version 2: no timestamps, so an adapter's retry with a new occurred_at replays."""
    shape = {
        "version": 2,
        "scope": project,
        "data_subject_id": data_subject_id or "",
        "messages": [
            {"ordinal": i, "role": m["role"], "content": m["content"], "group_ordinal": m["group_ordinal"]}
            for i, m in enumerate(messages)
        ],
    }
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def key_digest(idempotency_key, *, prefix=b""):
    return hashlib.sha256(prefix + uuid.UUID(idempotency_key).bytes).digest()


def _is_backlog_refusal(exc):
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    return diag is not None and diag.constraint_name == "ingestion_backlog_capacity"


def observe(*, project, messages, data_subject_id=None, occurred_at=None, idempotency_key=None,
            retention_days=None, on_stored=None, audit_principal=None):
    """Append one turn. `messages` are dicts with role, content, group_ordinal and optional occurred_at.

    Returns the receipt; a replay of the same key and fingerprint returns the original receipt.
    Raises Conflict (idempotency_conflict) or RateLimited (backlog full, nothing kept).
    With `audit_principal` (a credential id) the `observe` ledger row commits with the turn itself, so the
    ledger can never miss an acknowledged turn and the row costs no commit of its own.
    """
    subject = data_subject_id or None
    fingerprint = turn_fingerprint(project=project, data_subject_id=subject, messages=messages)
    digest = key_digest(idempotency_key) if idempotency_key else None
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                if digest is not None:
                    replay = _check_retry(cursor, project, digest, fingerprint)
                    if replay is not None:
                        return replay
                receipt = _append_turn(cursor, project=project, messages=messages, subject=subject,
                                       occurred_at=occurred_at, retention_days=retention_days,
                                       retry=(digest, fingerprint) if digest is not None else None,
                                       audit_principal=audit_principal)
            if on_stored is not None:
                transaction.on_commit(lambda: on_stored(project), robust=True)
    except DatabaseError as exc:
        if _is_backlog_refusal(exc):
            raise RateLimited("rate_limited", "the formation backlog is full") from None
        raise
    return receipt


def _check_retry(cursor, project, digest, fingerprint):
    advisory_xact_lock(cursor, "observe-retry", project, digest)
    cursor.execute(
        "SELECT r.observation_id, r.request_digest, o.log_offset FROM observation_retry r"
        " LEFT JOIN observation o ON o.observation_id = r.observation_id"
        " WHERE r.scope = %s AND r.key_digest = %s FOR UPDATE OF r",
        [project, digest],
    )
    row = cursor.fetchone()
    if row is None:
        return None
    observation_id, stored_fingerprint, log_offset = row
    if observation_id is None or bytes(stored_fingerprint) != fingerprint or log_offset is None:
        raise Conflict("idempotency_conflict", "this idempotency key was used for a different turn")
    return ObserveReceipt(id=str(observation_id), scope=project, log_offset=log_offset, replayed=True, messages=0)


def claim_offset(cursor, project, turn_time=None):
    """Take the next dense offset; the watermark row lock serializes appends within a project."""
    cursor.execute(
        "INSERT INTO watermark AS w (scope, log_offset, watermark_at, updated_at)"
        " VALUES (%s, 0, coalesce(%s, now()), now())"
        " ON CONFLICT (scope) DO UPDATE SET log_offset = w.log_offset + 1,"
        " watermark_at = greatest(w.watermark_at, EXCLUDED.watermark_at), updated_at = now()"
        " RETURNING log_offset",
        [project, turn_time],
    )
    return cursor.fetchone()[0]


def _append_turn(cursor, *, project, messages, subject, occurred_at, retention_days, retry, audit_principal):
    """The append as one statement: the offset (taking the watermark row lock until commit), the observation,
    its messages, the idempotency row and the ledger row. Foreign keys are deferred, so order inside is free."""
    observation_id = str(uuid.uuid4())
    retention = timedelta(days=retention_days) if retention_days else None
    values, message_params = [], []
    for ordinal, message in enumerate(messages):
        values.append("(%s::int, %s::text, %s::text, %s::int, %s::timestamptz)")
        message_params += [ordinal, message["role"], message["content"], message["group_ordinal"],
                           message.get("occurred_at")]
    sql = (
        "WITH w AS (INSERT INTO watermark AS w (scope, log_offset, watermark_at, updated_at)"
        "  VALUES (%s, 0, coalesce(%s, now()), now())"
        "  ON CONFLICT (scope) DO UPDATE SET log_offset = w.log_offset + 1,"
        "  watermark_at = greatest(w.watermark_at, EXCLUDED.watermark_at), updated_at = now()"
        "  RETURNING log_offset),"
        " o AS (INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
        "  data_subject_id, retention_until, formation_attempts)"
        "  SELECT %s, %s, w.log_offset, 'turn', coalesce(%s::timestamptz, now()), %s, %s, now() + %s::interval, 0"
        "  FROM w RETURNING log_offset, occurred_at),"
        " m AS (INSERT INTO turn_message (observation_id, ordinal, role, content, group_ordinal, occurred_at,"
        "  chunk_id) SELECT %s, v.ordinal, v.role, v.content, v.group_ordinal, coalesce(v.occurred_at, o.occurred_at),"
        "  gen_random_uuid() FROM o, (VALUES " + ", ".join(values) + ")"
        "  AS v(ordinal, role, content, group_ordinal, occurred_at))"
    )
    params = [project, occurred_at, observation_id, project, occurred_at, messages[0]["role"], subject, retention,
              observation_id, *message_params]
    if retry is not None:
        sql += (", r AS (INSERT INTO observation_retry (scope, key_digest, request_digest, observation_id)"
                " SELECT %s, %s, %s, %s FROM o)")
        params += [project, retry[0], retry[1], observation_id]
    if audit_principal is not None:
        sql += (", a AS (INSERT INTO audit_entry (operation, principal, principal_kind, project, magnitude, outcome)"
                " SELECT 'observe', %s, 'credential', %s, %s, 'allowed' FROM o)")
        params += [audit_principal, project, len(messages)]
    cursor.execute(sql + " SELECT log_offset FROM o", params)
    log_offset = cursor.fetchone()[0]
    return ObserveReceipt(id=observation_id, scope=project, log_offset=log_offset, replayed=False,
                          messages=len(messages))


def recompute_watermark(cursor, project):
    """Recompute `formed` under the watermark row lock; never an increment (formation.md §2.6).

    The lowest unformed, unparked offset decides it: none → everything stored is formed; 0 → nothing is."""
    cursor.execute("SELECT memoir_recompute_watermark(%s)", [project])
    return cursor.fetchone()[0]

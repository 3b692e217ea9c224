"""Feedback about records (governance.md §8): record and promote (services) and the newest-first list
(selector). Recording changes nothing a recall can see; only a promotion does, as a correction or a
retraction run in the promotion's own transaction."""
import uuid

from django.db import connection, transaction

from core import audit
from core.errors import Conflict, NotFound
from formation import curation

DEFAULT_PAGE = 20


def _feedback(row):
    feedback_id, record_id, note, proposed, recorded_by, recorded_at, promoted_by, promoted_at, fact_id = row
    return {
        "id": str(feedback_id), "record_id": str(record_id), "note": note, "proposed_object": proposed,
        "recorded_by": recorded_by, "recorded_at": recorded_at, "promoted_by": promoted_by,
        "promoted_at": promoted_at, "replacement_record_id": str(fact_id) if fact_id else None,
    }


_COLUMNS = ("feedback_id, target_fact_id, note, proposed_object, recorded_by, recorded_at, promoted_by,"
            " promoted_at, promotion_fact_id")


def record_feedback(*, caller, record_id, note, proposed_object=None):
    """Store one report about a record of this project (any status) and register it wherever the
    record is registered, so the erasures that reach the record reach the report too."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Key share on the record's sources first, then the record: the order an erasure locks them in
        # (observations, then what derives from them), so the two queue rather than deadlock. A purge or
        # erasure deleting the record waits for this, or this waits for it and then finds nothing.
        cursor.execute(
            "SELECT 1 FROM observation WHERE scope = %s AND observation_id IN (SELECT source_observation_id"
            " FROM projection_dependency WHERE scope = %s AND projection_kind = 'fact' AND fact_ref = %s)"
            " ORDER BY observation_id FOR KEY SHARE",
            [caller.project, caller.project, record_id],
        )
        cursor.execute("SELECT 1 FROM fact WHERE scope = %s AND fact_id = %s FOR KEY SHARE",
                       [caller.project, record_id])
        if cursor.fetchone() is None:
            raise NotFound("not_found", "no such record")
        cursor.execute(
            "INSERT INTO memory_feedback (feedback_id, scope, target_fact_id, note, proposed_object, recorded_by,"
            f" recorded_at) VALUES (%s, %s, %s, %s, %s, %s, now()) RETURNING {_COLUMNS}",
            [str(uuid.uuid4()), caller.project, record_id, note, proposed_object, caller.credential_id],
        )
        item = _feedback(cursor.fetchone())
        cursor.execute(
            "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
            " data_subject_id, retention_until, pipeline_version, registered_at)"
            " SELECT scope, source_observation_id, 'feedback', %s, data_subject_id, retention_until, 'v1', now()"
            " FROM projection_dependency WHERE scope = %s AND projection_kind = 'fact' AND fact_ref = %s"
            " ON CONFLICT DO NOTHING",
            [item["id"], caller.project, record_id],
        )
        audit.record(op="feedback.record", principal=caller.credential_id, principal_kind="credential",
                     project=caller.project, magnitude=1)
    return item


def list_feedback(*, project, record_id=None, open_only=False, limit=DEFAULT_PAGE, after=None):
    """Newest first by (recorded_at, id). `after` is (recorded_at, id) from the previous page's `next`.
    Returns (items, next) where next is (recorded_at, id) or None."""
    where = ["scope = %s"]
    params = [project]
    if record_id is not None:
        where.append("target_fact_id = %s")
        params.append(record_id)
    if open_only:
        where.append("promoted_at IS NULL")
    if after is not None:
        where.append("(recorded_at, feedback_id) < (%s, %s::uuid)")
        params.extend([after[0], after[1]])
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_COLUMNS} FROM memory_feedback WHERE {' AND '.join(where)}"
            " ORDER BY recorded_at DESC, feedback_id DESC LIMIT %s",
            [*params, limit + 1],
        )
        rows = cursor.fetchall()
    items = [_feedback(row) for row in rows[:limit]]
    following = (items[-1]["recorded_at"], items[-1]["id"]) if len(rows) > limit else None
    return items, following


def promote_feedback(*, caller, feedback_id, expected_version):
    """Turn a report into a correction (it proposed an object) or a retraction (it did not), checked
    against the record's expected_version. Racing promotions queue on the feedback row: one wins."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT target_fact_id::text, note, proposed_object, promoted_at FROM memory_feedback"
            " WHERE scope = %s AND feedback_id = %s FOR UPDATE",
            [caller.project, feedback_id],
        )
        row = cursor.fetchone()
        if row is None:
            raise NotFound("not_found", "no such feedback")
        record_id, note, proposed_object, promoted_at = row
        if promoted_at is not None:
            raise Conflict("feedback_already_promoted", "this feedback was already promoted")
        target = {"id": record_id, "expected_version": expected_version}
        replacement = None
        if proposed_object is not None:
            operation = "record.correct"
            result = curation.correct_within(cursor, caller=caller, items=[
                {**target, "object": proposed_object, "statement": note}])[0]
            replacement = result["id"]
        else:
            operation = "record.retract"
            result = curation.retract_within(cursor, caller=caller, items=[target])[0]
        # The record is credited to the promoter; the report stays the reporter's.
        cursor.execute(
            "UPDATE memory_feedback SET promoted_by = %s, promoted_at = now(), promotion_fact_id = %s"
            " WHERE feedback_id = %s RETURNING promoted_at",
            [caller.credential_id, replacement, feedback_id],
        )
        promoted_at = cursor.fetchone()[0]
        audit.record(op=operation, principal=caller.credential_id, principal_kind="credential",
                     project=caller.project, magnitude=1)
        audit.record(op="feedback.promote", principal=caller.credential_id, principal_kind="credential",
                     project=caller.project, magnitude=1)
    return {"id": feedback_id, "record_id": record_id, "operation": operation,
            "replacement_record_id": replacement, "version": result["version"], "promoted_at": promoted_at}

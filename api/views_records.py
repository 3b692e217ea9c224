"""The record mutation, feedback and entity purge routes (api.md §7.4–§7.6): body rules here, the work
in formation.curation, formation.feedback and governance.purge, which write their own ledger rows."""
from core.encoding import format_ts
from core.limits import MAX_SUBJECT_BYTES
from core.strings import canonical_uuid, has_nul, is_blank, utf8_len
from formation import curation, feedback
from governance.purge import purge_entity

from .base import Result, V1View
from .errors import ApiError
from .jsonbody import BOOL, INT, STR, TIMESTAMP, UUID_STR, ArrayOf, Obj
from .turns import subject_or_none

MAX_PREDICATE_BYTES = 128
MAX_OBJECT_BYTES = 1_024
MAX_STATEMENT_BYTES = 16_384
MAX_REASON_BYTES = 1_024
MAX_PAGE = 100

ASSERT_SHAPE = Obj({"records": ArrayOf(Obj({
    "idempotency_key": UUID_STR, "data_subject_id": STR, "subject": STR, "predicate": STR, "object": STR,
    "statement": STR, "valid_from": TIMESTAMP,
}))})
CORRECT_SHAPE = Obj({"records": ArrayOf(Obj({
    "id": UUID_STR, "expected_version": UUID_STR, "object": STR, "statement": STR, "valid_from": TIMESTAMP,
}))})
RETRACT_SHAPE = Obj({"records": ArrayOf(Obj({"id": UUID_STR, "expected_version": UUID_STR}))})
FEEDBACK_RECORD_SHAPE = Obj({"record_id": UUID_STR, "note": STR, "proposed_object": STR})
FEEDBACK_LIST_SHAPE = Obj({
    "record_id": UUID_STR, "open_only": BOOL, "limit": INT,
    "after": Obj({"recorded_at": TIMESTAMP, "id": UUID_STR}),
})
FEEDBACK_PROMOTE_SHAPE = Obj({"id": UUID_STR, "expected_version": UUID_STR})
PURGE_SHAPE = Obj({"id": UUID_STR, "reason": STR, "confirm": BOOL})


def _text(value, code, max_bytes):
    """A required string: not blank, no NUL, 1..max_bytes UTF-8 bytes."""
    if value is None or is_blank(value) or has_nul(value) or utf8_len(value) > max_bytes:
        raise ApiError(400, code)
    return value


def _uuid(value, code):
    cleaned = canonical_uuid(value)
    if cleaned is None:
        raise ApiError(400, code)
    return cleaned


def _records(body):
    records = body.get("records")
    if not records or len(records) > curation.MAX_BATCH:
        raise ApiError(400, "invalid_record_mutation", "a batch holds 1 to 20 records")
    return records


def _target(record):
    return {"id": _uuid(record.get("id"), "invalid_record_mutation"),
            "expected_version": _uuid(record.get("expected_version"), "invalid_record_mutation")}


def _drop_empty(data, *keys):
    """Presence rules (api.md §4): these keys are omitted rather than sent as null."""
    for key in keys:
        if data.get(key) is None:
            data.pop(key, None)
    return data


class RecordsAssertView(V1View):
    op = "record.assert"
    shape = ASSERT_SHAPE

    def handle(self, caller, body):
        code = "invalid_record_mutation"
        items = [{
            "idempotency_key": _uuid(r.get("idempotency_key"), code),
            "data_subject_id": subject_or_none(r.get("data_subject_id"), code=code),
            "subject": _text(r.get("subject"), code, MAX_SUBJECT_BYTES),
            "predicate": _text(r.get("predicate"), code, MAX_PREDICATE_BYTES),
            "object": _text(r.get("object"), code, MAX_OBJECT_BYTES),
            "statement": _text(r.get("statement"), code, MAX_STATEMENT_BYTES),
            "valid_from": r.get("valid_from"),
        } for r in _records(body)]
        out = curation.assert_records(caller=caller, items=items)
        return Result({"records": out}, audited=True)


class RecordsCorrectView(V1View):
    op = "record.correct"
    shape = CORRECT_SHAPE

    def handle(self, caller, body):
        code = "invalid_record_mutation"
        items = [{
            **_target(r),
            "object": _text(r.get("object"), code, MAX_OBJECT_BYTES),
            "statement": _text(r.get("statement"), code, MAX_STATEMENT_BYTES),
            "valid_from": r.get("valid_from"),
        } for r in _records(body)]
        out = curation.correct_records(caller=caller, items=items)
        return Result({"records": out}, audited=True)


class RecordsRetractView(V1View):
    op = "record.retract"
    shape = RETRACT_SHAPE

    def handle(self, caller, body):
        items = [_target(r) for r in _records(body)]
        out = curation.retract_records(caller=caller, items=items)
        records = [{"id": r["id"], "version": r["version"], "operation_id": r["operation_id"],
                    "principal_id": r["principal_id"], "retracted_at": format_ts(r["retracted_at"])} for r in out]
        return Result({"records": records}, audited=True)


def _feedback_object(item):
    data = dict(item)
    data["recorded_at"] = format_ts(item["recorded_at"])
    data["promoted_at"] = format_ts(item["promoted_at"])
    return _drop_empty(data, "proposed_object", "promoted_by", "promoted_at", "replacement_record_id")


class FeedbackRecordView(V1View):
    op = "feedback.record"
    shape = FEEDBACK_RECORD_SHAPE

    def handle(self, caller, body):
        code = "invalid_feedback"
        record_id = _uuid(body.get("record_id"), code)
        note = _text(body.get("note"), code, MAX_STATEMENT_BYTES)
        proposed = body.get("proposed_object")
        if proposed is not None:
            proposed = _text(proposed, code, MAX_OBJECT_BYTES)
        item = feedback.record_feedback(caller=caller, record_id=record_id, note=note, proposed_object=proposed)
        return Result(_feedback_object(item), audited=True)


class FeedbackListView(V1View):
    op = "feedback.list"
    shape = FEEDBACK_LIST_SHAPE

    def handle(self, caller, body):
        code = "invalid_feedback"
        record_id = body.get("record_id")
        if record_id is not None:
            record_id = _uuid(record_id, code)
        limit = body.get("limit", feedback.DEFAULT_PAGE)
        if not 1 <= limit <= MAX_PAGE:
            raise ApiError(400, code)
        after = body.get("after")
        if after is not None:
            if "recorded_at" not in after or "id" not in after:
                raise ApiError(400, code)
            after = (after["recorded_at"], _uuid(after["id"], code))
        items, following = feedback.list_feedback(project=caller.project, record_id=record_id,
                                                  open_only=body.get("open_only", False), limit=limit, after=after)
        data = {"feedback": [_feedback_object(item) for item in items]}
        if following is not None:
            data["next"] = {"recorded_at": format_ts(following[0]), "id": following[1]}
        return Result(data, magnitude=len(items))


class FeedbackPromoteView(V1View):
    op = "feedback.promote"
    shape = FEEDBACK_PROMOTE_SHAPE

    def handle(self, caller, body):
        code = "invalid_feedback"
        out = feedback.promote_feedback(caller=caller, feedback_id=_uuid(body.get("id"), code),
                                        expected_version=_uuid(body.get("expected_version"), code))
        out["promoted_at"] = format_ts(out["promoted_at"])
        return Result(_drop_empty(out, "replacement_record_id"), audited=True)


class EntitiesPurgeView(V1View):
    op = "entity.purge"
    shape = PURGE_SHAPE

    def handle(self, caller, body):
        code = "invalid_record_mutation"
        entity_id = _uuid(body.get("id"), code)
        reason = _text(body.get("reason"), code, MAX_REASON_BYTES)
        out = purge_entity(caller=caller, entity_id=entity_id, reason=reason, confirm=body.get("confirm") is True)
        out["completed_at"] = format_ts(out["completed_at"])
        return Result(out, audited=True)

"""The record mutation, feedback and entity purge routes (api.md §7.4–§7.6): each body's rules in its contract
here, the work in formation.curation, formation.feedback and governance.purge, which write their own ledger rows.

What a body cannot show (idempotency keys or record ids repeated within a batch, an unresolvable subject, a
first-person record without a data_subject_id, too many evidence sources: 413 record_mutation_limit) is the
services' to refuse."""

from core.encoding import format_ts
from core.limits import MAX_SUBJECT_BYTES
from formation import curation, feedback
from governance.purge import purge_entity
from memory.vocabulary import PREDICATES

from .base import Result, V1View
from .bodies import answer, choice, count, counts, flag, text, uuid, when
from .contract import Body, Boolean, Integer, ListOf, RouteDoc, Text, Timestamp, Uuid

MAX_OBJECT_BYTES = 1_024
MAX_STATEMENT_BYTES = 16_384
MAX_REASON_BYTES = 1_024
MAX_PAGE = 100
# The vocabulary the migrations seed and formation.curation checks again (it is changed only by migrations).
PREDICATE_NAMES = tuple(name for name, *_ in PREDICATES)

MUTATION = "invalid_record_mutation"
FEEDBACK = "invalid_feedback"


def _object(**kwargs):
    return Text(max_bytes=MAX_OBJECT_BYTES, non_blank=True, **kwargs)


def _statement(**kwargs):
    return Text(max_bytes=MAX_STATEMENT_BYTES, non_blank=True, **kwargs)


def _batch(item):
    return ListOf(item, required=True, min_items=1, max_items=curation.MAX_BATCH)


class _Assertion(Body):
    code = MUTATION
    idempotency_key = Uuid(required=True, description="unique within the batch")
    data_subject_id = Text(max_bytes=MAX_SUBJECT_BYTES, description=(
        "at most 1,024 UTF-8 bytes, no U+0000; required for a speaker term"))
    subject = Text(required=True, max_bytes=MAX_SUBJECT_BYTES, non_blank=True)
    predicate = Text(required=True, choices=PREDICATE_NAMES, description="a vocabulary predicate")
    object = _object(required=True)
    statement = _statement(required=True)
    valid_from = Timestamp()


class RecordAssertRequest(Body):
    code = MUTATION
    records = _batch(_Assertion())


class _Retraction(Body):
    code = MUTATION
    id = Uuid(required=True)
    expected_version = Uuid(required=True)


class RecordRetractRequest(Body):
    code = MUTATION
    records = _batch(_Retraction())


class _Correction(_Retraction):  # a retraction's version check, plus the new value
    object = _object(required=True)
    statement = _statement(required=True)
    valid_from = Timestamp()


class RecordCorrectRequest(Body):
    code = MUTATION
    records = _batch(_Correction())


class FeedbackRecordRequest(Body):
    code = FEEDBACK
    record_id = Uuid(required=True)
    note = _statement(required=True)
    proposed_object = _object()


class _FeedbackAfter(Body):
    code = FEEDBACK
    recorded_at = Timestamp(required=True)
    id = Uuid(required=True)


class FeedbackListRequest(Body):
    code = FEEDBACK
    record_id = Uuid()
    open_only = Boolean()
    limit = Integer(min_value=1, max_value=MAX_PAGE)
    after = _FeedbackAfter()


class FeedbackPromoteRequest(Body):
    code = FEEDBACK
    id = Uuid(required=True)
    expected_version = Uuid(required=True, description="the record's version")


class EntityPurgeRequest(Body):
    code = MUTATION  # the purge route answers with the record mutations' code
    id = Uuid(required=True)
    reason = Text(required=True, max_bytes=MAX_REASON_BYTES, non_blank=True)
    confirm = Boolean()


# Success bodies.


AssertedRecord = answer("AssertedRecord", {"id": uuid(), "version": uuid(), "source_observation_id": uuid(),
                                            "replayed": flag()})
Asserted = answer("Asserted", {"records": [AssertedRecord]})
CorrectedRecord = answer("CorrectedRecord", {"original_id": uuid(), "id": uuid(), "version": uuid(),
                                              "source_observation_id": uuid()})
Corrected = answer("Corrected", {"records": [CorrectedRecord]})
RetractedRecord = answer(
    "RetractedRecord",
    {"id": uuid(), "version": uuid(), "operation_id": uuid(), "principal_id": text(), "retracted_at": when()},
    {"replacement_source_observation_id": uuid(), "replacement_record_id": uuid()})
Retracted = answer("Retracted", {"records": [RetractedRecord]})
Feedback = answer(
    "Feedback",
    {"id": uuid(), "record_id": uuid(), "note": text(), "recorded_by": text(), "recorded_at": when()},
    {"proposed_object": text(), "promoted_by": text(), "promoted_at": when(), "replacement_record_id": uuid()})
FeedbackCursor = answer("FeedbackCursor", {"recorded_at": when(), "id": uuid()})
FeedbackList = answer("FeedbackList", {"feedback": [Feedback]}, {"next": FeedbackCursor})
Promoted = answer(
    "Promoted",
    {"id": uuid(), "record_id": uuid(), "operation": choice(["record.correct", "record.retract"]),
     "version": uuid(), "promoted_at": when()},
    {"replacement_record_id": uuid()})
Purge = answer("Purge", {
    "entity_id": uuid(), "canonical_name": text(), "reason": text(), "previewed": flag(), "removed": counts(),
    "residual": counts(), "contributing_subjects": count(), "claims_from_unattributed_turns": count(),
    "source_turns_kept": count(), "completed_at": when()})


def _drop_empty(data, *keys):
    """Presence rules (api.md §4): these keys are omitted rather than sent as null."""
    for key in keys:
        if data.get(key) is None:
            data.pop(key, None)
    return data


class RecordsAssertView(V1View):
    op = "record.assert"
    request_body = RecordAssertRequest
    response_body = Asserted
    doc = RouteDoc("records", "Curate new records (all or nothing)",
                   errors={400: [MUTATION], 409: ["idempotency_conflict", "record_conflict"]})

    def handle(self, caller, body):
        # "" names no subject: the record is project-wide.
        items = [{**r, "data_subject_id": r.get("data_subject_id") or None, "valid_from": r.get("valid_from")}
                 for r in body["records"]]
        out = curation.assert_records(caller=caller, items=items)
        return Result({"records": out}, audited=True)


class RecordsCorrectView(V1View):
    op = "record.correct"
    request_body = RecordCorrectRequest
    response_body = Corrected
    doc = RouteDoc("records", "Replace the object of current records",
                   errors={400: [MUTATION], 404: ["not_found"], 409: ["record_conflict"],
                           413: ["record_mutation_limit"]})

    def handle(self, caller, body):
        items = [{**r, "valid_from": r.get("valid_from")} for r in body["records"]]
        out = curation.correct_records(caller=caller, items=items)
        return Result({"records": out}, audited=True)


class RecordsRetractView(V1View):
    op = "record.retract"
    request_body = RecordRetractRequest
    response_body = Retracted
    doc = RouteDoc("records", "Retract current records",
                   errors={400: [MUTATION], 404: ["not_found"], 409: ["record_conflict"],
                           413: ["record_mutation_limit"]})

    def handle(self, caller, body):
        out = curation.retract_records(caller=caller, items=body["records"])
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
    request_body = FeedbackRecordRequest
    response_body = Feedback
    doc = RouteDoc("feedback", "Report a problem with a record", errors={400: [FEEDBACK], 404: ["not_found"]})

    def handle(self, caller, body):
        item = feedback.record_feedback(caller=caller, record_id=body["record_id"], note=body["note"],
                                        proposed_object=body.get("proposed_object"))
        return Result(_feedback_object(item), audited=True)


class FeedbackListView(V1View):
    op = "feedback.list"
    request_body = FeedbackListRequest
    response_body = FeedbackList
    doc = RouteDoc("feedback", "Feedback, newest first", errors={400: [FEEDBACK]})

    def handle(self, caller, body):
        after = body.get("after")
        items, following = feedback.list_feedback(
            project=caller.project, record_id=body.get("record_id"), open_only=body.get("open_only", False),
            limit=body.get("limit", feedback.DEFAULT_PAGE),
            after=(after["recorded_at"], after["id"]) if after is not None else None)
        data = {"feedback": [_feedback_object(item) for item in items]}
        if following is not None:
            data["next"] = {"recorded_at": format_ts(following[0]), "id": following[1]}
        return Result(data, magnitude=len(items))


class FeedbackPromoteView(V1View):
    op = "feedback.promote"
    request_body = FeedbackPromoteRequest
    response_body = Promoted
    doc = RouteDoc("feedback", "Apply feedback as a correction or a retraction",
                   errors={400: [FEEDBACK], 404: ["not_found"],
                           409: ["feedback_already_promoted", "record_conflict"], 413: ["record_mutation_limit"]})

    def handle(self, caller, body):
        out = feedback.promote_feedback(caller=caller, feedback_id=body["id"],
                                        expected_version=body["expected_version"])
        out["promoted_at"] = format_ts(out["promoted_at"])
        return Result(_drop_empty(out, "replacement_record_id"), audited=True)


class EntitiesPurgeView(V1View):
    op = "entity.purge"
    request_body = EntityPurgeRequest
    response_body = Purge
    doc = RouteDoc("entities", "Purge a named entity (a dry run unless confirm is true)",
                   errors={400: [MUTATION], 404: ["not_found"]})

    def handle(self, caller, body):
        out = purge_entity(caller=caller, entity_id=body["id"], reason=body["reason"],
                           confirm=body.get("confirm") is True)
        out["completed_at"] = format_ts(out["completed_at"])
        return Result(out, audited=True)

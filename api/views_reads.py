"""The inspection routes (api.md §7.1 contexts, §7.3 citations and messages, §7.4 record list and
history, §7.6 entity list and get): each body's contract, then one selector, answering 200.

Every wire rule (UUID spellings, limits, cursor fields and ranges, the message window) is its route's Body; what
depends on stored data (a message's length and character boundaries, a digest that no longer matches, an unknown
id) stays with the selector."""

from django.conf import settings
from rest_framework import serializers

from core.closed_sets import IDENTITY_KINDS, ROLES
from memory import contexts, selectors

from .base import Result, V1View
from .bodies import IdCursor, answer, choice, count, flag, listing, nullable, number, text, uuid, when
from .contract import Body, Integer, RouteDoc, Text, Timestamp, Uuid, rule_error
from .views import Freshness

INT32_MAX = 2**31 - 1
PAGE_MAX = 100
PAGE_DEFAULT = 20
MESSAGE_MAX_START = 65_536  # a stored message holds at most 65,536 bytes
MESSAGE_MIN_LIMIT = 4  # one window always holds a whole character
MESSAGE_MAX_LIMIT = 4096
NIL_UUID = "00000000-0000-0000-0000-000000000000"
_DIGEST = "[0-9a-f]{64}"


# ---------------------------------------------------------------------------------------------
# Request contracts.


class ChunkId(Uuid):
    """A chunk id: the nil UUID names no message."""

    def check(self, value):
        super().check(value)
        if value == NIL_UUID:
            self.refuse()

    def openapi(self):
        return {**super().openapi(), "not": {"enum": [NIL_UUID]}}


def _page_limit(high=PAGE_MAX):
    # limit 0 is a 400 on these routes (api.md §6), unlike subjects and artifacts.
    return Integer(min_value=1, max_value=high)


class IdAfter(Body):
    id = Uuid(required=True)


class CitationAfter(Body):
    """the previous page's next"""

    source_observation_id = Uuid(required=True)
    source_ordinal = Integer(min_value=0, max_value=INT32_MAX, required=True)
    byte_start = Integer(min_value=0, max_value=INT32_MAX, required=True)


class HistoryBefore(Body):
    known_until = Timestamp(required=True)
    history_id = Uuid(required=True)


class ContextRequest(Body):
    code = "invalid_context"
    data_subject_id = Text(non_blank=True, required=True)
    max_characters = Integer(min_value=1, max_value=settings.MEMOIR_BUNDLE_CHARACTERS)


class CitationRequest(Body):
    code = "invalid_citation"
    id = Uuid(required=True)
    limit = _page_limit(selectors.CITATION_MAX_LIMIT)
    after = CitationAfter()


class MessageRequest(Body):
    """byte_start > 0 needs expected_digest"""

    code = "invalid_message_window"
    chunk_id = ChunkId(required=True)
    byte_start = Integer(min_value=0, max_value=MESSAGE_MAX_START,
                         description="at most the message's length, on a character boundary; with "
                                     "expected_digest when > 0")
    byte_limit = Integer(min_value=MESSAGE_MIN_LIMIT, max_value=MESSAGE_MAX_LIMIT)
    expected_digest = Text(pattern=f"^(?:{_DIGEST})?$", description="lowercase hex SHA-256; \"\" is omitted")

    def validate(self, attrs):
        attrs = super().validate(attrs)
        # A continuation must be bound to the message version the previous window came from.
        if attrs.get("byte_start", 0) > 0 and not attrs.get("expected_digest"):
            raise rule_error()
        return attrs

    @classmethod
    def cross_field_schema(cls):
        # The rule `validate` checks, in OpenAPI 3.0 terms (it has no if/then): byte_start ≤ 0 or a digest.
        return {"anyOf": [
            {"properties": {"byte_start": {"type": "integer", "nullable": True, "maximum": 0}}},
            {"required": ["expected_digest"], "properties": {"expected_digest": {"type": "string", "minLength": 64}}},
        ]}


class RecordListRequest(Body):
    code = "invalid_record_page"
    data_subject_id = Text(non_blank=True)
    limit = _page_limit()
    after = IdAfter()


class RecordHistoryRequest(Body):
    code = "invalid_record_page"
    id = Uuid(required=True)
    limit = _page_limit()
    before = HistoryBefore()


class EntityListRequest(Body):
    code = "invalid_entity_page"
    limit = _page_limit()
    after = IdAfter()


class EntityGetRequest(Body):
    code = "invalid_entity_page"
    id = Uuid(required=True)


# ---------------------------------------------------------------------------------------------
# Success bodies. A nested body with plain fields after it is made here rather than by answer(), so it keeps
# its place among them (a field's place is the order it was made in).


ContextSegment = answer("ContextSegment", {"segment_id": uuid(), "level": count(), "from_offset": count(),
                                            "to_offset": count(), "covered": count(), "summary": text()})
ContextMessage = answer("ContextMessage", {"role": choice(ROLES), "content": text()})
ContextTurn = answer("ContextTurn", {"log_offset": count(), "occurred_at": when(),
                                      "messages": [ContextMessage]})
Context = answer("Context", {"segments": ContextSegment(many=True), "turns": ContextTurn(many=True),
                             "watermark": Freshness(), "characters": count(), "truncated": flag()})
Interval = answer("Interval", {"from": nullable(when()), "until": nullable(when()), "from_inclusive": flag(),
                               "until_inclusive": flag()})
RecordRetraction = answer(
    "RecordRetraction", {"operation_id": uuid(), "principal_id": text(), "retracted_at": when()},
    {"replacement_source_observation_id": uuid(), "replacement_record_id": uuid()})
CitationEvidence = answer("CitationEvidence", {
    "source_observation_id": uuid(), "source_ordinal": count(), "log_offset": count(), "role": choice(ROLES),
    "occurred_at": when(), "quote": text(), "byte_start": count(), "byte_end": count(),
    "extractor_version": text(), "context": text(), "context_byte_start": count(),
    "context_byte_end": count(), "context_complete": flag()},
    {"authored_by": text()})
CitationCursor = answer("CitationCursor", {"source_observation_id": uuid(), "source_ordinal": count(),
                                            "byte_start": count()})
Citation = answer("Citation", {
    "version": uuid(), "id": uuid(), "scope": text(), "subject_entity_id": nullable(uuid()),
    "object_entity_id": nullable(uuid()), "predicate": text(), "statement": text(), "confidence": number(),
    "source_role": choice(ROLES), "recorded_at": when(), "valid": Interval(), "known": Interval(),
    "status": choice(["current", "validity_closed", "knowledge_closed", "retracted", "reinterpreted"]),
    "evidence": [CitationEvidence]},
    {"retraction": RecordRetraction, "superseded_by": uuid(), "supersession_source_observation_id": uuid(),
     "next": CitationCursor})
Message = answer("Message", {
    "chunk_id": uuid(), "source_id": uuid(), "ordinal": count(), "role": choice(ROLES), "occurred_at": when(),
    "content_digest": serializers.RegexField(f"^{_DIGEST}$"),  # no field kind for a pattern
    "message_bytes": count(), "byte_start": count(), "byte_end": count(), "text": text(), "complete": flag()},
    {"next_byte_start": count()})
RecordSummary = answer("RecordSummary", {
    "version": uuid(), "id": uuid(), "subject_entity_id": nullable(uuid()),
    "object_entity_id": nullable(uuid()), "predicate": text(), "statement_preview": text(),
    "statement_bytes": count(), "preview_truncated": flag(), "source_role": choice(ROLES),
    "recorded_at": when(), "status": choice(["current", "validity_closed", "knowledge_closed", "retracted"])})
RecordList = answer("RecordList", {"records": [RecordSummary]}, {"next": IdCursor})
RecordIntervals = answer("RecordIntervals", {"valid": Interval, "known": Interval})
ArchivedInterval = answer("ArchivedInterval", {"history_id": uuid(), "valid": Interval(), "known": Interval(),
                                                "ended_by_observation_id": uuid()})
HistoryCursor = answer("HistoryCursor", {"known_until": when(), "history_id": uuid()})
RecordHistory = answer("RecordHistory", {"version": uuid(), "id": uuid(), "current": RecordIntervals,
                                         "previous": [ArchivedInterval]},
                       {"retraction": RecordRetraction, "next": HistoryCursor})
EntitySummary = answer("EntitySummary", {
    "id": uuid(), "identity_kind": choice(IDENTITY_KINDS), "name_preview": text(), "name_bytes": count(),
    "name_truncated": flag(), "alias_count": count(), "first_seen_at": when()})
EntityList = answer("EntityList", {"entities": [EntitySummary]}, {"next": IdCursor})
Entity = answer("Entity", {"id": uuid(), "identity_kind": choice(IDENTITY_KINDS), "canonical_name": text(),
                           "aliases": listing(text()), "first_seen_at": when()},
                {"speaker_subject_id": text()})


# ---------------------------------------------------------------------------------------------
# Views.


class ContextsView(V1View):
    op = "context.assemble"
    request_body = ContextRequest
    response_body = Context
    doc = RouteDoc("turns", "One subject's recent history under a character budget",
                   errors={400: ["invalid_context"]})

    def handle(self, caller, body):
        data = contexts.assemble_context(
            project=caller.project, data_subject_id=body["data_subject_id"],
            max_characters=body.get("max_characters", settings.MEMOIR_BUNDLE_CHARACTERS))
        return Result(data, magnitude=len(data["segments"]) + len(data["turns"]))


class CitationsView(V1View):
    op = "citation.resolve"
    request_body = CitationRequest
    response_body = Citation
    doc = RouteDoc("sources", "A fact with a page of its verified evidence",
                   errors={400: ["invalid_citation"], 404: ["not_found"], 422: ["citation_limit"]})

    def handle(self, caller, body):
        after = body.get("after")
        if after is not None:
            after = (after["source_observation_id"], after["source_ordinal"], after["byte_start"])
        data = selectors.resolve_citation(project=caller.project, fact_id=body["id"],
                                          limit=body.get("limit", selectors.CITATION_DEFAULT_LIMIT), after=after)
        return Result(data, magnitude=len(data["evidence"]))


class MessagesView(V1View):
    op = "message.get"
    request_body = MessageRequest
    response_body = Message
    doc = RouteDoc("sources", "A byte window of one stored message",
                   errors={400: ["invalid_message_window"], 404: ["not_found"], 409: ["source_changed"]})

    def handle(self, caller, body):
        # "" reads as absent, like any empty optional string the reference ignores.
        data = selectors.get_message(project=caller.project, chunk_id=body["chunk_id"],
                                     byte_start=body.get("byte_start", 0),
                                     byte_limit=body.get("byte_limit", MESSAGE_MAX_LIMIT),
                                     expected_digest=body.get("expected_digest") or None)
        return Result(data, magnitude=1)


class RecordsListView(V1View):
    op = "record.list"
    request_body = RecordListRequest
    response_body = RecordList
    doc = RouteDoc("records", "Records in id order", errors={400: ["invalid_record_page"]})

    def handle(self, caller, body):
        after = body.get("after")
        data = selectors.list_records(project=caller.project, data_subject_id=body.get("data_subject_id"),
                                      limit=body.get("limit", PAGE_DEFAULT),
                                      after=after["id"] if after is not None else None)
        return Result(data, magnitude=len(data["records"]))


class RecordsHistoryView(V1View):
    op = "record.history"
    request_body = RecordHistoryRequest
    response_body = RecordHistory
    doc = RouteDoc("records", "A record's archived intervals, newest first",
                   errors={400: ["invalid_record_page"], 404: ["not_found"]})

    def handle(self, caller, body):
        before = body.get("before")
        if before is not None:
            before = (before["known_until"], before["history_id"])
        data = selectors.record_history(project=caller.project, fact_id=body["id"],
                                        limit=body.get("limit", PAGE_DEFAULT), before=before)
        return Result(data, magnitude=1 + len(data["previous"]))


class EntitiesListView(V1View):
    op = "entity.list"
    request_body = EntityListRequest
    response_body = EntityList
    doc = RouteDoc("entities", "Entities in id order", errors={400: ["invalid_entity_page"]})

    def handle(self, caller, body):
        after = body.get("after")
        data = selectors.list_entities(project=caller.project, limit=body.get("limit", PAGE_DEFAULT),
                                       after=after["id"] if after is not None else None)
        return Result(data, magnitude=len(data["entities"]))


class EntitiesGetView(V1View):
    op = "entity.get"
    request_body = EntityGetRequest
    response_body = Entity
    doc = RouteDoc("entities", "One entity with its aliases",
                   errors={400: ["invalid_entity_page"], 404: ["not_found"]})

    def handle(self, caller, body):
        return Result(selectors.get_entity(project=caller.project, entity_id=body["id"]), magnitude=1)

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
from .bodies import IdCursor
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
# Success bodies.


def _count(**kwargs):
    return serializers.IntegerField(min_value=0, **kwargs)


def _role():
    return serializers.ChoiceField(choices=list(ROLES))


def _identity_kind():
    return serializers.ChoiceField(choices=list(IDENTITY_KINDS))


class ContextSegment(serializers.Serializer):
    segment_id = serializers.UUIDField()
    level = _count()
    from_offset = _count()
    to_offset = _count()
    covered = _count()
    summary = serializers.CharField()


class ContextMessage(serializers.Serializer):
    role = _role()
    content = serializers.CharField()


class ContextTurn(serializers.Serializer):
    log_offset = _count()
    occurred_at = serializers.DateTimeField()
    messages = ContextMessage(many=True)


class Context(serializers.Serializer):
    segments = ContextSegment(many=True)
    turns = ContextTurn(many=True)
    watermark = Freshness()
    characters = _count()
    truncated = serializers.BooleanField()


# "from" is a Python keyword, so the class is built from a mapping.
Interval = type("Interval", (serializers.Serializer,), {
    "__module__": __name__,
    "from": serializers.DateTimeField(allow_null=True),
    "until": serializers.DateTimeField(allow_null=True),
    "from_inclusive": serializers.BooleanField(),
    "until_inclusive": serializers.BooleanField(),
})


class RecordRetraction(serializers.Serializer):
    operation_id = serializers.UUIDField()
    principal_id = serializers.CharField()
    retracted_at = serializers.DateTimeField()
    replacement_source_observation_id = serializers.UUIDField(required=False)
    replacement_record_id = serializers.UUIDField(required=False)


class CitationEvidence(serializers.Serializer):
    source_observation_id = serializers.UUIDField()
    source_ordinal = _count()
    log_offset = _count()
    role = _role()
    occurred_at = serializers.DateTimeField()
    quote = serializers.CharField()
    byte_start = _count()
    byte_end = _count()
    extractor_version = serializers.CharField()
    context = serializers.CharField()
    context_byte_start = _count()
    context_byte_end = _count()
    context_complete = serializers.BooleanField()
    authored_by = serializers.CharField(required=False)


class CitationCursor(serializers.Serializer):
    source_observation_id = serializers.UUIDField()
    source_ordinal = _count()
    byte_start = _count()


class Citation(serializers.Serializer):
    version = serializers.UUIDField()
    id = serializers.UUIDField()
    scope = serializers.CharField()
    subject_entity_id = serializers.UUIDField(allow_null=True)
    object_entity_id = serializers.UUIDField(allow_null=True)
    predicate = serializers.CharField()
    statement = serializers.CharField()
    confidence = serializers.FloatField()
    source_role = _role()
    recorded_at = serializers.DateTimeField()
    valid = Interval()
    known = Interval()
    status = serializers.ChoiceField(choices=["current", "validity_closed", "knowledge_closed", "retracted",
                                              "reinterpreted"])
    evidence = CitationEvidence(many=True)
    retraction = RecordRetraction(required=False)
    superseded_by = serializers.UUIDField(required=False)
    supersession_source_observation_id = serializers.UUIDField(required=False)
    next = CitationCursor(required=False)


class Message(serializers.Serializer):
    chunk_id = serializers.UUIDField()
    source_id = serializers.UUIDField()
    ordinal = _count()
    role = _role()
    occurred_at = serializers.DateTimeField()
    content_digest = serializers.RegexField(f"^{_DIGEST}$")
    message_bytes = _count()
    byte_start = _count()
    byte_end = _count()
    text = serializers.CharField()
    complete = serializers.BooleanField()
    next_byte_start = _count(required=False)


class RecordSummary(serializers.Serializer):
    version = serializers.UUIDField()
    id = serializers.UUIDField()
    subject_entity_id = serializers.UUIDField(allow_null=True)
    object_entity_id = serializers.UUIDField(allow_null=True)
    predicate = serializers.CharField()
    statement_preview = serializers.CharField()
    statement_bytes = _count()
    preview_truncated = serializers.BooleanField()
    source_role = _role()
    recorded_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=["current", "validity_closed", "knowledge_closed", "retracted"])


class RecordList(serializers.Serializer):
    records = RecordSummary(many=True)
    next = IdCursor(required=False)


class RecordIntervals(serializers.Serializer):
    valid = Interval()
    known = Interval()


class ArchivedInterval(serializers.Serializer):
    history_id = serializers.UUIDField()
    valid = Interval()
    known = Interval()
    ended_by_observation_id = serializers.UUIDField()


class HistoryCursor(serializers.Serializer):
    known_until = serializers.DateTimeField()
    history_id = serializers.UUIDField()


class RecordHistory(serializers.Serializer):
    version = serializers.UUIDField()
    id = serializers.UUIDField()
    current = RecordIntervals()
    previous = ArchivedInterval(many=True)
    retraction = RecordRetraction(required=False)
    next = HistoryCursor(required=False)


class EntitySummary(serializers.Serializer):
    id = serializers.UUIDField()
    identity_kind = _identity_kind()
    name_preview = serializers.CharField()
    name_bytes = _count()
    name_truncated = serializers.BooleanField()
    alias_count = _count()
    first_seen_at = serializers.DateTimeField()


class EntityList(serializers.Serializer):
    entities = EntitySummary(many=True)
    next = IdCursor(required=False)


class Entity(serializers.Serializer):
    id = serializers.UUIDField()
    identity_kind = _identity_kind()
    canonical_name = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())
    first_seen_at = serializers.DateTimeField()
    speaker_subject_id = serializers.CharField(required=False)


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

"""The OpenAPI 3 document of the /v1 contract (api.md §7.10), generated through drf-spectacular: request
bodies converted from each view's `shape`, per-route success bodies and the documented refusals, served at
GET /v1/schema without a credential or a ledger row."""
import json
import threading

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.generators import EndpointEnumerator, SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.settings import patched_settings
from rest_framework.schemas.generators import BaseSchemaGenerator

from core.closed_sets import IDENTITY_KINDS, OBJECT_KINDS, ROLES
from core.text import WHITE_SPACE
from core.version import __version__
from memory.recall import MAX_QUESTION_BYTES, SURFACES
from memory.vocabulary import PREDICATES

from .base import READ_ONLY_OPS, UnknownRouteView, V1View
from .errors import CONTENT_TYPE, ApiError, error_response
from .jsonbody import BOOL, INT, INT64_MAX, INT64_MIN, STR, TIMESTAMP, UUID_STR, ArrayOf, Obj

JSON = "application/json"
INT32_MAX = 2**31 - 1
_UUID_RE = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
NIL_UUID = "00000000-0000-0000-0000-000000000000"
# Canonical standard base64 with padding: the character before "==" or "=" leaves its unused bits zero, as the server
# insists.
_BASE64_RE = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$"
_MAX_ARTIFACT_BASE64 = (524_288 + 2) // 3 * 4

# ---------------------------------------------------------------------------------------------
# Request bodies: api.jsonbody specs → JSON Schema.
#
# The generated schema must never call a body invalid that the server accepts (the fuzzer sends such
# bodies and expects a refusal), so route rules only add constraints the route really enforces.
# String lengths are in characters while the contract counts UTF-8 bytes: maxLength N for an N-byte
# cap is the looser of the two, and the byte rule is stated in the description.

_SCALARS = {
    STR.name: {"type": "string"},
    INT.name: {"type": "integer", "format": "int64", "minimum": INT64_MIN, "maximum": INT64_MAX},
    BOOL.name: {"type": "boolean"},
    TIMESTAMP.name: {"type": "string", "format": "date-time",
                     "description": "RFC 3339, upper-case T and Z; fractions finer than a microsecond are truncated"},
    UUID_STR.name: {"type": "string", "format": "uuid", "pattern": f"^{_UUID_RE}$"},
}
# A UUID field where "" reads as omitted (subjects, artifacts).
UUID_OR_EMPTY = {"type": "string", "pattern": f"^(?:{_UUID_RE})?$", "format": None}

# Text patterns, in the regex dialect both JSON Schema and Python share: the server strips Unicode White_Space
# (core.text, the one set) to decide blankness and refuses U+0000 in every text field it stores or matches.
_WS = "".join(f"\\u{ord(c):04x}" for c in sorted(WHITE_SPACE))
NUL_FREE = "^[^\\u0000]*$"
NON_BLANK = f"^[^\\u0000]*[^\\u0000{_WS}][^\\u0000]*$"
EMPTY_OR_NON_BLANK = f"^(?:[^\\u0000]*[^\\u0000{_WS}][^\\u0000]*)?$"
BLANK = f"^[{_WS}]*$"


def _nullable(schema):
    """`null` means omitted (api.md §3), so every optional field also accepts null."""
    out = dict(schema)
    out["nullable"] = True
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _merge(base, extra):
    out = {**base, **extra}
    return {k: v for k, v in out.items() if v is not None}


def request_schema(shape, rules):
    """The JSON Schema of a body shape. `rules` maps a field path ("records[].subject"; "" is the body)
    to extra keywords; "required" on an object path lists its required fields. Every rule must name a
    field of the shape, so a rule cannot outlive the field it constrains."""
    used = set()

    def convert(spec, at):
        extra = dict(rules.get(at, {}))
        if at in rules:
            used.add(at)
        if isinstance(spec, Obj):
            required = list(extra.pop("required", ()))
            missing = [name for name in required if name not in spec.fields]
            if missing:
                raise ValueError(f"required names unknown fields {missing} at {at!r}")
            properties = {}
            for name, field in spec.fields.items():
                sub = convert(field, f"{at}.{name}" if at else name)
                properties[name] = sub if name in required else _nullable(sub)
            out = {"type": "object", "additionalProperties": False, "properties": properties}
            if required:
                out["required"] = required
            return _merge(out, extra)
        if isinstance(spec, ArrayOf):
            return _merge({"type": "array", "items": convert(spec.item, f"{at}[]")}, extra)
        return _merge(_SCALARS[spec.name], extra)

    schema = convert(shape, "")
    unused = set(rules) - used
    if unused:
        raise ValueError(f"rules name fields the shape does not have: {sorted(unused)}")
    return schema


def text(max_len=None, *, non_blank=False, empty_or_non_blank=False, description=None):
    """A string rule: NUL-free always; non_blank (some character outside White_Space) or empty_or_non_blank ("" reads
    as omitted); max_len as the character bound of a byte cap."""
    out = {"pattern": NUL_FREE}
    if non_blank:
        out.update(minLength=1, pattern=NON_BLANK)
    elif empty_or_non_blank:
        out["pattern"] = EMPTY_OR_NON_BLANK
    if max_len is not None:
        out["maxLength"] = max_len
    if description:
        out["description"] = description
    return out


def exactly_one(description, **fields):
    """A body rule naming exactly one of `fields`, each given as (schema when named, schema when not: absent, null
    or a value the server reads as not given)."""
    branches = []
    for name, (given, _) in fields.items():
        properties = {name: given}
        properties.update({other: {**absent, "nullable": True}
                           for other, (_, absent) in fields.items() if other != name})
        branches.append({"required": [name], "properties": properties})
    return {"description": description, "oneOf": branches}


def int_range(low, high):
    return {"minimum": low, "maximum": high}


# ---------------------------------------------------------------------------------------------
# Response bodies.


def obj(required=None, optional=None, *, extra=False):
    properties = {**(required or {}), **(optional or {})}
    out = {"type": "object", "properties": properties, "additionalProperties": extra}
    if required:
        out["required"] = list(required)
    return out


def array(items):
    return {"type": "array", "items": items}


def nullable(schema):
    return {**schema, "nullable": True}


def counts():
    """A map of kind → count; {} when empty (api.md §4)."""
    return {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}


STRING = {"type": "string"}
INTEGER = {"type": "integer"}
COUNT = {"type": "integer", "minimum": 0}
BOOLEAN = {"type": "boolean"}
NUMBER = {"type": "number"}
TS = {"type": "string", "format": "date-time"}
UUID = {"type": "string", "format": "uuid"}
ROLE = {"type": "string", "enum": list(ROLES)}
RECORD_STATUS = {"type": "string", "enum": ["current", "validity_closed", "knowledge_closed", "retracted"]}
INTERVAL = obj({"from": nullable(TS), "until": nullable(TS), "from_inclusive": BOOLEAN, "until_inclusive": BOOLEAN})
ID_CURSOR = obj({"id": UUID})

OBSERVATION_RECEIPT = obj({"id": UUID, "scope": STRING, "log_offset": COUNT})
REBUILDING = obj({"reinterpreted_through": nullable(COUNT), "reinterpreting_through": INTEGER,
                  "sources_acknowledged": COUNT, "sources_skipped": COUNT})
FRESHNESS = obj({"scope": STRING, "stored": nullable(COUNT), "formed": nullable(COUNT), "parked": COUNT},
                {"rebuilding": REBUILDING})

RECALL_EVIDENCE = obj({
    "observation_id": {"type": "string", "description": "\"\" when the source turn is gone"},
    "source_ordinal": COUNT, "quote": STRING, "byte_start": COUNT, "byte_end": COUNT, "context": STRING,
    "context_start": COUNT, "context_complete": BOOLEAN,
})
RECALL_FACT = obj({
    "fact_id": UUID, "subject": STRING, "predicate": STRING, "object": STRING, "statement": STRING,
    "confidence": NUMBER, "valid_from": TS, "valid_until": nullable(TS), "anchored_on": UUID, "source_role": ROLE,
    "hops": {"type": "integer", "minimum": 1, "maximum": 2}, "path": array(STRING), "via": array(STRING),
    "co_derived_with": array(UUID), "evidence": RECALL_EVIDENCE,
})
REPORT = obj(
    {"community_id": STRING, "report_id": STRING, "title": STRING, "summary": STRING, "importance": NUMBER,
     "similarity": NUMBER, "level": INTEGER, "sources": array(STRING)},
    {"parent": STRING})
RECALL_PASSAGE = obj({
    "chunk_id": UUID, "source_id": UUID, "ordinal": COUNT, "role": ROLE, "quote": STRING, "similarity": NUMBER,
    "occurred_at": TS, "complete": BOOLEAN,
})
DEGRADED = {"type": "string", "enum": [
    "citation_context", "semantic_anchors", "reports_withheld_for_subject", "reports", "passages"]}
RECALL = obj({
    "controls": obj({
        "max_characters": {"type": "integer", "minimum": 1}, "max_rows": COUNT,
        "source_roles": array(ROLE), "hops": {"type": "integer", "minimum": 1, "maximum": 2},
        "surfaces": array({"type": "string", "enum": list(SURFACES)}), "themes": BOOLEAN,
    }),
    "anchors": array(obj({"entity_id": UUID, "name": STRING, "type": {"type": "string", "enum": list(OBJECT_KINDS)},
                          "matched": STRING})),
    "facts": array(RECALL_FACT),
    "reports": array(REPORT),
    "passages": array(RECALL_PASSAGE),
    "truncated": BOOLEAN,
    "characters": COUNT,
    "degraded": array(DEGRADED),
    "reach": obj({"terms": COUNT, "anchored": COUNT, "named_nothing_known": BOOLEAN, "facts_per_anchor": counts()}),
})
PASSAGES = obj({
    "generation_id": STRING, "through_offset": nullable(INTEGER), "covered_through_offset": nullable(INTEGER),
    "build_state": STRING, "approximate": BOOLEAN,
    "passages": array(obj({
        "chunk_id": UUID, "source_id": UUID, "ordinal": COUNT, "role": ROLE, "preview": STRING, "similarity": NUMBER,
        "occurred_at": TS, "message_bytes": COUNT, "preview_complete": BOOLEAN, "preview_byte_end": COUNT,
        "content_digest": STRING,
    })),
})
ENTITY_CANDIDATES = obj({
    "generation_id": STRING, "target_count": COUNT, "build_state": STRING, "approximate": BOOLEAN,
    "candidates": array(obj({
        "entity_id": UUID, "identity_kind": {"type": "string", "enum": list(IDENTITY_KINDS)},
        "name_preview": STRING, "name_bytes": COUNT, "name_truncated": BOOLEAN, "similarity": NUMBER,
    })),
})
CONTEXT = obj({
    "segments": array(obj({"segment_id": UUID, "level": COUNT, "from_offset": COUNT, "to_offset": COUNT,
                           "covered": COUNT, "summary": STRING})),
    "turns": array(obj({"log_offset": COUNT, "occurred_at": TS,
                        "messages": array(obj({"role": ROLE, "content": STRING}))})),
    "watermark": FRESHNESS,
    "characters": COUNT,
    "truncated": BOOLEAN,
})
RETRACTION = obj({"operation_id": UUID, "principal_id": STRING, "retracted_at": TS},
                 {"replacement_source_observation_id": UUID, "replacement_record_id": UUID})
CITATION_EVIDENCE = obj(
    {"source_observation_id": UUID, "source_ordinal": COUNT, "log_offset": COUNT, "role": ROLE, "occurred_at": TS,
     "quote": STRING, "byte_start": COUNT, "byte_end": COUNT, "extractor_version": STRING, "context": STRING,
     "context_byte_start": COUNT, "context_byte_end": COUNT, "context_complete": BOOLEAN},
    {"authored_by": STRING})
CITATION_CURSOR = obj({"source_observation_id": UUID, "source_ordinal": COUNT, "byte_start": COUNT})
CITATION = obj(
    {"version": UUID, "id": UUID, "scope": STRING, "subject_entity_id": nullable(UUID),
     "object_entity_id": nullable(UUID), "predicate": STRING, "statement": STRING, "confidence": NUMBER,
     "source_role": ROLE, "recorded_at": TS, "valid": INTERVAL, "known": INTERVAL,
     "status": {"type": "string", "enum": ["current", "validity_closed", "knowledge_closed", "retracted",
                                           "reinterpreted"]},
     "evidence": array(CITATION_EVIDENCE)},
    {"retraction": RETRACTION, "superseded_by": UUID, "supersession_source_observation_id": UUID,
     "next": CITATION_CURSOR})
MESSAGE = obj(
    {"chunk_id": UUID, "source_id": UUID, "ordinal": COUNT, "role": ROLE, "occurred_at": TS,
     "content_digest": {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "message_bytes": COUNT, "byte_start": COUNT,
     "byte_end": COUNT, "text": STRING, "complete": BOOLEAN},
    {"next_byte_start": COUNT})
RECORD_LIST = obj(
    {"records": array(obj({
        "version": UUID, "id": UUID, "subject_entity_id": nullable(UUID), "object_entity_id": nullable(UUID),
        "predicate": STRING, "statement_preview": STRING, "statement_bytes": COUNT, "preview_truncated": BOOLEAN,
        "source_role": ROLE, "recorded_at": TS, "status": RECORD_STATUS}))},
    {"next": ID_CURSOR})
RECORD_HISTORY = obj(
    {"version": UUID, "id": UUID, "current": obj({"valid": INTERVAL, "known": INTERVAL}),
     "previous": array(obj({"history_id": UUID, "valid": INTERVAL, "known": INTERVAL,
                            "ended_by_observation_id": UUID}))},
    {"retraction": RETRACTION, "next": obj({"known_until": TS, "history_id": UUID})})
ASSERTED = obj({"records": array(obj({"id": UUID, "version": UUID, "source_observation_id": UUID,
                                       "replayed": BOOLEAN}))})
CORRECTED = obj({"records": array(obj({"original_id": UUID, "id": UUID, "version": UUID,
                                        "source_observation_id": UUID}))})
RETRACTED = obj({"records": array(obj(
    {"id": UUID, "version": UUID, "operation_id": UUID, "principal_id": STRING, "retracted_at": TS},
    {"replacement_source_observation_id": UUID, "replacement_record_id": UUID}))})
FEEDBACK = obj(
    {"id": UUID, "record_id": UUID, "note": STRING, "recorded_by": STRING, "recorded_at": TS},
    {"proposed_object": STRING, "promoted_by": STRING, "promoted_at": TS, "replacement_record_id": UUID})
FEEDBACK_LIST = obj({"feedback": array(FEEDBACK)}, {"next": obj({"recorded_at": TS, "id": UUID})})
PROMOTED = obj(
    {"id": UUID, "record_id": UUID, "operation": {"type": "string", "enum": ["record.correct", "record.retract"]},
     "version": UUID, "promoted_at": TS},
    {"replacement_record_id": UUID})
ENTITY_LIST = obj(
    {"entities": array(obj({
        "id": UUID, "identity_kind": {"type": "string", "enum": list(IDENTITY_KINDS)}, "name_preview": STRING,
        "name_bytes": COUNT, "name_truncated": BOOLEAN, "alias_count": COUNT, "first_seen_at": TS}))},
    {"next": ID_CURSOR})
ENTITY = obj(
    {"id": UUID, "identity_kind": {"type": "string", "enum": list(IDENTITY_KINDS)}, "canonical_name": STRING,
     "aliases": array(STRING), "first_seen_at": TS},
    {"speaker_subject_id": STRING})
PURGE = obj({
    "entity_id": UUID, "canonical_name": STRING, "reason": STRING, "previewed": BOOLEAN, "removed": counts(),
    "residual": counts(), "contributing_subjects": COUNT, "claims_from_unattributed_turns": COUNT,
    "source_turns_kept": COUNT, "completed_at": TS,
})
_SUBJECT_FIELDS = {"id": UUID, "version": UUID, "label": STRING, "updated_by": STRING, "created_at": TS,
                   "updated_at": TS, "inactive_after": nullable(TS)}
SUBJECT = obj(_SUBJECT_FIELDS, {"external_reference": STRING})
SUBJECT_REPLAYED = obj({**_SUBJECT_FIELDS, "replayed": BOOLEAN}, {"external_reference": STRING})
SUBJECT_LIST = obj({"subjects": array(SUBJECT)}, {"next": ID_CURSOR})
_ARTIFACT_FIELDS = {
    "id": UUID, "version": UUID, "data_subject_id": STRING, "kind": {"type": "string", "enum": ["state", "file"]},
    "name": STRING, "source_observation_id": UUID, "bytes": COUNT, "authored_by": STRING, "created_at": TS,
    "updated_at": TS, "expires_at": nullable(TS),
}
ARTIFACT = obj(_ARTIFACT_FIELDS)
ARTIFACT_PUT = obj({**_ARTIFACT_FIELDS, "replayed": BOOLEAN})
ARTIFACT_CONTENT = obj({**_ARTIFACT_FIELDS, "content": {"type": "string", "format": "byte"}})
ARTIFACT_LIST = obj({"artifacts": array(ARTIFACT)}, {"next": ID_CURSOR})
DELETED = obj({"deleted": {"type": "boolean", "enum": [True]}})
ERASURE = obj(
    {"request_id": UUID, "scope": STRING, "data_subject_id": STRING, "completed_at": TS, "deleted": counts(),
     "residual": counts(), "clean": BOOLEAN},
    {"source_observation_ids": array(UUID)})
EXPORT = obj(
    {"scope": STRING, "data_subject_id": STRING,
     "sections": {"type": "object", "additionalProperties": array({"type": "object"})}, "rows": counts()},
    {"source_observation_ids": array(UUID)})

_NOTIFICATION_ENDPOINT = {"id": UUID, "url": STRING, "created_at": TS}
NOTIFICATION_ENDPOINT = obj(_NOTIFICATION_ENDPOINT, {"disabled_at": TS})
NOTIFICATION_ENDPOINT_CREATED = obj({**_NOTIFICATION_ENDPOINT, "secret": STRING}, {"disabled_at": TS})
NOTIFICATION_ENDPOINTS = obj({"endpoints": array(NOTIFICATION_ENDPOINT)})
NOTIFICATION_DISABLED = obj({"disabled": {"type": "boolean", "enum": [True]}})
NOTIFICATION_DELIVERIES = obj({"deliveries": array(obj(
    {"id": UUID, "endpoint_id": UUID, "url": STRING, "formed_through": INTEGER, "stored_through": INTEGER,
     "attempts": COUNT, "created_at": TS},
    {"delivered_at": TS, "parked_at": TS, "last_status": INTEGER, "last_error": STRING}))})

# Success bodies, by component name.
BODIES = {
    "ObservationReceipt": OBSERVATION_RECEIPT,
    "Freshness": FRESHNESS,
    "Recall": RECALL,
    "Passages": PASSAGES,
    "EntityCandidates": ENTITY_CANDIDATES,
    "Context": CONTEXT,
    "Citation": CITATION,
    "Message": MESSAGE,
    "RecordList": RECORD_LIST,
    "RecordHistory": RECORD_HISTORY,
    "Asserted": ASSERTED,
    "Corrected": CORRECTED,
    "Retracted": RETRACTED,
    "Feedback": FEEDBACK,
    "FeedbackList": FEEDBACK_LIST,
    "Promoted": PROMOTED,
    "EntityList": ENTITY_LIST,
    "Entity": ENTITY,
    "Purge": PURGE,
    "SubjectReplayed": SUBJECT_REPLAYED,
    "Subject": SUBJECT,
    "SubjectList": SUBJECT_LIST,
    "ArtifactPut": ARTIFACT_PUT,
    "ArtifactContent": ARTIFACT_CONTENT,
    "ArtifactList": ARTIFACT_LIST,
    "Deleted": DELETED,
    "Erasure": ERASURE,
    "Export": EXPORT,
    "NotificationEndpointCreated": NOTIFICATION_ENDPOINT_CREATED,
    "NotificationEndpoints": NOTIFICATION_ENDPOINTS,
    "NotificationDisabled": NOTIFICATION_DISABLED,
    "NotificationDeliveries": NOTIFICATION_DELIVERIES,
}

# ---------------------------------------------------------------------------------------------
# Refusals (api.md §2).

ERROR = obj({"error": obj({"code": STRING, "message": STRING})})
_STATUS_TEXT = {
    400: "The body or a field is not valid", 401: "No valid credential (one body for every cause)",
    403: "The credential is read_only", 404: "Unknown, another project's or erased", 405: "Wrong method",
    409: "Conflict", 413: "Too many evidence sources", 422: "Too large", 429: "Over a limit",
    500: "Unexpected failure", 501: "Not enabled on this deployment", 503: "Unavailable",
}
_RETRY_AFTER = {"Retry-After": {"description": "1, for rate_limited and no_database_capacity",
                                "schema": {"type": "integer"}}}


class Route:
    """What the document says about one op beyond its shape."""

    def __init__(self, tag, summary, *, rules=None, success=200, body=None, errors=None, description=""):
        self.tag = tag
        self.summary = summary
        self.rules = rules or {}
        self.success = success
        self.body = body
        self.errors = errors or {}
        self.description = description


def _page_limit(high=100):
    return int_range(1, high)


_SUBJECT_CAP = "at most 1,024 UTF-8 bytes, no U+0000"
# Erasure and export name a non-blank subject or a non-empty list of turns, never both; a blank subject and an
# empty list read as not given.
ONE_SELECTOR = exactly_one(
    "exactly one of a non-blank data_subject_id or a non-empty source_observation_ids",
    data_subject_id=({"type": "string", "pattern": NON_BLANK}, {"type": "string", "pattern": BLANK}),
    source_observation_ids=({"type": "array", "minItems": 1}, {"type": "array", "maxItems": 0}))
ROUTES = {
    "observe": Route("turns", "Store one conversation turn", success=201, body="ObservationReceipt", rules={
        "": {"required": ["messages"], "anyOf": [
            {"properties": {"messages": {"type": "array", "items": {"required": ["group_ordinal"],
                                                                    "properties": {"group_ordinal": {"type": "integer"}}}}}},
            {"properties": {"messages": {"type": "array", "items": {"properties": {
                "role": {"type": "string", "enum": [r for r in ROLES if r != "tool"]},
                "group_ordinal": {"type": "integer", "nullable": True, "enum": [None]}}}}}}],
            "description": "group_ordinal on every message or on none; a turn with a tool message gives them"},
        "messages": {"minItems": 1, "maxItems": 64, "description": "total content at most 262,144 UTF-8 bytes"},
        "messages[]": {"required": ["role", "content"]},
        "messages[].role": {"enum": list(ROLES)},
        "messages[].content": text(65_536, non_blank=True, description="at most 65,536 UTF-8 bytes, no U+0000"),
        "messages[].group_ordinal": {"minimum": 0, "maximum": 63, "description": "on all messages or none; starts at 0, "
                                     "each next equals the previous or the previous + 1"},
        "data_subject_id": text(1024, description=_SUBJECT_CAP + "; \"\" means project-wide"),
    }, errors={400: ["invalid_turn"], 409: ["idempotency_conflict"], 429: ["rate_limited"]},
        description="A replay of the same idempotency_key and fingerprint answers 201 with the original receipt."),
    "freshness": Route("turns", "How far formation has caught up", body="Freshness"),
    "recall": Route("recall", "Cited facts about what a question names", body="Recall", rules={
        "": {"required": ["question"]},
        "question": text(MAX_QUESTION_BYTES, non_blank=True, description=(
            "at most 8,192 UTF-8 bytes, 512 distinct terms and 32,768 term bytes; never truncated")),
        "max_characters": int_range(1, settings.MEMOIR_BUNDLE_CHARACTERS),
        "source_roles": {"minItems": 1, "maxItems": len(ROLES), "uniqueItems": True},
        "source_roles[]": {"enum": list(ROLES)},
        "surfaces": {"minItems": 1, "maxItems": len(SURFACES), "uniqueItems": True},
        "surfaces[]": {"enum": list(SURFACES)},
        "hops": {"description": "clamped into [1, 2], never refused"},
        "data_subject_id": text(description="no U+0000; \"\" means none"),
    }, errors={400: ["invalid_question", "invalid_recall_controls"]}),
    "embedding.search": Route("recall", "Hybrid passage search: lexical, plus vectors of the active generation", body="Passages", rules={
        "": {"required": ["question"]},
        "question": text(MAX_QUESTION_BYTES, non_blank=True),
        "limit": int_range(1, 32),
        "candidates": {**int_range(0, 1000), "description": "when > 0, at least limit"},
        "data_subject_id": text(1024, description=_SUBJECT_CAP),
        "source_role": {"enum": ["", *ROLES]},
    }, errors={400: ["invalid_passage_query"], 503: ["passage_unavailable"]}),
    "entity_embedding.search": Route("recall", "Entities nearest the question by embedding (names and quotes)",
                                     body="EntityCandidates", rules={
        "": {"required": ["question"]},
        "question": text(MAX_QUESTION_BYTES, non_blank=True),
        "limit": int_range(1, 32),
        "candidates": {**int_range(0, 1000), "description": "when > 0, at least limit"},
    }, errors={400: ["invalid_entity_candidate_query"], 503: ["entity_candidates_unavailable"]}),
    "report_embedding.search": Route("recall", "Report candidates (503 in v1)", success=None, rules={
        "": {"required": ["question"]},
        "question": text(MAX_QUESTION_BYTES, non_blank=True),
        "limit": int_range(1, 32),
        "candidates": {**int_range(0, 1000), "description": "when > 0, at least limit"},
    }, errors={400: ["invalid_report_candidate_query"], 503: ["report_candidates_unavailable"]}),
    "context.assemble": Route("turns", "One subject's recent history under a character budget", body="Context", rules={
        "": {"required": ["data_subject_id"]},
        "data_subject_id": text(non_blank=True),
        "max_characters": int_range(1, settings.MEMOIR_BUNDLE_CHARACTERS),
    }, errors={400: ["invalid_context"]}),
    "citation.resolve": Route("sources", "A fact with a page of its verified evidence", body="Citation", rules={
        "": {"required": ["id"]},
        "limit": int_range(1, 32),
        "after": {"required": ["source_observation_id", "source_ordinal", "byte_start"],
                  "description": "the previous page's next"},
        "after.source_ordinal": int_range(0, INT32_MAX),
        "after.byte_start": int_range(0, INT32_MAX),
    }, errors={400: ["invalid_citation"], 404: ["not_found"], 422: ["citation_limit"]}),
    "message.get": Route("sources", "A byte window of one stored message", body="Message", rules={
        "": {"required": ["chunk_id"], "anyOf": [
            {"properties": {"byte_start": {"type": "integer", "nullable": True, "maximum": 0}}},
            {"required": ["expected_digest"], "properties": {"expected_digest": {"type": "string", "minLength": 64}}}],
            "description": "byte_start > 0 needs expected_digest"},
        "chunk_id": {"not": {"enum": [NIL_UUID]}},
        "byte_start": {**int_range(0, 65_536), "description": "on a character boundary; with expected_digest when > 0"},
        "byte_limit": int_range(4, 4096),
        "expected_digest": {"pattern": "^(?:[0-9a-f]{64})?$", "description": "lowercase hex SHA-256; \"\" is omitted"},
    }, errors={400: ["invalid_message_window"], 404: ["not_found"], 409: ["source_changed"]}),
    "record.list": Route("records", "Records in id order", body="RecordList", rules={
        "data_subject_id": text(non_blank=True),
        "limit": _page_limit(),
        "after": {"required": ["id"]},
    }, errors={400: ["invalid_record_page"]}),
    "record.history": Route("records", "A record's archived intervals, newest first", body="RecordHistory", rules={
        "": {"required": ["id"]},
        "limit": _page_limit(),
        "before": {"required": ["known_until", "history_id"]},
    }, errors={400: ["invalid_record_page"], 404: ["not_found"]}),
    "record.assert": Route("records", "Curate new records (all or nothing)", body="Asserted", rules={
        "": {"required": ["records"]},
        "records": {"minItems": 1, "maxItems": 20},
        "records[]": {"required": ["idempotency_key", "subject", "predicate", "object", "statement"]},
        "records[].idempotency_key": {"description": "unique within the batch"},
        "records[].data_subject_id": text(1024, description=_SUBJECT_CAP + "; required for a speaker term"),
        "records[].subject": text(1024, non_blank=True),
        "records[].predicate": {"enum": [name for name, *_ in PREDICATES], "description": "a vocabulary predicate"},
        "records[].object": text(1024, non_blank=True),
        "records[].statement": text(16_384, non_blank=True),
    }, errors={400: ["invalid_record_mutation"], 409: ["idempotency_conflict", "record_conflict"]}),
    "record.correct": Route("records", "Replace the object of current records", body="Corrected", rules={
        "": {"required": ["records"]},
        "records": {"minItems": 1, "maxItems": 20},
        "records[]": {"required": ["id", "expected_version", "object", "statement"]},
        "records[].object": text(1024, non_blank=True),
        "records[].statement": text(16_384, non_blank=True),
    }, errors={400: ["invalid_record_mutation"], 404: ["not_found"], 409: ["record_conflict"],
               413: ["record_mutation_limit"]}),
    "record.retract": Route("records", "Retract current records", body="Retracted", rules={
        "": {"required": ["records"]},
        "records": {"minItems": 1, "maxItems": 20},
        "records[]": {"required": ["id", "expected_version"]},
    }, errors={400: ["invalid_record_mutation"], 404: ["not_found"], 409: ["record_conflict"],
               413: ["record_mutation_limit"]}),
    "feedback.record": Route("feedback", "Report a problem with a record", body="Feedback", rules={
        "": {"required": ["record_id", "note"]},
        "note": text(16_384, non_blank=True),
        "proposed_object": text(1024, non_blank=True),
    }, errors={400: ["invalid_feedback"], 404: ["not_found"]}),
    "feedback.list": Route("feedback", "Feedback, newest first", body="FeedbackList", rules={
        "limit": _page_limit(),
        "after": {"required": ["recorded_at", "id"]},
    }, errors={400: ["invalid_feedback"]}),
    "feedback.promote": Route("feedback", "Apply feedback as a correction or a retraction", body="Promoted", rules={
        "": {"required": ["id", "expected_version"]},
        "expected_version": {"description": "the record's version"},
    }, errors={400: ["invalid_feedback"], 404: ["not_found"],
               409: ["feedback_already_promoted", "record_conflict"], 413: ["record_mutation_limit"]}),
    "entity.list": Route("entities", "Entities in id order", body="EntityList", rules={
        "limit": _page_limit(),
        "after": {"required": ["id"]},
    }, errors={400: ["invalid_entity_page"]}),
    "entity.get": Route("entities", "One entity with its aliases", body="Entity", rules={
        "": {"required": ["id"]},
    }, errors={400: ["invalid_entity_page"], 404: ["not_found"]}),
    "entity.purge": Route("entities", "Purge a named entity (a dry run unless confirm is true)", body="Purge", rules={
        "": {"required": ["id", "reason"]},
        "reason": text(1024, non_blank=True),
    }, errors={400: ["invalid_record_mutation"], 404: ["not_found"]}),
    "subject.register": Route("subjects", "Register a data subject (idempotent)", body="SubjectReplayed", rules={
        "": {"required": ["idempotency_key"]},
        "external_reference": text(1024, empty_or_non_blank=True,
                                   description="\"\" is omitted; otherwise non-blank, at most 1,024 UTF-8 bytes"),
        "label": text(256, empty_or_non_blank=True,
                      description="\"\" is omitted; otherwise non-blank, at most 256 UTF-8 bytes"),
    }, errors={400: ["invalid_subject"], 404: ["not_found"], 409: ["subject_conflict"]}),
    "subject.get": Route("subjects", "One subject by id or by external reference", body="Subject", rules={
        "": exactly_one("exactly one of id and external_reference",
                        id=({"type": "string", "minLength": 1}, {"type": "string", "maxLength": 0}),
                        external_reference=({"type": "string", "minLength": 1}, {"type": "string", "maxLength": 0})),
        "id": UUID_OR_EMPTY,
        "external_reference": text(1024, empty_or_non_blank=True),
    }, errors={400: ["invalid_subject"], 404: ["not_found"]}),
    "subject.list": Route("subjects", "Subjects in id order", body="SubjectList", rules={
        "after": UUID_OR_EMPTY,
        "limit": {**int_range(0, 100), "description": "0 or omitted means 20"},
    }, errors={400: ["invalid_subject"]}),
    "subject.update": Route("subjects", "Replace a subject's reference and label", body="SubjectReplayed", rules={
        "": {"required": ["id", "expected_version"]},
        "external_reference": text(1024, empty_or_non_blank=True, description="omitted or \"\" clears it"),
        "label": text(256, empty_or_non_blank=True, description="omitted or \"\" clears it"),
    }, errors={400: ["invalid_subject"], 404: ["not_found"], 409: ["subject_conflict"]}),
    "artifact.put": Route("artifacts", "Create, update or replay an artifact", body="ArtifactPut", rules={
        "": {"required": ["id", "data_subject_id", "kind", "content"]},
        "data_subject_id": text(1024, non_blank=True, description=_SUBJECT_CAP),
        "kind": {"enum": ["state", "file"]},
        "name": text(256, empty_or_non_blank=True,
                     description="\"\" by default; otherwise non-blank, at most 256 UTF-8 bytes"),
        "content": {"pattern": _BASE64_RE, "maxLength": _MAX_ARTIFACT_BASE64,
                    "description": "canonical standard base64 with padding, at most 524,288 decoded bytes"},
        "expected_version": {**UUID_OR_EMPTY,
                             "description": "omitted: unconditional (last write wins); given: compare-and-set"},
    }, errors={400: ["invalid_artifact"], 404: ["not_found"], 409: ["artifact_conflict"],
               429: ["storage_capacity"]}),
    "artifact.get": Route("artifacts", "One artifact with its content", body="ArtifactContent", rules={
        "": {"required": ["id"]},
        "data_subject_id": text(1024, empty_or_non_blank=True),
    }, errors={400: ["invalid_artifact"], 404: ["not_found"]}),
    "artifact.list": Route("artifacts", "Artifacts in id order", body="ArtifactList", rules={
        "kind": {"enum": ["", "state", "file"]},
        "name_prefix": text(256, description="a literal prefix"),
        "data_subject_id": text(1024, empty_or_non_blank=True),
        "after": UUID_OR_EMPTY,
        "limit": {**int_range(0, 100), "description": "0 or omitted means 20"},
    }, errors={400: ["invalid_artifact"]}),
    "artifact.delete": Route("artifacts", "Delete an artifact (at its current version when one is given)",
                             body="Deleted", rules={
        "": {"required": ["id"]},
        "expected_version": {**UUID_OR_EMPTY, "description": "omitted: delete whatever version is current"},
        "data_subject_id": text(1024, empty_or_non_blank=True),
    }, errors={400: ["invalid_artifact"], 404: ["not_found"], 409: ["artifact_conflict"]}),
    "erase": Route("governance", "Erase a data subject or source turns, with a receipt", body="Erasure", rules={
        "": ONE_SELECTOR,
        "data_subject_id": {"maxLength": 1024, "description": _SUBJECT_CAP},
        "source_observation_ids": {"maxItems": 10_000},
        "reason": text(1024),
    }, errors={400: ["no_subject", "invalid_erasure"]}),
    "export": Route("governance", "Export a data subject's or source turns' rows", body="Export", rules={
        "": ONE_SELECTOR,
        "data_subject_id": {"maxLength": 1024, "description": _SUBJECT_CAP},
        "source_observation_ids": {"maxItems": 10_000},
    }, errors={400: ["no_subject", "invalid_export"], 422: ["export_too_large"]}),
}
_NOTIFY_OFF = "With MEMOIR_NOTIFY_DESTINATIONS unset: 501 notifications_unavailable, the body unread."
ROUTES.update({
    "notification.register": Route("notifications", "Register an HTTPS endpoint; its secret is shown once",
                                   body="NotificationEndpointCreated", description=_NOTIFY_OFF, rules={
        "": {"required": ["url"]},
        "url": text(2048, non_blank=True, description="https, an allowed host, no credentials, a public address"),
    }, errors={400: ["invalid_destination"], 409: ["invalid_destination"], 501: ["notifications_unavailable"]}),
    "notification.list": Route("notifications", "The project's endpoints, newest first", body="NotificationEndpoints",
                               description=_NOTIFY_OFF, errors={501: ["notifications_unavailable"]}),
    "notification.disable": Route("notifications", "Disable an endpoint", body="NotificationDisabled",
                                  description=_NOTIFY_OFF, rules={"": {"required": ["id"]}},
                                  errors={400: ["invalid_destination"], 404: ["not_found"],
                                          501: ["notifications_unavailable"]}),
    "notification.deliveries": Route("notifications", "Deliveries, newest first", body="NotificationDeliveries",
                                     description=_NOTIFY_OFF, rules={
        "limit": {"description": "0 or omitted means 20; clamped into [1, 100]"},
    }, errors={501: ["notifications_unavailable"]}),
})


def _error_response(status, codes):
    schema = obj({"error": obj({"code": {"type": "string", "enum": sorted(set(codes))}, "message": STRING})})
    out = {"description": _STATUS_TEXT[status], "content": {JSON: {"schema": schema}}}
    if status in (429, 503):
        out["headers"] = _RETRY_AFTER
    return out


# Refusals the base view gives every route; a status whose codes are exactly these points at a shared
# component, so the document states each of them once.
COMMON_ERRORS = {
    401: ("Unauthenticated", ["unauthenticated"]),
    403: ("Forbidden", ["forbidden"]),
    405: ("MethodNotAllowed", ["method_not_allowed"]),
    429: ("RateLimited", ["rate_limited"]),
    500: ("Internal", ["internal"]),
    503: ("NoDatabaseCapacity", ["no_database_capacity"]),
    400: ("InvalidBody", ["invalid_body"]),
}


def route_errors(view_cls, route):
    """status → response: the base view's refusals (api.md §1.4, §2) plus the route's own codes."""
    errors = {status: list(COMMON_ERRORS[status][1]) for status in (401, 405, 429, 500, 503)}
    if view_cls.op not in READ_ONLY_OPS:
        errors[403] = ["forbidden"]
    if view_cls.method == "POST" and view_cls.reads_body:
        errors[400] = ["invalid_body"]
    for status, codes in route.errors.items():
        errors[status] = [*errors.get(status, []), *codes]
    out = {}
    for status, codes in sorted(errors.items()):
        common = COMMON_ERRORS.get(status)
        if common is not None and codes == common[1]:
            out[str(status)] = {"$ref": f"#/components/responses/{common[0]}"}
        else:
            out[str(status)] = _error_response(status, codes)
    return out


def route_operation(view_cls):
    """The OpenAPI operation object of one V1View subclass."""
    route = ROUTES.get(view_cls.op)
    if route is None:
        raise LookupError(f"the /v1 route with op {view_cls.op!r} has no entry in api.openapi.ROUTES")
    operation = {
        "operationId": view_cls.op.replace(".", "_"),
        "summary": route.summary,
        "tags": [route.tag],
        "security": [{"bearerAuth": []}],
        "x-memoir-op": view_cls.op,
        "x-memoir-read-only": view_cls.op in READ_ONLY_OPS,
    }
    if route.description:
        operation["description"] = route.description
    if view_cls.method == "POST" and view_cls.reads_body:
        operation["requestBody"] = {"required": True, "content": {JSON: {
            "schema": request_schema(view_cls.shape, route.rules)}}}
    elif route.rules:
        raise ValueError(f"{view_cls.op} reads no body but has request rules")
    responses = {}
    if route.success is not None:
        responses[str(route.success)] = {"description": "Success", "content": {JSON: {
            "schema": {"$ref": f"#/components/schemas/{route.body}"}}}}
    responses.update(route_errors(view_cls, route))
    operation["responses"] = dict(sorted(responses.items()))
    return operation


# ---------------------------------------------------------------------------------------------
# drf-spectacular glue: V1View routes serve one method and have no serializers, so the enumerator reads
# the method from the view and the AutoSchema builds the operation from ROUTES and `shape`.


def is_v1_route(callback):
    cls = getattr(callback, "cls", None)
    return isinstance(cls, type) and issubclass(cls, V1View) and not issubclass(cls, UnknownRouteView)


class V1EndpointEnumerator(EndpointEnumerator):
    def should_include_endpoint(self, path, callback):
        return is_v1_route(callback)

    def get_allowed_methods(self, callback):
        return [callback.cls.method]


class V1AutoSchema(AutoSchema):
    def get_operation(self, path, path_regex, path_prefix, method, registry):
        return route_operation(type(self.view))


class V1SchemaGenerator(SchemaGenerator):
    """The generator of the /v1 document, and so of `manage.py check --deploy`'s schema check
    (SPECTACULAR_SETTINGS["DEFAULT_GENERATOR_CLASS"]), which then checks the contract this project serves."""

    endpoint_inspector_cls = V1EndpointEnumerator

    def get_schema(self, request=None, public=False):
        # patched_settings mutates spectacular's global settings; one generation at a time.
        with _generation_lock, patched_settings(SPECTACULAR_PATCHES):
            return super().get_schema(request=request, public=public)

    def create_view(self, callback, method, request=None):
        # A V1View serves its one `method` (every other reaches its 405): build it plainly, with the V1 schema.
        view = BaseSchemaGenerator.create_view(self, callback, method, request)
        view.swagger_fake_view = True
        self._set_schema_to_view(view, V1AutoSchema())
        return view


BEARER_SCHEME = {"type": "http", "scheme": "bearer", "description": "mem_ followed by 43 base64url characters"}


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):
    """How drf-spectacular documents api.authentication.BearerAuthentication (registered on import)."""

    target_class = "api.authentication.BearerAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return dict(BEARER_SCHEME)


_UNAUTHENTICATED = {
    "/health": {"get": {"operationId": "health", "summary": "Liveness", "tags": ["service"], "security": [],
                        "responses": {"200": {"description": "Alive", "content": {JSON: {"schema": obj(
                            {"status": {"type": "string", "enum": ["ok"]}})}}}}}},
    "/ready": {"get": {"operationId": "ready", "summary": "Readiness (SELECT 1, cached for 1 s)", "tags": ["service"],
                       "security": [], "responses": {
                           "200": {"description": "Ready", "content": {JSON: {"schema": obj(
                               {"status": {"type": "string", "enum": ["ready"]}},
                               {"warnings": {**array({"type": "string"}), "description":
                                             "present while the database server's log would keep content"}})}}},
                           "503": {"description": "The database did not answer", "content": {JSON: {"schema": obj(
                               {"status": {"type": "string", "enum": ["unavailable"]}})}}}}}},
    "/v1/schema": {"get": {"operationId": "schema", "summary": "This document", "tags": ["service"], "security": [],
                           "responses": {"200": {"description": "The OpenAPI document",
                                                 "content": {JSON: {"schema": {"type": "object"}}}}}}},
}

SPECTACULAR_PATCHES = {
    "TITLE": "Memoir v1",
    "VERSION": __version__,
    "DESCRIPTION": (
        "The /v1 wire contract of Memoir, a governed memory service. Every refusal is "
        "{\"error\":{\"code\",\"message\"}}; clients branch on code. Bodies are strict JSON objects: "
        "unknown fields, wrong types, duplicate keys (case-insensitive) and bodies over 1 MiB are "
        "400 invalid_body, and null means omitted. Lengths count UTF-8 bytes. Check order: "
        "401, 429, 403, 400."),
    "OAS_VERSION": "3.0.3",
    "SCHEMA_PATH_PREFIX": "",
    "SORT_OPERATIONS": True,
    "PREPROCESSING_HOOKS": [],
    "POSTPROCESSING_HOOKS": [],
    "APPEND_PATHS": _UNAUTHENTICATED,
    "APPEND_COMPONENTS": {
        "securitySchemes": {"bearerAuth": BEARER_SCHEME},
        "schemas": {"Error": ERROR, **BODIES},
        "responses": {name: _error_response(status, codes) for status, (name, codes) in COMMON_ERRORS.items()},
    },
    "TAGS": [{"name": name} for name in (
        "turns", "recall", "sources", "records", "feedback", "entities", "subjects", "artifacts", "governance",
        "notifications", "service")],
}

_lock = threading.Lock()
_generation_lock = threading.Lock()
_cached = {}


def build_document(urlconf=None):
    """Generate the document from the URLconf as it is now."""
    return V1SchemaGenerator(urlconf=urlconf).get_schema(request=None, public=True)


def render(document):
    """The document as the bytes checked into the repository."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def document_bytes():
    """The served document, generated once per process."""
    with _lock:
        if "bytes" not in _cached:
            _cached["bytes"] = render(build_document())
        return _cached["bytes"]


def refuse_unless_get(request):
    """405 for any method but GET and HEAD on the public documents, else None."""
    if request.method in ("GET", "HEAD"):
        return None
    response = error_response(ApiError(405, "method_not_allowed"))
    response["Allow"] = "GET"
    return response


@csrf_exempt
def schema_view(request):
    """GET /v1/schema: a fixed public document, so no credential, no admission and no ledger row."""
    return refuse_unless_get(request) or HttpResponse(document_bytes(), content_type=CONTENT_TYPE)

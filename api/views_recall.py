"""POST /v1/recalls, POST /v1/passages/search (hybrid, api.md §7.3), POST /v1/entities/candidates, and the
report candidates route that still validates and then answers 503."""
from django.conf import settings
from rest_framework import serializers

from core.closed_sets import IDENTITY_KINDS, OBJECT_KINDS, ROLES
from core.encoding import format_ts, server_timing
from core.limits import MAX_SUBJECT_BYTES
from memory import entity_candidates, passages, recall

from .base import Result, V1View
from .contract import Body, Boolean, Integer, ListOf, RouteDoc, Text, Timestamp, rule_error
from .errors import ApiError

CONTROLS = "invalid_recall_controls"


def _closed_list(values):
    return ListOf(Text(choices=values, code=CONTROLS), code=CONTROLS, min_items=1, max_items=len(values),
                  unique=True)


class RecallRequest(Body):
    code = "invalid_question"
    # A blank question is refused before the controls are read, its size and NUL after them.
    question = Text(required=True, non_blank=True, max_bytes=recall.MAX_QUESTION_BYTES, late=True,
                    message="a question is required", description=(
        "at most 8,192 UTF-8 bytes, 512 distinct terms and 32,768 term bytes; never truncated"))
    data_subject_id = Text(late=True, description="no U+0000; \"\" means none")
    as_of = Timestamp()
    as_known_at = Timestamp()
    max_characters = Integer(min_value=1, max_value=settings.MEMOIR_BUNDLE_CHARACTERS, code=CONTROLS)
    source_roles = _closed_list(ROLES)
    hops = Integer(description="clamped into [1, 2], never refused")
    surfaces = _closed_list(recall.SURFACES)
    themes = Boolean()


class RecallControls(serializers.Serializer):
    max_characters = serializers.IntegerField(min_value=1)
    max_rows = serializers.IntegerField(min_value=0)
    source_roles = serializers.ListField(child=serializers.ChoiceField(choices=ROLES))
    hops = serializers.IntegerField(min_value=1, max_value=2)
    surfaces = serializers.ListField(child=serializers.ChoiceField(choices=recall.SURFACES))
    themes = serializers.BooleanField()


class RecallAnchor(serializers.Serializer):
    entity_id = serializers.UUIDField()
    name = serializers.CharField()
    type = serializers.ChoiceField(choices=OBJECT_KINDS)
    matched = serializers.CharField()


class RecallEvidence(serializers.Serializer):
    observation_id = serializers.CharField(help_text="\"\" when the source turn is gone")
    source_ordinal = serializers.IntegerField(min_value=0)
    quote = serializers.CharField()
    byte_start = serializers.IntegerField(min_value=0)
    byte_end = serializers.IntegerField(min_value=0)
    context = serializers.CharField()
    context_start = serializers.IntegerField(min_value=0)
    context_complete = serializers.BooleanField()


class RecallFact(serializers.Serializer):
    fact_id = serializers.UUIDField()
    subject = serializers.CharField()
    predicate = serializers.CharField()
    object = serializers.CharField()
    statement = serializers.CharField()
    confidence = serializers.FloatField()
    valid_from = serializers.DateTimeField()
    valid_until = serializers.DateTimeField(allow_null=True)
    anchored_on = serializers.UUIDField()
    source_role = serializers.ChoiceField(choices=ROLES)
    hops = serializers.IntegerField(min_value=1, max_value=2)
    path = serializers.ListField(child=serializers.CharField())
    via = serializers.ListField(child=serializers.CharField())
    co_derived_with = serializers.ListField(child=serializers.UUIDField())
    evidence = RecallEvidence()


class Report(serializers.Serializer):
    community_id = serializers.CharField()
    report_id = serializers.CharField()
    title = serializers.CharField()
    summary = serializers.CharField()
    importance = serializers.FloatField()
    similarity = serializers.FloatField()
    level = serializers.IntegerField()
    sources = serializers.ListField(child=serializers.CharField())
    parent = serializers.CharField(required=False)


class _MessageHit(serializers.Serializer):
    """The message a passage is and how near the question it came."""

    chunk_id = serializers.UUIDField()
    source_id = serializers.UUIDField()
    ordinal = serializers.IntegerField(min_value=0)
    role = serializers.ChoiceField(choices=ROLES)
    similarity = serializers.FloatField()
    occurred_at = serializers.DateTimeField()


class RecallPassage(_MessageHit):
    quote = serializers.CharField()
    complete = serializers.BooleanField()


class Reach(serializers.Serializer):
    terms = serializers.IntegerField(min_value=0)
    anchored = serializers.IntegerField(min_value=0)
    named_nothing_known = serializers.BooleanField()
    facts_per_anchor = serializers.DictField(child=serializers.IntegerField(min_value=0))


class Recall(serializers.Serializer):
    controls = RecallControls()
    anchors = RecallAnchor(many=True)
    facts = RecallFact(many=True)
    reports = Report(many=True)
    passages = RecallPassage(many=True)
    truncated = serializers.BooleanField()
    characters = serializers.IntegerField(min_value=0)
    degraded = serializers.ListField(child=serializers.ChoiceField(choices=[
        "citation_context", "semantic_anchors", "reports_withheld_for_subject", "reports", "passages"]))
    reach = Reach()


def _timing_headers(durations):
    """The question embedding's model time and the part of it the request waited for, when it was embedded."""
    return {"Server-Timing": server_timing(durations)} if durations else {}


class RecallView(V1View):
    op = "recall"
    request_body = RecallRequest
    response_body = Recall
    doc = RouteDoc("recall", "Cited facts about what a question names",
                   errors={400: ["invalid_question", CONTROLS]})

    def handle(self, caller, body):
        applied = recall.controls(
            max_characters=body.get("max_characters"), source_roles=body.get("source_roles"),
            hops=body.get("hops"), surfaces=body.get("surfaces"), themes=body.get("themes"),
            server_budget=settings.MEMOIR_BUNDLE_CHARACTERS)
        subject = body.get("data_subject_id") or None
        timings = {}
        bundle = recall.recall(project=caller.project, question=body["question"], applied=applied,
                               data_subject_id=subject, as_of=body.get("as_of"),
                               as_known_at=body.get("as_known_at"), timings=timings)
        return Result(bundle, magnitude=len(bundle["facts"]), headers=_timing_headers(timings))


# --- semantic search ------------------------------------------------------------------------------

MAX_SEARCH_LIMIT = 32
DEFAULT_SEARCH_LIMIT = 10
MAX_CANDIDATES = 1000

class SearchRequest(Body):
    """The bounded question of the search routes."""

    question = Text(required=True, non_blank=True, max_bytes=recall.MAX_QUESTION_BYTES)
    limit = Integer(min_value=1, max_value=MAX_SEARCH_LIMIT)
    candidates = Integer(min_value=0, max_value=MAX_CANDIDATES, description="when > 0, at least limit")

    def validate(self, attrs):
        attrs = super().validate(attrs)
        candidates = attrs.get("candidates", 0)
        if 0 < candidates < attrs.get("limit", DEFAULT_SEARCH_LIMIT):
            raise rule_error()
        return attrs

    @classmethod
    def cross_field_schema(cls):
        # candidates is 0 (or omitted), or at least limit (10 when omitted).
        at_least = [{"properties": {"limit": {"maximum": low}, "candidates": {"minimum": low}}}
                    for low in range(1, MAX_SEARCH_LIMIT + 1)]
        return {"anyOf": [
            {"properties": {"candidates": {"nullable": True, "enum": [None, 0]}}},
            {"required": ["limit"], "anyOf": at_least},
            {"properties": {"candidates": {"minimum": DEFAULT_SEARCH_LIMIT},
                            "limit": {"nullable": True, "enum": [None]}}},
        ]}


class EntityCandidateRequest(SearchRequest):
    code = "invalid_entity_candidate_query"


class ReportCandidateRequest(SearchRequest):
    code = "invalid_report_candidate_query"


class PassageRequest(SearchRequest):
    code = "invalid_passage_query"
    data_subject_id = Text(max_bytes=MAX_SUBJECT_BYTES, description="at most 1,024 UTF-8 bytes, no U+0000")
    source_role = Text(choices=("", *ROLES))


class Passage(_MessageHit):
    preview = serializers.CharField()
    message_bytes = serializers.IntegerField(min_value=0)
    preview_complete = serializers.BooleanField()
    preview_byte_end = serializers.IntegerField(min_value=0)
    content_digest = serializers.CharField()


class Passages(serializers.Serializer):
    generation_id = serializers.CharField()
    through_offset = serializers.IntegerField(allow_null=True)
    covered_through_offset = serializers.IntegerField(allow_null=True)
    build_state = serializers.CharField()
    approximate = serializers.BooleanField()
    passages = Passage(many=True)


class EntityCandidate(serializers.Serializer):
    entity_id = serializers.UUIDField()
    identity_kind = serializers.ChoiceField(choices=IDENTITY_KINDS)
    name_preview = serializers.CharField()
    name_bytes = serializers.IntegerField(min_value=0)
    name_truncated = serializers.BooleanField()
    similarity = serializers.FloatField()


class EntityCandidates(serializers.Serializer):
    generation_id = serializers.CharField()
    target_count = serializers.IntegerField(min_value=0)
    build_state = serializers.CharField()
    approximate = serializers.BooleanField()
    candidates = EntityCandidate(many=True)


class PassagesSearchView(V1View):
    op = "embedding.search"
    request_body = PassageRequest
    response_body = Passages
    doc = RouteDoc("recall", "Hybrid passage search: lexical, plus vectors of the active generation",
                   errors={400: ["invalid_passage_query"], 503: ["passage_unavailable"]})

    def handle(self, caller, body):
        role = body.get("source_role", "")
        found = passages.search(
            project=caller.project, question=body["question"], limit=body.get("limit", DEFAULT_SEARCH_LIMIT),
            candidates=body.get("candidates", 0), data_subject_id=body.get("data_subject_id") or None,
            roles=(role,) if role else None)
        items = []
        for hit in found.hits:
            text, byte_end, complete = passages.preview(hit.content)
            items.append({
                "chunk_id": hit.chunk_id, "source_id": hit.source_id, "ordinal": hit.ordinal, "role": hit.role,
                "preview": text, "similarity": hit.similarity, "occurred_at": format_ts(hit.occurred_at),
                "message_bytes": hit.message_bytes, "preview_complete": complete, "preview_byte_end": byte_end,
                "content_digest": hit.content_digest,
            })
        data = {"generation_id": found.generation_id, "through_offset": found.through_offset,
                "covered_through_offset": found.covered_through_offset, "build_state": found.build_state,
                "approximate": found.approximate, "passages": items}
        return Result(data, magnitude=len(items), headers=_timing_headers(found.embedding_timings()))


class EntityCandidatesView(V1View):
    """Nearest entities by embedding (docs/decisions.md, "Entity candidates"); 503 where no generation can be
    searched with the configured embedder."""

    op = "entity_embedding.search"
    request_body = EntityCandidateRequest
    response_body = EntityCandidates
    doc = RouteDoc("recall", "Entities nearest the question by embedding (names and quotes)",
                   errors={400: ["invalid_entity_candidate_query"], 503: ["entity_candidates_unavailable"]})

    def handle(self, caller, body):
        found = entity_candidates.search(project=caller.project, question=body["question"],
                                         limit=body.get("limit", DEFAULT_SEARCH_LIMIT),
                                         candidates=body.get("candidates", 0))
        items = []
        for candidate in found.candidates:
            preview, name_bytes, truncated = entity_candidates.name_preview(candidate.name)
            items.append({"entity_id": candidate.entity_id, "identity_kind": candidate.identity_kind,
                          "name_preview": preview, "name_bytes": name_bytes, "name_truncated": truncated,
                          "similarity": candidate.similarity})
        data = {"generation_id": found.generation_id, "target_count": found.target_count,
                "build_state": found.build_state, "approximate": found.approximate, "candidates": items}
        return Result(data, magnitude=len(items))


class ReportCandidatesView(V1View):
    """Validates like the reference, then says the surface cannot run: v1 builds no reports."""

    op = "report_embedding.search"
    request_body = ReportCandidateRequest
    doc = RouteDoc("recall", "Report candidates (503 in v1)", success=None,
                   errors={400: ["invalid_report_candidate_query"], 503: ["report_candidates_unavailable"]})

    def handle(self, caller, body):
        raise ApiError(503, "report_candidates_unavailable")

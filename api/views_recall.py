"""POST /v1/recalls, POST /v1/passages/search (hybrid, api.md §7.3), POST /v1/entities/candidates, and the
report candidates route that still validates and then answers 503."""
from django.conf import settings

from core.closed_sets import IDENTITY_KINDS, OBJECT_KINDS, ROLES
from core.encoding import format_ts, server_timing
from core.limits import MAX_SUBJECT_BYTES
from memory import entity_candidates, passages, recall

from .base import Result, V1View
from .bodies import answer, choice, count, counts, flag, integer, listing, nullable, number, text, uuid, when
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


RecallControls = answer("RecallControls", {
    "max_characters": integer(min_value=1), "max_rows": count(), "source_roles": listing(choice(ROLES)),
    "hops": integer(min_value=1, max_value=2), "surfaces": listing(choice(recall.SURFACES)),
    "themes": flag()})
RecallAnchor = answer("RecallAnchor", {"entity_id": uuid(), "name": text(), "type": choice(OBJECT_KINDS),
                                        "matched": text()})
RecallEvidence = answer("RecallEvidence", {
    "observation_id": text(help_text="\"\" when the source turn is gone"), "source_ordinal": count(),
    "quote": text(), "byte_start": count(), "byte_end": count(), "context": text(), "context_start": count(),
    "context_complete": flag()})
RecallFact = answer("RecallFact", {
    "fact_id": uuid(), "subject": text(), "predicate": text(), "object": text(), "statement": text(),
    "confidence": number(), "valid_from": when(), "valid_until": nullable(when()), "anchored_on": uuid(),
    "source_role": choice(ROLES), "hops": integer(min_value=1, max_value=2), "path": listing(text()),
    "via": listing(text()), "co_derived_with": listing(uuid()), "evidence": RecallEvidence})
Report = answer("Report", {
    "community_id": text(), "report_id": text(), "title": text(), "summary": text(), "importance": number(),
    "similarity": number(), "level": integer(), "sources": listing(text())},
    {"parent": text()})
# The message a passage is and how near the question it came.
_MESSAGE_HIT = {"chunk_id": uuid(), "source_id": uuid(), "ordinal": count(), "role": choice(ROLES),
                "similarity": number(), "occurred_at": when()}
RecallPassage = answer("RecallPassage", {
    **_MESSAGE_HIT,
    "quote": text(help_text="verbatim, at most 512 characters: the whole message, or the window of it that holds the"
                            " most of the question's words (its start when none)"),
    "complete": flag(help_text="the quote is the whole message")})
Reach = answer("Reach", {"terms": count(), "anchored": count(), "named_nothing_known": flag(),
                         "facts_per_anchor": counts()})
# A nested body with plain fields after it is made here rather than by answer(), so it keeps its place among
# them (a field's place is the order it was made in).
Recall = answer("Recall", {
    "controls": RecallControls(), "anchors": RecallAnchor(many=True), "facts": RecallFact(many=True),
    "reports": Report(many=True), "passages": RecallPassage(many=True), "truncated": flag(),
    "characters": count(),
    "degraded": listing(choice(["citation_context", "semantic_anchors", "reports_withheld_for_subject",
                                "reports", "passages"])),
    "reach": Reach()})


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


Passage = answer("Passage", {
    **_MESSAGE_HIT, "preview": text(), "message_bytes": count(), "preview_complete": flag(),
    "preview_byte_end": count(), "content_digest": text()})
Passages = answer("Passages", {
    "generation_id": text(), "through_offset": nullable(integer()),
    "covered_through_offset": nullable(integer()), "build_state": text(), "approximate": flag(),
    "passages": [Passage]})
EntityCandidate = answer("EntityCandidate", {
    "entity_id": uuid(), "identity_kind": choice(IDENTITY_KINDS), "name_preview": text(),
    "name_bytes": count(), "name_truncated": flag(), "similarity": number()})
EntityCandidates = answer("EntityCandidates", {
    "generation_id": text(), "target_count": count(), "build_state": text(), "approximate": flag(),
    "candidates": [EntityCandidate]})


class PassagesSearchView(V1View):
    op = "embedding.search"
    request_body = PassageRequest
    response_body = Passages
    doc = RouteDoc("recall", "Hybrid passage search: lexical, plus vectors of the active generation",
                   errors={400: ["invalid_passage_query"], 503: ["passage_unavailable"]})

    def handle(self, caller, body):
        role = body.get("source_role", "")
        subject = body.get("data_subject_id") or None
        # The model starts first; meanwhile, without a subject, the people the question names are found, whose own
        # messages then lead, as in a recall.
        embedding = passages.begin_question_embedding(caller.project, body["question"], subject)
        named = () if subject else recall.named_subjects(project=caller.project, question=body["question"])
        found = passages.search(
            project=caller.project, question=body["question"], limit=body.get("limit", DEFAULT_SEARCH_LIMIT),
            candidates=body.get("candidates", 0), data_subject_id=subject, roles=(role,) if role else None,
            named_subjects=named, question_embedding=embedding)
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

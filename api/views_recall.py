"""POST /v1/recalls, POST /v1/passages/search (hybrid, api.md §7.3), POST /v1/entities/candidates, and the
report candidates route that still validates and then answers 503."""
from django.conf import settings

from core.closed_sets import ROLES
from core.encoding import format_ts, server_timing
from core.limits import MAX_SUBJECT_BYTES
from core.strings import has_nul, is_blank, utf8_len
from memory import entity_candidates, passages, recall

from .base import Result, V1View
from .errors import ApiError
from .jsonbody import BOOL, INT, STR, TIMESTAMP, ArrayOf, Obj

RECALL_SHAPE = Obj({
    "question": STR, "data_subject_id": STR, "as_of": TIMESTAMP, "as_known_at": TIMESTAMP,
    "max_characters": INT, "source_roles": ArrayOf(STR), "hops": INT, "surfaces": ArrayOf(STR), "themes": BOOL,
})


def _timing_headers(durations):
    """The question embedding's model time and the part of it the request waited for, when it was embedded."""
    return {"Server-Timing": server_timing(durations)} if durations else {}


class RecallView(V1View):
    op = "recall"
    shape = RECALL_SHAPE

    def handle(self, caller, body):
        question = body.get("question")
        if question is None or is_blank(question):
            raise ApiError(400, "invalid_question", "a question is required")
        applied = recall.controls(
            max_characters=body.get("max_characters"), source_roles=body.get("source_roles"),
            hops=body.get("hops"), surfaces=body.get("surfaces"), themes=body.get("themes"),
            server_budget=settings.MEMOIR_BUNDLE_CHARACTERS)
        subject = body.get("data_subject_id") or None
        if has_nul(question) or (subject is not None and has_nul(subject)):
            raise ApiError(400, "invalid_question", "text cannot contain NUL")
        timings = {}
        bundle = recall.recall(project=caller.project, question=question, applied=applied,
                               data_subject_id=subject, as_of=body.get("as_of"),
                               as_known_at=body.get("as_known_at"), timings=timings)
        return Result(bundle, magnitude=len(bundle["facts"]), headers=_timing_headers(timings))


# --- semantic search ------------------------------------------------------------------------------

MAX_SEARCH_LIMIT = 32
DEFAULT_SEARCH_LIMIT = 10
MAX_CANDIDATES = 1000

CANDIDATE_SHAPE = Obj({"question": STR, "limit": INT, "candidates": INT})
PASSAGE_SHAPE = Obj({"question": STR, "limit": INT, "candidates": INT, "data_subject_id": STR, "source_role": STR})


def _check_search(body, code):
    """The shared bounded-question rules of the three search routes."""
    question = body.get("question")
    if question is None or is_blank(question) or has_nul(question) or utf8_len(question) > recall.MAX_QUESTION_BYTES:
        raise ApiError(400, code)
    limit = body.get("limit", DEFAULT_SEARCH_LIMIT)
    candidates = body.get("candidates", 0)
    if not 1 <= limit <= MAX_SEARCH_LIMIT or not 0 <= candidates <= MAX_CANDIDATES:
        raise ApiError(400, code)
    if 0 < candidates < limit:
        raise ApiError(400, code)


class _UnavailableSearch(V1View):
    """Validates like the reference, then says the surface cannot run: v1 has no embedding model."""

    invalid_code = None
    unavailable_code = None

    def handle(self, caller, body):
        self.validate(body)
        raise ApiError(503, self.unavailable_code)

    def validate(self, body):
        _check_search(body, self.invalid_code)


class PassagesSearchView(_UnavailableSearch):
    op = "embedding.search"
    shape = PASSAGE_SHAPE
    invalid_code = "invalid_passage_query"
    unavailable_code = "passage_unavailable"

    def validate(self, body):
        super().validate(body)
        subject = body.get("data_subject_id", "")
        if has_nul(subject) or utf8_len(subject) > MAX_SUBJECT_BYTES:
            raise ApiError(400, self.invalid_code)
        if body.get("source_role", "") not in ("", *ROLES):
            raise ApiError(400, self.invalid_code)

    def handle(self, caller, body):
        self.validate(body)
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


class EntityCandidatesView(_UnavailableSearch):
    """Nearest entities by embedding (docs/decisions.md, "Entity candidates"); 503 where no generation can be
    searched with the configured embedder."""

    op = "entity_embedding.search"
    shape = CANDIDATE_SHAPE
    invalid_code = "invalid_entity_candidate_query"
    unavailable_code = "entity_candidates_unavailable"

    def handle(self, caller, body):
        self.validate(body)
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


class ReportCandidatesView(_UnavailableSearch):
    op = "report_embedding.search"
    shape = CANDIDATE_SHAPE
    invalid_code = "invalid_report_candidate_query"
    unavailable_code = "report_candidates_unavailable"

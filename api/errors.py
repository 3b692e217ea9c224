"""The one refusal shape of the /v1 surface (api.md §2) and the JSON response writer.

Every error leaves as {"error":{"code","message"}}; messages are fixed per code and never echo
request content.
"""

import json

from django.http import HttpResponse

CONTENT_TYPE = "application/json; charset=utf-8"

# Short fixed English per code. Clients branch on the code; the text may change.
DEFAULT_MESSAGES: dict[str, str] = {
    # 400
    "invalid_body": "the request body could not be read",
    "invalid_turn": "the turn is not valid",
    "invalid_question": "the question is not valid",
    "invalid_recall_controls": "the recall controls are not valid",
    "invalid_context": "the context request is not valid",
    "no_subject": "a data subject is required",
    "invalid_erasure": "the erasure request is not valid",
    "invalid_export": "the export request is not valid",
    "invalid_citation": "the citation request is not valid",
    "invalid_record_page": "the record page request is not valid",
    "invalid_entity_page": "the entity page request is not valid",
    "invalid_message_window": "the message window is not valid",
    "invalid_passage_query": "the passage query is not valid",
    "invalid_entity_candidate_query": "the entity candidate query is not valid",
    "invalid_report_candidate_query": "the report candidate query is not valid",
    "invalid_record_mutation": "the record mutation is not valid",
    "invalid_feedback": "the feedback is not valid",
    "invalid_subject": "the subject is not valid",
    "invalid_artifact": "the artifact is not valid",
    # Used with 400 and 409 alike, so the text fits both.
    "invalid_destination": "the destination is not valid",
    # 401 / 403 / 404 / 405
    "unauthenticated": "a credential is required",
    "forbidden": "this credential may not call this route",
    "not_found": "not found",
    "method_not_allowed": "method not allowed",
    # 409
    "idempotency_conflict": "the idempotency key was already used for a different request",
    "record_conflict": "the record conflicts with an existing record",
    "subject_conflict": "the subject conflicts with an existing subject",
    "artifact_conflict": "the artifact conflicts with an existing artifact",
    "source_changed": "the source message has changed",
    "feedback_already_promoted": "the feedback was already promoted",
    # 413 / 422
    "record_mutation_limit": "too many record mutations",
    "citation_limit": "the citation evidence is too large",
    "export_too_large": "the export is too large",
    # 429
    "rate_limited": "too many requests",
    "storage_capacity": "storage capacity is exhausted",
    # 5xx
    "internal": "internal error",
    "notifications_unavailable": "notifications are not available",
    "no_database_capacity": "the database has no free capacity",
    "passage_unavailable": "passage search is not available",
    "entity_candidates_unavailable": "entity candidates are not available",
    "report_candidates_unavailable": "report candidates are not available",
}

# api.md §2: these codes always carry Retry-After: 1 (storage_capacity deliberately does not).
DEFAULT_RETRY_AFTER: dict[str, int] = {"rate_limited": 1, "no_database_capacity": 1}


class ApiError(Exception):
    """A refusal that the /v1 exception handler renders with error_response()."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str | None = None,
        *,
        retry_after: int | None = None,
    ):
        self.status = status
        self.code = code
        if message is None:
            message = DEFAULT_MESSAGES.get(code, "error")
        # Callers need not remember which codes carry Retry-After; the spec fixes it.
        if retry_after is None:
            retry_after = DEFAULT_RETRY_AFTER.get(code)
        self.message = message
        self.retry_after = retry_after
        super().__init__(status, code, self.message)

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.code!r})"


def _dump(data) -> bytes:
    # allow_nan=False: NaN/Infinity are not JSON, so fail loudly rather than emit them.
    return json.dumps(
        data, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def json_response(data, status: int = 200) -> HttpResponse:
    """Compact UTF-8 JSON with the contract's fixed content type."""
    return HttpResponse(
        _dump(data), status=status, content_type=CONTENT_TYPE, charset="utf-8"
    )


def error_response(err: ApiError) -> HttpResponse:
    """Render an ApiError as {"error":{"code","message"}} with its status and headers."""
    response = json_response(
        {"error": {"code": err.code, "message": err.message}}, err.status
    )
    if err.retry_after is not None:
        response["Retry-After"] = str(err.retry_after)
    # Refusals depend on the credential and moment; no cache may keep them.
    response["Cache-Control"] = "no-store"
    return response

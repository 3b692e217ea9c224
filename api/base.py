"""The one base view for /v1: authentication → admission → access → method → body → route → work,
in exactly that order (api.md §1.4), with one ledger row per request and one error shape."""
import logging

from django.db import DatabaseError
from django.http.request import RawPostDataException
from django.views.decorators.csrf import csrf_exempt
from rest_framework.views import APIView

from core import audit
from core.errors import DomainError
from core.retry import run_retrying

from . import admission, authentication
from .errors import ApiError, error_response, json_response
from .jsonbody import MAX_BODY_BYTES, Obj, check_shape, decode_body

logger = logging.getLogger(__name__)

# Ops a read_only credential may call (api.md §1.3); any op not listed, including future ones, is refused.
READ_ONLY_OPS = frozenset({
    "freshness", "recall", "context.assemble", "export", "citation.resolve", "message.get", "record.list",
    "record.history", "entity.list", "entity.get", "embedding.search", "entity_embedding.search",
    "report_embedding.search", "artifact.get", "artifact.list", "subject.get", "subject.list", "feedback.list",
    "notification.list", "notification.deliveries",
})


class Result:
    """A route's answer: the body, its status, the ledger magnitude, whether the route audited itself, and any
    extra response headers (durations only)."""

    def __init__(self, data, *, status=200, magnitude=0, audited=False, headers=None):
        self.data = data
        self.status = status
        self.magnitude = magnitude
        self.audited = audited
        self.headers = headers or {}


def _chunked_body(request):
    """The body of a chunked request (no Content-Length), which Django reads as empty; None otherwise.

    Only when the server has de-chunked the stream and marks it terminated (gunicorn does), so reading to
    the end is safe; one byte past the limit is read so an oversize body is still refused."""
    meta = request.META
    if meta.get("CONTENT_LENGTH") or not meta.get("wsgi.input_terminated"):
        return None
    if "chunked" not in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None
    return meta["wsgi.input"].read(MAX_BODY_BYTES + 1)


def _database_capacity_error(exc):
    # A refused connection carries no SQLSTATE in psycopg, so 53300's two server messages are matched too:
    # "too many clients" (every slot taken) and "remaining connection slots are reserved" (an ordinary role).
    cause = exc.__cause__ or exc
    text = str(cause)
    return (getattr(cause, "sqlstate", None) == "53300" or "too many clients" in text
            or "remaining connection slots are reserved" in text)


class V1View(APIView):
    """Subclasses set `op`, `method`, `shape` (an Obj for POST bodies) and implement `handle`."""

    op = None
    method = "POST"
    shape = None
    reads_body = True

    @classmethod
    def as_view(cls, **initkwargs):
        return csrf_exempt(super().as_view(**initkwargs))

    def dispatch(self, request, *args, **kwargs):
        # DRF's own pipeline (negotiation, parsers, permissions before throttles) is replaced whole.
        self.headers = {}
        caller = None
        try:
            caller = authentication.authenticate(request)
        except DatabaseError as exc:
            return self._server_failure(exc, None)
        if caller is None:
            authentication.record_refused_authentication()
            return error_response(ApiError(401, "unauthenticated"))
        authentication.touch_last_used(caller)
        ticket = admission.admit(caller)
        if ticket is None:
            return self._refuse(caller, ApiError(429, "rate_limited", retry_after=1))
        try:
            return self._serve(request, caller)
        finally:
            ticket.release()

    def _serve(self, request, caller):
        op = self.op
        if caller.access != "read_write" and op not in READ_ONLY_OPS:
            return self._refuse(caller, ApiError(403, "forbidden"))
        if request.method != self.method:
            response = self._refuse(caller, ApiError(405, "method_not_allowed"))
            response["Allow"] = self.method
            return response
        try:
            body = self._read_body(request) if self.method == "POST" and self.reads_body else {}
            # A route's writes are one transaction, so a deadlock victim kept nothing: run it again, not a 500.
            result = run_retrying(lambda: self.handle(caller, body), what=op)
        except ApiError as err:
            return self._refuse(caller, err)
        except DomainError as err:
            return self._refuse(caller, ApiError(err.status, err.code, err.message))
        except DatabaseError as exc:
            return self._server_failure(exc, caller)
        except Exception:
            logger.exception("unhandled error in %s", op)
            self._audit(caller, "refused", 0)
            return error_response(ApiError(500, "internal"))
        if not result.audited:
            self._audit(caller, "allowed", result.magnitude)
        response = json_response(result.data, status=result.status)
        for name, value in result.headers.items():
            response[name] = value
        return response

    def _read_body(self, request):
        try:
            raw = _chunked_body(request)
            if raw is None:
                raw = request.body
        except (RawPostDataException, Exception) as exc:  # RequestDataTooBig and friends
            raise ApiError(400, "invalid_body") from exc
        body = decode_body(raw)
        if self.shape is not None:
            body = check_shape(body, self.shape)
        return body

    def handle(self, caller, body):
        raise NotImplementedError

    def _audit(self, caller, outcome, magnitude):
        audit.record_best_effort(op=self.op, principal=caller.credential_id, principal_kind="credential",
                                 project=caller.project, magnitude=magnitude, outcome=outcome)

    def _refuse(self, caller, err):
        self._audit(caller, "refused", 0)
        if err.status == 404:
            # Unknown, foreign and erased objects get one 404 body everywhere (P10): no wording may hint
            # at which it was.
            err = ApiError(404, "not_found")
        return error_response(err)

    def _server_failure(self, exc, caller):
        if caller is not None:
            self._audit(caller, "refused", 0)
        if _database_capacity_error(exc):
            return error_response(ApiError(503, "no_database_capacity", retry_after=1))
        logger.error("database error: %s", type(exc).__name__)
        return error_response(ApiError(500, "internal"))


class UnknownRouteView(V1View):
    """Any other /v1 path: authenticated first, then 404 and a refused route.unknown row."""

    op = "route.unknown"

    def dispatch(self, request, *args, **kwargs):
        try:
            caller = authentication.authenticate(request)
        except DatabaseError as exc:
            return self._server_failure(exc, None)
        if caller is None:
            authentication.record_refused_authentication()
            return error_response(ApiError(401, "unauthenticated"))
        return self._refuse(caller, ApiError(404, "not_found"))


EMPTY = Obj({})

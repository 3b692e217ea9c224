"""The one base view for /v1: authentication → admission → access → method → body → route → work,
in exactly that order (api.md §1.4), with one ledger row per request and one error shape."""
import logging

from django.db import DatabaseError
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.views import APIView

from core import audit
from core.errors import DomainError
from core.retry import run_retrying

from . import authentication, contract
from .admission import AdmissionThrottle
from .errors import ApiError, error_response, json_response
from .parsers import StrictJSONParser, V1Request
from .permissions import READ_ONLY_OPS, AccessMode

logger = logging.getLogger(__name__)

__all__ = ["READ_ONLY_OPS", "Result", "V1View", "UnknownRouteView"]


class Result:
    """A route's answer: the body, its status, the ledger magnitude, whether the route audited itself, and any
    extra response headers (durations only)."""

    def __init__(self, data, *, status=200, magnitude=0, audited=False, headers=None):
        self.data = data
        self.status = status
        self.magnitude = magnitude
        self.audited = audited
        self.headers = headers or {}


def _database_capacity_error(exc):
    # A refused connection carries no SQLSTATE in psycopg, so 53300's two server messages are matched too:
    # "too many clients" (every slot taken) and "remaining connection slots are reserved" (an ordinary role).
    cause = exc.__cause__ or exc
    text = str(cause)
    return (getattr(cause, "sqlstate", None) == "53300" or "too many clients" in text
            or "remaining connection slots are reserved" in text)


def _as_api_error(exc):
    """The refusal a DRF or domain exception stands for, or None for a fault."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, DomainError):
        return ApiError(exc.status, exc.code, exc.message)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return ApiError(401, "unauthenticated")
    if isinstance(exc, exceptions.Throttled):
        return ApiError(429, "rate_limited", retry_after=1)
    if isinstance(exc, exceptions.PermissionDenied):
        return ApiError(403, "forbidden")
    if isinstance(exc, exceptions.MethodNotAllowed):
        return ApiError(405, "method_not_allowed")
    if isinstance(exc, exceptions.ParseError | exceptions.UnsupportedMediaType):
        return ApiError(400, "invalid_body")
    return None


def exception_handler(exc, context):
    """The one /v1 exception handler: every refusal and fault as {"error":{"code","message"}} (api.md §2), with the
    refused ledger row of an authenticated caller; no credential, no row but the rate-limited one."""
    view = context["view"]
    caller = view.caller
    err = _as_api_error(exc)
    if err is not None and err.status == 401:
        authentication.record_refused_authentication()
        return error_response(err)
    if caller is not None:
        view.audit(caller, "refused", 0)
    if err is not None:
        if err.status == 404:
            # Unknown, foreign and erased objects get one 404 body everywhere (P10): no wording may hint
            # at which it was.
            err = ApiError(404, "not_found")
        response = error_response(err)
        if err.status == 405:
            response["Allow"] = view.method
        return response
    if isinstance(exc, DatabaseError):
        if _database_capacity_error(exc):
            return error_response(ApiError(503, "no_database_capacity", retry_after=1))
        logger.error("database error: %s", type(exc).__name__)
        return error_response(ApiError(500, "internal"))
    logger.error("unhandled error in %s", view.op, exc_info=exc)
    return error_response(ApiError(500, "internal"))


class V1View(APIView):
    """Subclasses set `op`, `method`, `doc`, `request_body` (a contract.Body for POST bodies) and `response_body`,
    and implement `handle`.

    DRF runs the pipeline: BearerAuthentication, then AdmissionThrottle, then AccessMode (401 → 429 → 403,
    api.md §1.4: admission before access, which is DRF's order turned round in `initial`), then the method (405),
    then StrictJSONParser and the request Body (400), then the route; every refusal leaves through exception_handler."""

    op = None
    method = "POST"
    request_body = None  # the route's contract.Body: its fields and rules, read by validation and the document
    response_body = None  # the serializer that documents the success body
    doc = None  # a contract.RouteDoc: tag, summary, the route's own refusals
    reads_body = True

    parser_classes = [StrictJSONParser]
    authentication_classes = [authentication.BearerAuthentication]
    throttle_classes = [AdmissionThrottle]
    permission_classes = [AccessMode]
    caller = None
    admission_ticket = None

    @classmethod
    def as_view(cls, **initkwargs):
        return csrf_exempt(super().as_view(**initkwargs))

    @property
    def allowed_methods(self):
        return [self.method]

    @property
    def default_response_headers(self):
        return {}  # no Allow or Vary on every answer: the contract's headers only

    def initialize_request(self, request, *args, **kwargs):
        return V1Request(request, parsers=self.get_parsers(), authenticators=self.get_authenticators(),
                         negotiator=self.get_content_negotiator(), parser_context=self.get_parser_context(request))

    def get_exception_handler(self):
        return exception_handler

    def dispatch(self, request, *args, **kwargs):
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            if self.admission_ticket is not None:
                self.admission_ticket.release()

    def initial(self, request, *args, **kwargs):
        self.format_kwarg = None
        self.caller = request.user  # BearerAuthentication; a DatabaseError here is a fault with no ledger row
        if self.caller is None:
            raise exceptions.NotAuthenticated()
        authentication.touch_last_used(self.caller)
        self.check_throttles(request)
        self.check_permissions(request)

    # Every method reaches `run_route`, which answers 405 for all but the route's own (after 401, 429 and 403).
    def get(self, request, *args, **kwargs):
        return self.run_route(request)

    post = put = patch = delete = head = options = http_method_not_allowed = get

    def run_route(self, request):
        if request.method != self.method:
            raise exceptions.MethodNotAllowed(request.method)
        body = {}
        if self.method == "POST" and self.reads_body:
            body = request.data  # StrictJSONParser
            if self.request_body is not None:
                body = contract.validate(self.request_body, body)
        # A route's writes are one transaction, so a deadlock victim kept nothing: run it again, not a 500.
        result = run_retrying(lambda: self.handle(self.caller, body), what=self.op)
        if not result.audited:
            self.audit(self.caller, "allowed", result.magnitude)
        response = json_response(result.data, status=result.status)
        for name, value in result.headers.items():
            response[name] = value
        return response

    def handle(self, caller, body):
        raise NotImplementedError

    def audit(self, caller, outcome, magnitude):
        audit.record_best_effort(op=self.op, principal=caller.credential_id, principal_kind="credential",
                                 project=caller.project, magnitude=magnitude, outcome=outcome)


class UnknownRouteView(V1View):
    """Any other /v1 path: authenticated first (no admission, no access check), then 404 and a refused
    route.unknown row."""

    op = "route.unknown"
    throttle_classes = []
    permission_classes = []

    def run_route(self, request):
        raise ApiError(404, "not_found")


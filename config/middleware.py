"""One log line and one metrics observation per request: request id, op, status and duration, never the
path's query string, a body or any content (docs/operating.md §Logs, §Metrics)."""
import logging
import re
import time
import uuid

from django.conf import settings

logger = logging.getLogger("memoir.request")
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def op_of(request):
    """The ledger op of a /v1 route, else the surface: console, health, metrics, docs, schema, static, other."""
    match = getattr(request, "resolver_match", None)
    view_class = getattr(getattr(match, "func", None), "cls", None) or getattr(getattr(match, "func", None),
                                                                             "view_class", None)
    op = getattr(view_class, "op", None)
    if isinstance(op, str):
        return op
    path = request.path
    for prefix, name in (("/console/", "console"), ("/static/", "static"), ("/v1/docs", "docs"),
                         ("/v1/schema", "schema"), ("/metrics", "metrics")):
        if path.startswith(prefix):
            return name
    if path in ("/health", "/ready"):
        return "health"
    return "other"


def route_of(request):
    """The URL pattern that matched (e.g. console/memory/fact/<path:object_id>/change/), never the ids in it."""
    match = getattr(request, "resolver_match", None)
    return getattr(match, "route", None) or "unmatched"


class RequestLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.metrics_on = bool(settings.MEMOIR_METRICS_TOKEN)

    def __call__(self, request):
        started = time.perf_counter()
        given = request.headers.get("X-Request-ID", "")
        request_id = given if REQUEST_ID_RE.match(given) else uuid.uuid4().hex
        request.memoir_request_id = request_id
        response = self.get_response(request)
        duration = time.perf_counter() - started
        op, status = op_of(request), response.status_code
        response["X-Request-ID"] = request_id
        if op != "static":
            level = logging.ERROR if status >= 500 and status not in (501, 503) else (
                logging.WARNING if status >= 500 else logging.INFO)
            logger.log(level, "%s %s", request.method, status, extra={
                "request_id": request_id, "op": op, "method": request.method, "route": route_of(request),
                "status": status, "duration_ms": round(duration * 1000, 2)})
        if self.metrics_on and op != "metrics":
            # Only when metrics are on: importing the module registers its metric families.
            from . import metrics

            metrics.observe_request(op=op, status=status, seconds=duration)
        return response

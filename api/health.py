"""Unauthenticated liveness and readiness probes (api.md §7.10)."""
import functools
import time

from django.db import connection
from django.views.decorators.csrf import csrf_exempt

from governance import dblog

from .errors import ApiError, error_response, json_response

_ready_cache = {"at": 0.0, "ok": False}


def _get_only(view):
    """Probes answer GET and HEAD; anything else gets the API's JSON 405, not Django's HTML refusals."""
    @csrf_exempt
    @functools.wraps(view)
    def wrapped(request):
        if request.method not in ("GET", "HEAD"):
            response = error_response(ApiError(405, "method_not_allowed"))
            response["Allow"] = "GET, HEAD"
            return response
        return view(request)
    return wrapped


def _no_store(response):
    response["Cache-Control"] = "no-store"
    return response


@_get_only
def health(request):
    return _no_store(json_response({"status": "ok"}))


@_get_only
def ready(request):
    now = time.monotonic()
    if now - _ready_cache["at"] > 1.0:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            ok = True
        except Exception:
            ok = False
        _ready_cache.update(at=now, ok=ok)
    if _ready_cache["ok"]:
        body = {"status": "ready"}
        # A server whose log keeps content is still ready, but says so (governance/dblog.py).
        warning = dblog.cached_warning()
        if warning:
            body["warnings"] = [warning]
        return _no_store(json_response(body))
    return _no_store(json_response({"status": "unavailable"}, status=503))

"""Unauthenticated liveness and readiness probes (api.md §7.10)."""
import time

from django.db import connection
from django.http import JsonResponse

_ready_cache = {"at": 0.0, "ok": False}


def _no_store(response):
    response["Cache-Control"] = "no-store"
    return response


def health(request):
    return _no_store(JsonResponse({"status": "ok"}))


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
        return _no_store(JsonResponse({"status": "ready"}))
    return _no_store(JsonResponse({"status": "unavailable"}, status=503))

"""Bearer-token authentication for /v1 and the rate-limited ledger rows of refused attempts (api.md §1.2)."""
import threading
import time

from django.db import connection
from rest_framework.authentication import BaseAuthentication

from core import audit
from governance import tokens
from governance.selectors import caller_for_digest

_REFUSED_ROWS_PER_MINUTE = 16
_refusals_lock = threading.Lock()
_refusal_times = []  # times of refused-authentication rows written by this process in the last minute
_suppressed = [0]
_last_used_written = {}  # credential id -> monotonic time of this process's last last_used_at write


def bearer_token(request):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token if tokens.is_well_formed(token) else None


def authenticate(request):
    """The Caller for this request, or None. A malformed token never reaches the database."""
    token = bearer_token(request)
    if token is None:
        return None
    return caller_for_digest(tokens.digest(token))


class BearerAuthentication(BaseAuthentication):
    """DRF's authenticator for /v1: `request.user` is the Caller (None when the token is missing or unknown)."""

    def authenticate(self, request):
        caller = authenticate(request._request)
        return None if caller is None else (caller, None)

    def authenticate_header(self, request):
        return "Bearer"


def record_refused_authentication():
    """At most 16 rows a minute per process; suppressed attempts ride on the next row's magnitude."""
    now = time.monotonic()
    with _refusals_lock:
        while _refusal_times and now - _refusal_times[0] > 60:
            _refusal_times.pop(0)
        if len(_refusal_times) >= _REFUSED_ROWS_PER_MINUTE:
            _suppressed[0] += 1
            return
        _refusal_times.append(now)
        magnitude = 1 + _suppressed[0]
        _suppressed[0] = 0
    audit.record_best_effort(op="authenticate", principal="unresolved", principal_kind="system", project="",
                             magnitude=magnitude, outcome="refused")


def touch_last_used(caller):
    """Best effort, outside the request transaction, at most once a minute per credential."""
    now = time.monotonic()
    if now - _last_used_written.get(caller.credential_id, -1e9) < 60:
        return
    _last_used_written[caller.credential_id] = now
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE credential SET last_used_at = now() WHERE credential_id = %s"
                " AND (last_used_at IS NULL OR last_used_at < now() - interval '60 seconds')",
                [caller.credential_id],
            )
    except Exception:  # noqa: BLE001 - a missed last-used stamp must never fail a request
        pass

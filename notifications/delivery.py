"""The sender: claim due outbox rows under a lease, send each signed body, record the outcome as a fixed
category. PostgreSQL holds every delivery; a sender that dies leaves a lease that expires, and the next pass
sends the same delivery id again (at least once)."""
import hashlib
import hmac
import json
import logging
import ssl
import time
import uuid

import httpx
from django.conf import settings
from django.db import connection, transaction

from core.encoding import format_ts

from . import destinations, secretbox

logger = logging.getLogger(__name__)

BATCH = 16
MAX_ATTEMPTS = 7  # the first send and 6 retries
VERSION = "taisce-notification/v1"


def body_bytes(*, scope, formed_through, stored_through, parked_turns, occurred_at):
    """The content-free body: a project, two offsets, a count and a time."""
    return json.dumps({
        "version": VERSION, "scope": scope, "formed_through": formed_through, "stored_through": stored_through,
        "parked_turns": parked_turns, "occurred_at": format_ts(occurred_at),
    }, separators=(",", ":")).encode("utf-8")


def signature(secret, timestamp, body):
    """`v1 t=<unix> s=<hex HMAC-SHA256(secret, "v1\\n" + t + "\\n" + body)>`."""
    material = b"v1\n" + str(timestamp).encode("ascii") + b"\n" + body
    digest = hmac.new(secret.encode("utf-8"), material, hashlib.sha256).hexdigest()
    return f"v1 t={timestamp} s={digest}"


def claim_due(*, limit=BATCH):
    """Lease up to `limit` due deliveries of enabled endpoints; returns the claimed rows."""
    token = str(uuid.uuid4())
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE notification_delivery d SET lease_until = now() + make_interval(secs => %s::double precision),"
            " claim_token = %s::uuid"
            " FROM notification_endpoint e"
            " WHERE e.endpoint_id = d.endpoint_id AND d.delivery_id IN ("
            "   SELECT c.delivery_id FROM notification_delivery c"
            "   JOIN notification_endpoint ce ON ce.endpoint_id = c.endpoint_id AND ce.disabled_at IS NULL"
            "   WHERE c.delivered_at IS NULL AND c.parked_at IS NULL AND c.next_attempt_at <= now()"
            "   AND (c.lease_until IS NULL OR c.lease_until < now())"
            "   ORDER BY c.next_attempt_at, c.delivery_id LIMIT %s FOR UPDATE OF c SKIP LOCKED)"
            " RETURNING d.delivery_id, d.scope, d.formed_through, d.stored_through, d.parked_turns, d.occurred_at,"
            " d.attempts, e.url, e.secret_ciphertext",
            [settings.MEMOIR_NOTIFY_LEASE_SECONDS, token, limit])
        rows = cursor.fetchall()
    return token, rows


def _client():
    verify = ssl.create_default_context()
    if settings.MEMOIR_NOTIFY_CA_BUNDLE:
        verify.load_verify_locations(cafile=settings.MEMOIR_NOTIFY_CA_BUNDLE)
    # No proxy (trust_env=False): through one, the address check would not see the real destination.
    return httpx.Client(verify=verify, follow_redirects=False, trust_env=False,
                        timeout=settings.MEMOIR_NOTIFY_TIMEOUT_SECONDS)


def _send(client, url, delivery_id, body, secret):
    """(status or None, category or None, retryable)."""
    try:
        destinations.check(url)
    except destinations.Refused as refused:
        # A name that does not resolve right now may again soon; a listed-host or address rule is final.
        if refused.reason == "does not resolve":
            return None, "network error", True
        if refused.reason == "private address":
            return None, "address not permitted", False
        return None, "destination not permitted", False
    headers = {"Content-Type": "application/json", "Taisce-Delivery": delivery_id,
               "Taisce-Signature": signature(secret, int(time.time()), body), "User-Agent": "memoir-notify/1"}
    try:
        response = client.post(url, content=body, headers=headers)
    except httpx.TimeoutException:
        return None, "timeout", True
    except httpx.ConnectError as exc:
        text = str(exc).lower()
        if "certificate" in text or "ssl" in text or "tls" in text:
            return None, "tls failure", True
        if "refused" in text:
            return None, "connection refused", True
        return None, "network error", True
    except httpx.HTTPError:
        return None, "network error", True
    status = response.status_code
    if 200 <= status < 300:
        return status, None, False
    if 300 <= status < 400:
        return status, "redirect not followed", False
    if status == 429 or status >= 500:
        return status, f"destination answered {status}", True
    return status, f"destination refused with {status}", False


def _record(delivery_id, token, attempts, status, category, retryable):
    """Write one attempt's outcome, unless another sender took the lease over meanwhile."""
    base = settings.MEMOIR_NOTIFY_RETRY_BASE_SECONDS
    delivered = category is None
    park = not delivered and (not retryable or attempts + 1 >= MAX_ATTEMPTS)
    delay = base * (2 ** attempts)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE notification_delivery SET attempts = attempts + 1, last_attempt_at = now(),"
            " last_status = %s, last_error = %s, lease_until = NULL, claim_token = NULL,"
            " delivered_at = CASE WHEN %s THEN now() END, parked_at = CASE WHEN %s THEN now() END,"
            " next_attempt_at = now() + make_interval(secs => %s::double precision)"
            " WHERE delivery_id = %s AND claim_token = %s::uuid",
            [status, category, delivered, park, delay, delivery_id, token])
    return "delivered" if delivered else ("parked" if park else "retry")


def deliver_due(*, limit=BATCH):
    """One pass: send up to `limit` due deliveries. Returns how many were claimed."""
    token, rows = claim_due(limit=limit)
    if not rows:
        return 0
    with _client() as client:
        for delivery_id, scope, formed, stored, parked, occurred_at, attempts, url, ciphertext in rows:
            delivery_id = str(delivery_id)
            body = body_bytes(scope=scope, formed_through=formed, stored_through=stored, parked_turns=parked,
                              occurred_at=occurred_at)
            status, category, retryable = _send(client, url, delivery_id, body, secretbox.unseal(ciphertext))
            outcome = _record(delivery_id, token, attempts, status, category, retryable)
            # Ids, statuses and categories only: never a body, a URL or a subject.
            logger.info("notification delivery=%s attempt=%d outcome=%s status=%s", delivery_id, attempts + 1,
                        outcome, status)
    return len(rows)

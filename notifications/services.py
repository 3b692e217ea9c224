"""Endpoint writes (register, disable) and the operator's retry of a parked delivery."""
import uuid

from django.db import connection, transaction

from core import audit
from core.errors import Conflict, Invalid, NotFound
from core.locks import advisory_xact_lock

from . import destinations, secretbox


def register_endpoint(*, project, url, principal):
    """A new endpoint and its secret (returned once). Refuses a URL that may not receive notifications, and
    one this project already sends to. The ledger row commits with the endpoint."""
    try:
        destinations.check(url)
    except destinations.Refused:
        raise Invalid("invalid_destination") from None
    secret = secretbox.new_secret()
    endpoint_id = str(uuid.uuid4())
    with transaction.atomic(), connection.cursor() as cursor:
        advisory_xact_lock(cursor, "notification-endpoint", project)
        cursor.execute("SELECT 1 FROM notification_endpoint WHERE scope = %s AND url = %s AND disabled_at IS NULL",
                       [project, url])
        if cursor.fetchone():
            raise Conflict("invalid_destination", "the destination is already registered", status=409)
        cursor.execute(
            "INSERT INTO notification_endpoint (endpoint_id, scope, url, secret_ciphertext, created_by, created_at)"
            " VALUES (%s, %s, %s, %s, %s, now()) RETURNING created_at",
            [endpoint_id, project, url, secretbox.seal(secret), principal])
        created_at = cursor.fetchone()[0]
        audit.record(op="notification.register", principal=principal, principal_kind="credential",
                     project=project, magnitude=1)
    return {"id": endpoint_id, "url": url, "created_at": created_at, "secret": secret}


def disable_endpoint(*, project, endpoint_id, principal, principal_kind="credential"):
    """Disable an endpoint of this project (a foreign or unknown id is not_found). Its pending deliveries
    are parked so nothing more is sent to it. Disabling twice answers the same."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE notification_endpoint SET disabled_at = coalesce(disabled_at, now())"
            " WHERE endpoint_id = %s AND scope = %s RETURNING endpoint_id", [endpoint_id, project])
        if cursor.fetchone() is None:
            raise NotFound()
        cursor.execute(
            "UPDATE notification_delivery SET parked_at = now(), last_error = 'endpoint disabled',"
            " lease_until = NULL, claim_token = NULL"
            " WHERE endpoint_id = %s AND delivered_at IS NULL AND parked_at IS NULL", [endpoint_id])
        audit.record(op="notification.disable", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)
    return {"disabled": True}


def retry_parked(*, delivery_ids, principal):
    """Put parked deliveries of enabled endpoints back in the queue with the same delivery id and a fresh
    round of attempts. Returns how many were requeued."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE notification_delivery d SET parked_at = NULL, attempts = 0, next_attempt_at = now(),"
            " lease_until = NULL, claim_token = NULL"
            " FROM notification_endpoint e WHERE e.endpoint_id = d.endpoint_id AND e.disabled_at IS NULL"
            " AND d.delivery_id = ANY(%s::uuid[]) AND d.parked_at IS NOT NULL AND d.delivered_at IS NULL"
            " RETURNING d.scope", [[str(i) for i in delivery_ids]])
        scopes = [row[0] for row in cursor.fetchall()]
        for scope in sorted(set(scopes)):
            audit.record(op="notification.retry", principal=principal, principal_kind="operator",
                         project=scope, magnitude=scopes.count(scope))
    return len(scopes)

"""Reads of a project's endpoints and deliveries, in the wire shapes of the notification routes."""
from django.db import connection

DELIVERY_PAGE_DEFAULT = 20
DELIVERY_PAGE_MAX = 100


def list_endpoints(*, project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT endpoint_id, url, created_at, disabled_at FROM notification_endpoint"
                       " WHERE scope = %s ORDER BY created_at DESC, endpoint_id", [project])
        return [{"id": str(row[0]), "url": row[1], "created_at": row[2], "disabled_at": row[3]}
                for row in cursor.fetchall()]


def list_deliveries(*, project, limit):
    """Newest first; parked ones are not hidden among delivered ones because the list is short and ordered."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT d.delivery_id, d.endpoint_id, e.url, d.formed_through, d.stored_through, d.attempts,"
            " d.delivered_at, d.parked_at, d.last_status, d.last_error, d.created_at"
            " FROM notification_delivery d JOIN notification_endpoint e ON e.endpoint_id = d.endpoint_id"
            " WHERE d.scope = %s ORDER BY d.created_at DESC, d.delivery_id LIMIT %s", [project, limit])
        keys = ("id", "endpoint_id", "url", "formed_through", "stored_through", "attempts", "delivered_at",
                "parked_at", "last_status", "last_error", "created_at")
        rows = []
        for row in cursor.fetchall():
            item = dict(zip(keys, row))
            item["id"], item["endpoint_id"] = str(item["id"]), str(item["endpoint_id"])
            rows.append(item)
        return rows

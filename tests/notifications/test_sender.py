"""The sender's outcome rules against real sockets: a refused connection is retried later with the doubled
wait, an address that became private is final, and neither stores more than a fixed category."""
import socket

import pytest
from django.db import connection
from django.test import override_settings

from notifications import delivery, services

pytestmark = pytest.mark.django_db


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def row(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT attempts, last_status, last_error, parked_at IS NOT NULL, delivered_at IS NOT NULL,"
                       " extract(epoch FROM next_attempt_at - last_attempt_at), lease_until IS NULL"
                       " FROM notification_delivery WHERE scope = %s", [project])
        return cursor.fetchone()


def make_due(project):
    with connection.cursor() as cursor:
        cursor.execute("UPDATE notification_delivery SET next_attempt_at = now() - interval '1 second'"
                       " WHERE scope = %s", [project])


@override_settings(MEMOIR_NOTIFY_DESTINATIONS=["localhost"], MEMOIR_NOTIFY_ALLOW_PRIVATE=True,
                   MEMOIR_NOTIFY_RETRY_BASE_SECONDS=5.0, MEMOIR_NOTIFY_TIMEOUT_SECONDS=5.0)
def test_a_refused_connection_is_retried_and_a_private_address_is_final(new_project, settings):
    project, _ = new_project
    endpoint = services.register_endpoint(project=project, url=f"https://localhost:{closed_port()}/hook",
                                          principal="cli")
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO notification_delivery (delivery_id, endpoint_id, scope, formed_through,"
                       " stored_through, parked_turns, occurred_at, created_at, next_attempt_at)"
                       " VALUES (gen_random_uuid(), %s, %s, 3, 5, 0, now(), now(), now() - interval '1 second')",
                       [endpoint["id"], project])
    assert delivery.deliver_due() == 1
    assert row(project) == (1, None, "connection refused", False, False, 5, True)
    assert delivery.deliver_due() == 0  # not due for another 5 s
    make_due(project)
    assert delivery.deliver_due() == 1
    assert row(project)[:3] == (2, None, "connection refused") and row(project)[5] == 10  # the wait doubled
    settings.MEMOIR_NOTIFY_ALLOW_PRIVATE = False
    make_due(project)
    assert delivery.deliver_due() == 1
    assert row(project)[:5] == (3, None, "address not permitted", True, False)

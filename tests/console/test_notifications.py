"""The console's notification pages in headless Chromium: deliveries list parked ones first, an operator
retries a parked delivery (the same delivery id, queued again, one ledger row), and no page shows a secret."""
import uuid

import pytest
from django.db import connection

from notifications import services as notifications

from .conftest import ledger_mark, ledger_since, screenshot, submit

pytestmark = [pytest.mark.live, pytest.mark.browser]


def _deliveries(committed, project, endpoint_id):
    """One delivered and one parked delivery (the parked one older), written as the sender leaves them."""
    delivered, parked = str(uuid.uuid4()), str(uuid.uuid4())
    with committed(), connection.cursor() as cursor:
        insert = ("INSERT INTO notification_delivery (delivery_id, endpoint_id, scope, formed_through,"
                  " stored_through, parked_turns, occurred_at, created_at, attempts, next_attempt_at,"
                  " last_attempt_at, last_status, last_error, delivered_at, parked_at)"
                  " VALUES (%s, %s, %s, %s, %s, 0, now(), now() - %s::interval, %s, now(), now(), %s, %s, %s, %s)")
        cursor.execute(insert, [parked, endpoint_id, project, 0, 0, "1 hour", 7, 503, "destination answered 503",
                                None, "2026-01-01T00:00:00Z"])
        cursor.execute(insert, [delivered, endpoint_id, project, 1, 1, "1 minute", 1, 200, None,
                                "2026-01-01T00:00:00Z", None])
    return delivered, parked


def test_parked_deliveries_come_first_and_an_operator_retries_one(console, committed, project, settings):
    name, _, _ = project
    settings.MEMOIR_NOTIFY_DESTINATIONS = ["localhost"]
    settings.MEMOIR_NOTIFY_ALLOW_PRIVATE = True
    with committed():
        endpoint = notifications.register_endpoint(project=name, url="https://localhost:9/console-hook",
                                                   principal="cli")
    delivered, parked = _deliveries(committed, name, endpoint["id"])
    page = console("operator")
    page.goto(f"/console/notifications/notificationdelivery/?project__name__exact={name}")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 2
    assert parked in rows.nth(0).inner_text() and "parked" in rows.nth(0).inner_text()
    assert "destination answered 503" in rows.nth(0).inner_text()
    assert delivered in rows.nth(1).inner_text()
    screenshot(page, "notification-deliveries")
    mark = ledger_mark(committed)
    page.check(f'input[name="_selected_action"][value="{parked}"]')
    page.check(f'input[name="_selected_action"][value="{delivered}"]')  # a delivered one is left alone
    page.select_option('select[name="action"]', "retry_parked")
    submit(page, 'button[name="index"]')
    assert "1 parked deliveries queued again." in page.content()
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT delivery_id::text, attempts, parked_at IS NULL, delivered_at IS NULL"
                       " FROM notification_delivery WHERE scope = %s ORDER BY formed_through", [name])
        assert cursor.fetchall() == [(parked, 0, True, True), (delivered, 1, True, False)]
    assert [(e.operation, e.principal, e.magnitude) for e in ledger_since(committed, mark, project=name)
            if e.operation == "notification.retry"] == [("notification.retry", page.user.principal, 1)]

    page.goto(f"/console/notifications/notificationendpoint/?project__name__exact={name}")
    assert "https://localhost:9/console-hook" in page.content()
    assert endpoint["secret"] not in page.content()
    page.goto(f"/console/notifications/notificationendpoint/{endpoint['id']}/change/")
    assert endpoint["secret"] not in page.content() and "ciphertext" not in page.content().lower()

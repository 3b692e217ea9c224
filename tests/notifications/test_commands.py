"""`memoir_notifications`: the shell lists deliveries parked first and retries a parked one under its own id."""
import io
import uuid

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from notifications import services

pytestmark = pytest.mark.django_db


def run(*args):
    out = io.StringIO()
    call_command("memoir_notifications", *args, stdout=out)
    return out.getvalue()


@override_settings(MEMOIR_NOTIFY_DESTINATIONS=["localhost"], MEMOIR_NOTIFY_ALLOW_PRIVATE=True)
def test_deliveries_parked_first_and_retry(new_project):
    project, _ = new_project
    endpoint = services.register_endpoint(project=project, url="https://localhost:9/cli", principal="cli")
    parked, pending = str(uuid.uuid4()), str(uuid.uuid4())
    with connection.cursor() as cursor:
        for delivery_id, parked_at, error in ((pending, None, None), (parked, "2026-01-01T00:00:00Z", "timeout")):
            cursor.execute(
                "INSERT INTO notification_delivery (delivery_id, endpoint_id, scope, formed_through, stored_through,"
                " parked_turns, occurred_at, created_at, attempts, next_attempt_at, parked_at, last_error)"
                " VALUES (%s, %s, %s, 0, 0, 0, now(), now(), 7, now() + interval '1 hour', %s, %s)",
                [delivery_id, endpoint["id"], project, parked_at, error])
    lines = run("deliveries", "--project", project).splitlines()
    assert [line.split("\t")[:2] for line in lines] == [[parked, "parked"], [pending, "pending"]]
    assert "last_error=timeout" in lines[0]
    assert run("retry", parked, pending) == "1 parked deliveries queued again\n"
    states = {line.split("\t")[0]: line.split("\t")[1:4] for line in run("deliveries", "--project", project).splitlines()}
    assert states[parked] == ["pending", "formed_through=0", "attempts=0"]
    assert states[pending] == ["pending", "formed_through=0", "attempts=7"]
    assert run("endpoints", "--project", project).startswith(endpoint["id"] + "\thttps://localhost:9/cli\t")

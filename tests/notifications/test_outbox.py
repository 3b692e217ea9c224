"""The outbox in PostgreSQL: a delivery row is written by the transaction that advances the formed watermark,
a burst of formed turns is one pending delivery per endpoint, and a row a sender holds is never rewritten."""
import json
import uuid

import pytest
from django.db import connection, transaction
from django.test import Client, override_settings

from formation.driver import drain
from formation.rules import RulesProposer
from notifications import delivery, services

pytestmark = pytest.mark.django_db

SETTINGS = {"MEMOIR_NOTIFY_DESTINATIONS": ["localhost"], "MEMOIR_NOTIFY_ALLOW_PRIVATE": True}


def observe(token, content, subject="alice"):
    response = Client().post("/v1/observations", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
                             data=json.dumps({"idempotency_key": str(uuid.uuid4()), "data_subject_id": subject,
                                              "messages": [{"role": "user", "content": content}]}))
    assert response.status_code == 201


def deliveries(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT formed_through, stored_through, parked_turns, attempts, lease_until IS NOT NULL"
                       " FROM notification_delivery WHERE scope = %s ORDER BY formed_through, delivery_id", [project])
        return cursor.fetchall()


@override_settings(**SETTINGS)
def test_a_burst_of_formed_turns_is_one_pending_delivery(new_project):
    project, token = new_project
    services.register_endpoint(project=project, url="https://localhost:9/hook", principal="cli")
    for n in range(5):
        observe(token, f"I live in Town{n}.")
    assert drain(project, proposer=RulesProposer()).turns_formed == 5
    assert deliveries(project) == [(4, 4, 0, 0, False)]


@override_settings(**SETTINGS)
def test_a_claimed_delivery_is_never_rewritten_and_a_new_one_follows(new_project):
    project, token = new_project
    services.register_endpoint(project=project, url="https://localhost:9/hook", principal="cli")
    observe(token, "I live in Sligo.")
    drain(project, proposer=RulesProposer())
    _, claimed = delivery.claim_due(limit=16)
    assert [row[2] for row in claimed] == [0]
    observe(token, "I work at Acme.")
    drain(project, proposer=RulesProposer())
    assert deliveries(project) == [(0, 0, 0, 0, True), (1, 1, 0, 0, False)]


@override_settings(**SETTINGS)
def test_no_delivery_survives_a_rolled_back_watermark_advance(new_project):
    project, token = new_project
    services.register_endpoint(project=project, url="https://localhost:9/hook", principal="cli")
    observe(token, "I live in Ennis.")
    with pytest.raises(RuntimeError), transaction.atomic():
        drain(project, proposer=RulesProposer())
        assert len(deliveries(project)) == 1
        raise RuntimeError("roll the formation back")
    assert deliveries(project) == []


@override_settings(**SETTINGS)
def test_disabled_endpoints_and_other_projects_get_no_rows(new_project):
    from governance import services as governance

    project, token = new_project
    other = f"o_{uuid.uuid4().hex[:10]}"
    governance.create_project(name=other, principal="cli")
    endpoint = services.register_endpoint(project=other, url="https://localhost:9/hook", principal="cli")
    services.disable_endpoint(project=other, endpoint_id=endpoint["id"], principal="cli")
    observe(token, "I live in Kells.")
    drain(project, proposer=RulesProposer())
    assert deliveries(project) == [] and deliveries(other) == []


def test_the_error_column_only_holds_a_category(new_project):
    project, _ = new_project
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO notification_endpoint (endpoint_id, scope, url, secret_ciphertext, created_by,"
                       " created_at) VALUES (gen_random_uuid(), %s, 'https://x', '\\x00', 'cli', now())"
                       " RETURNING endpoint_id", [project])
        endpoint_id = cursor.fetchone()[0]
        insert = ("INSERT INTO notification_delivery (delivery_id, endpoint_id, scope, formed_through, stored_through,"
                  " parked_turns, occurred_at, created_at, next_attempt_at, last_error)"
                  " VALUES (gen_random_uuid(), %s, %s, 0, 0, 0, now(), now(), now(), %s)")
        for fine in ("timeout", "destination answered 503", "destination refused with 404"):
            cursor.execute(insert, [endpoint_id, project, fine])
        from django.db import IntegrityError
        for leaky in ("connect to 10.0.0.7:443 refused", "destination answered 503 from 10.0.0.7"):
            with pytest.raises(IntegrityError), transaction.atomic():
                cursor.execute(insert, [endpoint_id, project, leaky])

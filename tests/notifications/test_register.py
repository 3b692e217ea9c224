"""The notification routes in-process against the real database: a refused register writes nothing but its
ledger row, the secret is shown once and stored only as ciphertext, and with no destinations every route is 501."""
import json
import uuid

import pytest
from django.db import connection
from django.test import Client, override_settings

from notifications import secretbox

pytestmark = pytest.mark.django_db

ENABLED = {"MEMOIR_NOTIFY_DESTINATIONS": ["hooks.example", ".partner.example", "localhost", "10.1.2.3"]}


def post(token, path, body):
    return Client().post("/v1/notifications/" + path, data=json.dumps(body), content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {token}")


def ledger(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, outcome FROM audit_entry WHERE project = %s ORDER BY entry_id", [project])
        return cursor.fetchall()


def endpoint_rows(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notification_endpoint WHERE scope = %s", [project])
        return cursor.fetchone()[0]


def assert_refused_and_nothing_written(project, token, url):
    response = post(token, "endpoints/register", {"url": url})
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "invalid_destination", "message": "the destination is not valid"}}
    assert endpoint_rows(project) == 0
    assert ledger(project)[-1:] == [("notification.register", "refused")]
    assert len([row for row in ledger(project) if row[0] == "notification.register"]) == 1


@override_settings(**ENABLED)
def test_register_refuses_plain_http(new_project):
    assert_refused_and_nothing_written(*new_project, "http://hooks.example/taisce")


@override_settings(**ENABLED)
def test_register_refuses_credentials_in_the_url(new_project):
    project, token = new_project
    assert_refused_and_nothing_written(project, token, "https://user:pass@hooks.example/taisce")


@override_settings(**ENABLED)
def test_register_refuses_a_bare_user_in_the_url(new_project):
    assert_refused_and_nothing_written(*new_project, "https://user@hooks.example/taisce")


@override_settings(**ENABLED)
def test_register_refuses_a_host_not_in_the_list(new_project):
    assert_refused_and_nothing_written(*new_project, "https://evil.example/taisce")


@override_settings(**ENABLED)
def test_register_refuses_a_lookalike_of_a_listed_suffix(new_project):
    assert_refused_and_nothing_written(*new_project, "https://notpartner.example/taisce")


@override_settings(**ENABLED, MEMOIR_NOTIFY_ALLOW_PRIVATE=False)
def test_register_refuses_a_private_address(new_project):
    assert_refused_and_nothing_written(*new_project, "https://10.1.2.3/taisce")


@override_settings(**ENABLED, MEMOIR_NOTIFY_ALLOW_PRIVATE=False)
def test_register_refuses_a_name_that_resolves_to_loopback(new_project):
    assert_refused_and_nothing_written(*new_project, "https://localhost:8443/taisce")


@override_settings(MEMOIR_NOTIFY_DESTINATIONS=[])
def test_every_route_is_501_without_destinations_and_the_body_is_unread(new_project):
    project, token = new_project
    for path in ("endpoints/register", "endpoints/list", "endpoints/disable", "deliveries/list"):
        response = Client().post("/v1/notifications/" + path, data=b"not json", content_type="application/json",
                                 HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 501
        assert response.json()["error"]["code"] == "notifications_unavailable"
    assert [op for op, outcome in ledger(project) if outcome == "refused"] == [
        "notification.register", "notification.list", "notification.disable", "notification.deliveries"]


@override_settings(**ENABLED, MEMOIR_NOTIFY_ALLOW_PRIVATE=True)
def test_the_secret_is_shown_once_and_stored_only_as_ciphertext(new_project):
    project, token = new_project
    created = post(token, "endpoints/register", {"url": "https://localhost:8443/hook"})
    assert created.status_code == 200
    body = created.json()
    assert set(body) == {"id", "url", "created_at", "secret"} and body["url"] == "https://localhost:8443/hook"
    secret = body["secret"]
    listed = post(token, "endpoints/list", {})
    assert listed.json() == {"endpoints": [{"id": body["id"], "url": body["url"], "created_at": body["created_at"]}]}
    assert secret not in listed.content.decode()
    with connection.cursor() as cursor:
        cursor.execute("SELECT t::text FROM notification_endpoint t WHERE scope = %s", [project])
        row_text = cursor.fetchone()[0]
        cursor.execute("SELECT secret_ciphertext FROM notification_endpoint WHERE scope = %s", [project])
        ciphertext = bytes(cursor.fetchone()[0])
    assert secret not in row_text and secret.encode() not in ciphertext
    assert secretbox.unseal(ciphertext) == secret
    # The same URL twice is a conflict; a refused register writes no second endpoint.
    again = post(token, "endpoints/register", {"url": "https://localhost:8443/hook"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "invalid_destination"
    assert endpoint_rows(project) == 1
    assert ledger(project)[-3:] == [("notification.register", "allowed"), ("notification.list", "allowed"),
                               ("notification.register", "refused")]


@override_settings(**ENABLED, MEMOIR_NOTIFY_ALLOW_PRIVATE=True)
def test_disable_is_per_project_and_foreign_ids_are_not_found(new_project):
    from governance import services

    project, token = new_project
    other = f"o_{uuid.uuid4().hex[:10]}"
    services.create_project(name=other, principal="cli")
    _, other_token = services.issue_credential(project=other, name="t", principal="cli")
    created = post(token, "endpoints/register", {"url": "https://localhost:8443/hook"}).json()
    foreign = post(other_token, "endpoints/disable", {"id": created["id"]})
    unknown = post(other_token, "endpoints/disable", {"id": str(uuid.uuid4())})
    assert foreign.status_code == unknown.status_code == 404 and foreign.content == unknown.content
    assert post(other_token, "endpoints/list", {}).json() == {"endpoints": []}
    assert post(token, "endpoints/disable", {"id": created["id"]}).json() == {"disabled": True}
    listed = post(token, "endpoints/list", {}).json()["endpoints"]
    assert listed[0]["id"] == created["id"] and "disabled_at" in listed[0]

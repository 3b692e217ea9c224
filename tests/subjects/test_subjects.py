"""The subjects registry (api.md §7.7, governance.md §10): register and its replays, get, list, update
and its replays, conflicts, expiry and project isolation; plus the four 501 notification routes."""
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings

from core.errors import NotFound
from governance import services, subjects

from .conftest import V1, ledger, new_id, scalar

pytestmark = pytest.mark.django_db


def register(v1, key=None, **fields):
    return v1.post("/subjects/register", {"idempotency_key": key or new_id(), **fields})


def subject_count(project):
    return scalar("SELECT count(*) FROM data_subject WHERE scope = %s", [project])


def insert_expired_subject(project, *, reference=None):
    """A subject past inactive_after (read-only once written, so it is inserted that way)."""
    subject_id = new_id()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO data_subject (subject_id, scope, external_reference, label, version, updated_by,"
            " created_at, updated_at, inactive_after)"
            " VALUES (%s, %s, %s, '', %s, 'test', now() - interval '3 days', now() - interval '3 days',"
            " now() - interval '1 day')",
            [subject_id, project, reference, new_id()])
    return subject_id


# --- register ---------------------------------------------------------------------------------------


def test_register_answers_200_with_the_subject_and_an_atomic_ledger_row(v1):
    response = register(v1, external_reference="crm:42", label="Alice")
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["id", "version", "external_reference", "label", "updated_by", "created_at",
                          "updated_at", "inactive_after", "replayed"]
    assert (body["external_reference"], body["label"], body["replayed"], body["inactive_after"]) == (
        "crm:42", "Alice", False, None)
    assert uuid.UUID(body["id"]) and uuid.UUID(body["version"])
    assert body["created_at"].endswith("Z")
    assert subject_count(v1.project) == 1
    assert ledger(v1.project, "subject.register") == [("allowed", 1, "credential")]


def test_register_without_reference_omits_it_and_keeps_an_empty_label(v1):
    body = register(v1).json()
    assert "external_reference" not in body
    assert body["label"] == ""
    assert "inactive_after" in body and body["inactive_after"] is None


def test_inactive_after_follows_the_project_retention(v1):
    services.set_project_retention(name=v1.project, retention_days=30, principal="cli")
    body = register(v1).json()
    with connection.cursor() as cursor:
        cursor.execute("SELECT inactive_after - created_at FROM data_subject WHERE subject_id = %s", [body["id"]])
        assert cursor.fetchone()[0] == timedelta(days=30)
    assert body["inactive_after"] is not None


def test_same_key_and_fields_replay_the_current_state(v1):
    key = new_id()
    first = register(v1, key, external_reference="r1", label="L").json()
    again = register(v1, key, external_reference="r1", label="L")
    assert again.status_code == 200
    assert again.json() == {**first, "replayed": True}
    updated = v1.post("/subjects/update", {"id": first["id"], "expected_version": first["version"],
                                           "external_reference": "r2", "label": "M"}).json()
    after_update = register(v1, key, external_reference="r1", label="L").json()
    assert after_update["replayed"] is True
    assert (after_update["version"], after_update["external_reference"], after_update["label"]) == (
        updated["version"], "r2", "M")
    assert subject_count(v1.project) == 1
    assert [m for _, m, _ in ledger(v1.project, "subject.register")] == [1, 0, 0]


@pytest.mark.parametrize("change", [{"label": "other"}, {"external_reference": "r2"}, {"external_reference": None}])
def test_same_key_with_different_fields_is_subject_conflict(v1, change):
    key = new_id()
    register(v1, key, external_reference="r1", label="L")
    fields = {"external_reference": "r1", "label": "L", **change}
    response = register(v1, key, **{k: v for k, v in fields.items() if v is not None})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "subject_conflict"
    assert subject_count(v1.project) == 1


def test_a_taken_reference_is_subject_conflict_and_writes_nothing(v1):
    register(v1, external_reference="crm:1")
    response = register(v1, external_reference="crm:1", label="someone else")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "subject_conflict"
    assert subject_count(v1.project) == 1
    assert scalar("SELECT count(*) FROM subject_retry WHERE scope = %s", [v1.project]) == 1
    assert ledger(v1.project, "subject.register")[-1] == ("refused", 0, "credential")


def test_references_are_exact_and_case_sensitive(v1):
    assert register(v1, external_reference="Crm:1").status_code == 200
    assert register(v1, external_reference="crm:1").status_code == 200


def test_the_same_reference_in_another_project_is_independent(v1, other_v1):
    assert register(v1, external_reference="crm:1").status_code == 200
    assert register(other_v1, external_reference="crm:1").status_code == 200


def test_an_erased_subjects_key_is_a_tombstone(v1):
    key = new_id()
    body = register(v1, key, label="L").json()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM data_subject WHERE subject_id = %s", [body["id"]])
    response = register(v1, key, label="L")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "subject_conflict"
    assert subject_count(v1.project) == 0


INVALID_REGISTRATIONS = {
    "missing key": {"idempotency_key": None},
    "key not a uuid": {"idempotency_key": "k1"},
    "key unhyphenated": {"idempotency_key": uuid.uuid4().hex},
    "reference over 1024 bytes": {"external_reference": "r" * 1025},
    "blank reference": {"external_reference": "   "},
    "reference with NUL": {"external_reference": "a\x00"},
    "label over 256 bytes": {"label": "é" * 129},
    "label with NUL": {"label": "\x00"},
}


@pytest.mark.parametrize("case", sorted(INVALID_REGISTRATIONS))
def test_invalid_registration_is_invalid_subject(v1, case):
    body = {"idempotency_key": new_id(), **INVALID_REGISTRATIONS[case]}
    response = v1.post("/subjects/register", {k: v for k, v in body.items() if v is not None})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_subject")
    assert subject_count(v1.project) == 0


# --- get and list -----------------------------------------------------------------------------------


def test_get_by_id_or_reference(v1):
    created = register(v1, external_reference="crm:7", label="L").json()
    expected = {k: v for k, v in created.items() if k != "replayed"}
    by_id = v1.post("/subjects/get", {"id": created["id"].upper()})
    by_reference = v1.post("/subjects/get", {"external_reference": "crm:7"})
    assert (by_id.status_code, by_reference.status_code) == (200, 200)
    assert by_id.json() == expected == by_reference.json()
    assert ledger(v1.project, "subject.get") == [("allowed", 1, "credential")] * 2


@pytest.mark.parametrize("body", [{}, {"id": None}, {"id": "x"},
                                  {"id": "00000000-0000-0000-0000-000000000000", "external_reference": "r"}])
def test_get_needs_exactly_one_valid_selector(v1, body):
    response = v1.post("/subjects/get", body)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_subject")


def test_unknown_foreign_and_expired_subjects_are_the_same_404(v1, other_v1):
    foreign = register(other_v1, external_reference="crm:9").json()
    expired = insert_expired_subject(v1.project, reference="old")
    answers = [
        v1.post("/subjects/get", {"id": new_id()}),
        v1.post("/subjects/get", {"id": foreign["id"]}),
        v1.post("/subjects/get", {"external_reference": "crm:9"}),
        v1.post("/subjects/get", {"id": expired}),
        v1.post("/subjects/get", {"external_reference": "old"}),
    ]
    assert {a.status_code for a in answers} == {404}
    assert len({a.content for a in answers}) == 1
    assert v1.post("/subjects/list", {}).json() == {"subjects": []}


def test_an_expired_subject_still_named_by_a_source_stays_visible(v1):
    from memory.services import observe

    expired = insert_expired_subject(v1.project)
    observe(project=v1.project, data_subject_id=expired,
            messages=[{"role": "user", "content": "hello", "group_ordinal": 0}])
    assert v1.post("/subjects/get", {"id": expired}).status_code == 200


def test_get_selector_hides_a_subject_once_inactive_after_passes(v1):
    services.set_project_retention(name=v1.project, retention_days=1, principal="cli")
    body = register(v1).json()
    subject = subjects.get_subject(project=v1.project, subject_id=body["id"])
    assert subjects.get_subject(project=v1.project, subject_id=body["id"],
                                now=subject.inactive_after - timedelta(seconds=1)).id == body["id"]
    with pytest.raises(NotFound):
        subjects.get_subject(project=v1.project, subject_id=body["id"], now=subject.inactive_after)


def test_list_pages_by_id_with_a_string_cursor(v1):
    ids = sorted(register(v1).json()["id"] for _ in range(5))
    first = v1.post("/subjects/list", {"limit": 2}).json()
    assert [s["id"] for s in first["subjects"]] == ids[:2]
    assert first["next"] == {"id": ids[1]}
    rest = v1.post("/subjects/list", {"limit": 3, "after": ids[1]}).json()
    assert [s["id"] for s in rest["subjects"]] == ids[2:]
    assert "next" not in rest
    assert [s["id"] for s in v1.post("/subjects/list", {"limit": 0}).json()["subjects"]] == ids
    assert "replayed" not in rest["subjects"][0]
    assert ledger(v1.project, "subject.list")[-1] == ("allowed", 5, "credential")


def test_list_defaults_to_20(v1):
    for _ in range(21):
        register(v1)
    body = v1.post("/subjects/list", {}).json()
    assert len(body["subjects"]) == 20 and "next" in body


@pytest.mark.parametrize("body", [{"limit": 101}, {"limit": -1}, {"after": "nope"}])
def test_list_validation_is_invalid_subject(v1, body):
    response = v1.post("/subjects/list", body)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_subject")


def test_list_cursor_as_an_object_is_invalid_body(v1):
    response = v1.post("/subjects/list", {"after": {"id": new_id()}})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_body")


# --- update -----------------------------------------------------------------------------------------


def update(v1, subject, version=None, **fields):
    return v1.post("/subjects/update", {"id": subject["id"], "expected_version": version or subject["version"],
                                        **fields})


def test_update_applies_and_an_identical_retry_replays(v1):
    created = register(v1, external_reference="r1", label="L").json()
    response = update(v1, created, external_reference="r2", label="M")
    assert response.status_code == 200
    body = response.json()
    assert (body["external_reference"], body["label"], body["replayed"]) == ("r2", "M", False)
    assert body["version"] != created["version"] and body["id"] == created["id"]
    assert body["created_at"] == created["created_at"]
    retry = update(v1, created, external_reference="r2", label="M")
    assert retry.status_code == 200
    assert retry.json() == {**body, "replayed": True}
    assert [m for _, m, _ in ledger(v1.project, "subject.update")] == [1, 0]


def test_omitted_or_empty_fields_clear(v1):
    created = register(v1, external_reference="r1", label="L").json()
    body = update(v1, created, external_reference="").json()
    assert "external_reference" not in body and body["label"] == ""
    assert v1.post("/subjects/get", {"external_reference": "r1"}).status_code == 404
    assert register(v1, external_reference="r1").status_code == 200


def test_stale_versions_and_changed_retries_conflict(v1):
    created = register(v1, label="L").json()
    update(v1, created, label="M")
    changed_retry = update(v1, created, label="N")
    unknown_version = update(v1, created, version=new_id(), label="M")
    for response in (changed_retry, unknown_version):
        assert (response.status_code, response.json()["error"]["code"]) == (409, "subject_conflict")
    assert v1.post("/subjects/get", {"id": created["id"]}).json()["label"] == "M"


def test_update_to_a_taken_reference_conflicts(v1):
    register(v1, external_reference="taken")
    other = register(v1, external_reference="mine").json()
    response = update(v1, other, external_reference="taken")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "subject_conflict")
    assert v1.post("/subjects/get", {"id": other["id"]}).json()["external_reference"] == "mine"
    assert ledger(v1.project, "subject.update") == [("refused", 0, "credential")]


def test_update_of_unknown_foreign_or_expired_subject_is_404(v1, other_v1):
    foreign = register(other_v1).json()
    expired = insert_expired_subject(v1.project)
    for subject_id in (new_id(), foreign["id"], expired):
        response = v1.post("/subjects/update", {"id": subject_id, "expected_version": new_id()})
        assert response.status_code == 404
    assert other_v1.post("/subjects/get", {"id": foreign["id"]}).json()["version"] == foreign["version"]


@pytest.mark.parametrize("body", [{"expected_version": None}, {"id": None}, {"id": "x"},
                                  {"label": "l" * 257}])
def test_update_validation_is_invalid_subject(v1, body):
    created = register(v1).json()
    payload = {"id": created["id"], "expected_version": created["version"], **body}
    response = v1.post("/subjects/update", {k: v for k, v in payload.items() if v is not None})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_subject")


def test_read_only_may_get_and_list_but_not_register_or_update(v1):
    created = register(v1).json()
    _, token = services.issue_credential(project=v1.project, name="ro", access="read_only", principal="cli")
    ro = V1(v1.project, token)
    assert ro.post("/subjects/get", {"id": created["id"]}).status_code == 200
    assert ro.post("/subjects/list", {}).status_code == 200
    assert ro.post("/subjects/register", {"idempotency_key": new_id()}).status_code == 403
    assert ro.post("/subjects/update", {}).status_code == 403


# --- notifications ----------------------------------------------------------------------------------

NOTIFICATION_ROUTES = {
    "/notifications/endpoints/register": "notification.register",
    "/notifications/endpoints/list": "notification.list",
    "/notifications/endpoints/disable": "notification.disable",
    "/notifications/deliveries/list": "notification.deliveries",
}


@pytest.mark.parametrize("path", sorted(NOTIFICATION_ROUTES))
@override_settings(MEMOIR_NOTIFY_DESTINATIONS=[])  # off, whatever an earlier test left
def test_notifications_are_501_without_reading_the_body(v1, path):
    for raw in ("{}", "not json at all", ""):
        response = v1.post(path, raw=raw)
        assert response.status_code == 501
        assert response.json() == {"error": {"code": "notifications_unavailable",
                                             "message": response.json()["error"]["message"]}}
    assert ledger(v1.project, NOTIFICATION_ROUTES[path]) == [("refused", 0, "credential")] * 3


@pytest.mark.parametrize("path", sorted(NOTIFICATION_ROUTES))
@override_settings(MEMOIR_NOTIFY_DESTINATIONS=[])  # off, whatever an earlier test left
def test_notifications_check_access_first(v1, path):
    _, token = services.issue_credential(project=v1.project, name="ro", access="read_only", principal="cli")
    response = V1(v1.project, token).post(path, raw="junk")
    read_allowed = NOTIFICATION_ROUTES[path] in ("notification.list", "notification.deliveries")
    assert response.status_code == (501 if read_allowed else 403)
    unauthenticated = V1(v1.project, "mem_" + "A" * 43).post(path, {})
    assert unauthenticated.status_code == 401


def test_notifications_answer_405_to_get(v1):
    response = v1.client.get("/v1/notifications/endpoints/list", HTTP_AUTHORIZATION=f"Bearer {v1.token}")
    assert response.status_code == 405

"""artifacts/put, get, list and delete (api.md §7.7, governance.md §11): every outcome row, the storage
allowance, tombstones, expiry before the sweep, literal name prefixes and project isolation."""
import base64
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from core.errors import Invalid, NotFound
from governance import artifacts, services

from .conftest import V1, b64, insert_expired_artifact, ledger, new_id, scalar

pytestmark = pytest.mark.django_db


def put(v1, artifact_id=None, *, subject="alice", kind="state", content=b"hello", **extra):
    body = {"id": artifact_id or new_id(), "data_subject_id": subject, "kind": kind, "content": b64(content)}
    body.update(extra)
    return v1.post("/artifacts/put", body)


def used(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT used_bytes, used_objects FROM agent_storage_policy WHERE scope = %s", [project])
        return cursor.fetchone()


def artifact_count(project):
    return scalar("SELECT count(*) FROM agent_artifact WHERE scope = %s", [project])


# --- put: the outcome table -------------------------------------------------------------------------


def test_new_id_without_version_creates_a_born_formed_owner_and_its_registration(v1):
    artifact_id = new_id()
    response = put(v1, artifact_id, content=b"state bytes", name="session")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "version", "data_subject_id", "kind", "name", "source_observation_id", "bytes",
                         "authored_by", "created_at", "updated_at", "expires_at", "replayed"}
    assert (body["id"], body["data_subject_id"], body["kind"], body["name"], body["bytes"], body["replayed"]) == (
        artifact_id, "alice", "state", "session", 11, False)
    assert body["expires_at"].endswith("Z") and body["created_at"].endswith("Z")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT kind, formed_at IS NOT NULL, retention_until, data_subject_id, log_offset,"
            " (SELECT count(*) FROM turn_message t WHERE t.observation_id = o.observation_id)"
            " FROM observation o WHERE scope = %s AND observation_id = %s",
            [v1.project, body["source_observation_id"]])
        kind, formed, retention_until, subject, offset, messages = cursor.fetchone()
        cursor.execute("SELECT expires_at, authored_by FROM agent_artifact WHERE artifact_id = %s", [artifact_id])
        expires_at, authored_by = cursor.fetchone()
        cursor.execute(
            "SELECT source_observation_id::text, data_subject_id, retention_until FROM projection_dependency"
            " WHERE scope = %s AND projection_kind = 'agent_artifact' AND projection_id = %s",
            [v1.project, artifact_id])
        registration = cursor.fetchall()
        cursor.execute("SELECT log_offset, formed_offset FROM watermark WHERE scope = %s", [v1.project])
        watermark = cursor.fetchone()
    assert (kind, formed, subject, offset, messages) == ("artifact", True, "alice", 0, 0)
    assert retention_until == expires_at
    assert registration == [(body["source_observation_id"], "alice", expires_at)]
    assert watermark == (0, 0)
    assert authored_by == body["authored_by"]
    assert used(v1.project) == (11, 1)
    assert ledger(v1.project, "artifact.put") == [("allowed", 1, "credential")]


def test_expiry_is_the_policy_age_or_the_earlier_project_retention(v1):
    first = put(v1).json()
    with connection.cursor() as cursor:
        cursor.execute("SELECT expires_at - created_at FROM agent_artifact WHERE artifact_id = %s", [first["id"]])
        assert cursor.fetchone()[0] == timedelta(hours=720)
    services.set_project_retention(name=v1.project, retention_days=2, principal="cli")
    second = put(v1).json()
    with connection.cursor() as cursor:
        cursor.execute("SELECT expires_at - created_at FROM agent_artifact WHERE artifact_id = %s", [second["id"]])
        assert cursor.fetchone()[0] == timedelta(days=2)


def test_new_id_with_a_version_is_not_found_and_writes_nothing(v1):
    response = put(v1, expected_version=new_id())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert artifact_count(v1.project) == 0
    assert scalar("SELECT count(*) FROM observation WHERE scope = %s", [v1.project]) == 0
    assert ledger(v1.project, "artifact.put") == [("refused", 0, "credential")]


def test_identical_put_without_version_replays_the_current_metadata(v1):
    artifact_id = new_id()
    first = put(v1, artifact_id, name="n").json()
    again = put(v1, artifact_id, name="n")
    assert again.status_code == 200
    body = again.json()
    assert body["replayed"] is True
    assert {k: v for k, v in body.items() if k != "replayed"} == {k: v for k, v in first.items() if k != "replayed"}
    assert artifact_count(v1.project) == 1
    assert scalar("SELECT count(*) FROM observation WHERE scope = %s", [v1.project]) == 1
    assert ledger(v1.project, "artifact.put") == [("allowed", 1, "credential"), ("allowed", 0, "credential")]


@pytest.mark.parametrize("change", [{"content": b"other"}, {"name": "renamed"}])
def test_a_different_put_without_version_is_last_write_wins(v1, change):
    artifact_id = new_id()
    first = put(v1, artifact_id, name="n").json()
    fields = {"content": b"hello", "name": "n", **change}
    response = put(v1, artifact_id, content=fields["content"], name=fields["name"])
    assert response.status_code == 200
    body = response.json()
    assert body["replayed"] is False and body["version"] != first["version"]
    got = v1.post("/artifacts/get", {"id": artifact_id}).json()
    assert (got["version"], base64.b64decode(got["content"]), got["name"]) == (
        body["version"], fields["content"], fields["name"])
    assert artifact_count(v1.project) == 1
    assert ledger(v1.project, "artifact.put") == [("allowed", 1, "credential"), ("allowed", 1, "credential")]


@pytest.mark.parametrize("change", [{"subject": "bob"}, {"kind": "file"}])
def test_a_changed_subject_or_kind_without_version_is_still_a_conflict(v1, change):
    artifact_id = new_id()
    first = put(v1, artifact_id, name="n").json()
    fields = {"subject": "alice", "kind": "state", **change}
    response = put(v1, artifact_id, name="n", subject=fields["subject"], kind=fields["kind"])
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "artifact_conflict"
    got = v1.post("/artifacts/get", {"id": artifact_id}).json()
    assert (got["version"], base64.b64decode(got["content"]), got["name"]) == (first["version"], b"hello", "n")


def test_current_version_updates_name_and_content_but_never_the_deadline(v1):
    artifact_id = new_id()
    first = put(v1, artifact_id, name="a", content=b"one").json()
    response = put(v1, artifact_id, name="b", content=b"three", expected_version=first["version"])
    assert response.status_code == 200
    body = response.json()
    assert body["replayed"] is False
    assert body["version"] != first["version"]
    assert (body["name"], body["bytes"]) == ("b", 5)
    assert (body["expires_at"], body["created_at"], body["source_observation_id"]) == (
        first["expires_at"], first["created_at"], first["source_observation_id"])
    got = v1.post("/artifacts/get", {"id": artifact_id}).json()
    assert base64.b64decode(got["content"]) == b"three" and got["version"] == body["version"]
    assert used(v1.project) == (5, 1)
    assert ledger(v1.project, "artifact.put") == [("allowed", 1, "credential"), ("allowed", 1, "credential")]


@pytest.mark.parametrize("change", [{"subject": "bob"}, {"kind": "file"}])
def test_current_version_with_a_changed_subject_or_kind_is_a_conflict(v1, change):
    artifact_id = new_id()
    first = put(v1, artifact_id).json()
    fields = {"subject": "alice", "kind": "state", **change}
    response = put(v1, artifact_id, expected_version=first["version"], content=b"new", **fields)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "artifact_conflict"


def test_previous_version_with_the_last_written_content_replays(v1):
    artifact_id = new_id()
    first = put(v1, artifact_id, content=b"one").json()
    second = put(v1, artifact_id, content=b"two", expected_version=first["version"]).json()
    retry = put(v1, artifact_id, content=b"two", expected_version=first["version"])
    assert retry.status_code == 200
    assert retry.json()["replayed"] is True
    assert retry.json()["version"] == second["version"]
    assert ledger(v1.project, "artifact.put")[-1] == ("allowed", 0, "credential")


def test_previous_version_with_different_content_and_any_other_version_conflict(v1):
    artifact_id = new_id()
    first = put(v1, artifact_id, content=b"one").json()
    put(v1, artifact_id, content=b"two", expected_version=first["version"])
    stale = put(v1, artifact_id, content=b"three", expected_version=first["version"])
    unknown = put(v1, artifact_id, content=b"two", expected_version=new_id())
    assert (stale.status_code, unknown.status_code) == (409, 409)
    assert {stale.json()["error"]["code"], unknown.json()["error"]["code"]} == {"artifact_conflict"}


def test_a_deleted_id_is_spent_for_good(v1):
    artifact_id = new_id()
    first = put(v1, artifact_id).json()
    deleted = v1.post("/artifacts/delete", {"id": artifact_id, "expected_version": first["version"]})
    assert deleted.status_code == 200
    again = put(v1, artifact_id)
    with_version = put(v1, artifact_id, expected_version=first["version"])
    assert (again.status_code, with_version.status_code) == (409, 409)
    assert again.json()["error"]["code"] == "artifact_conflict"
    assert artifact_count(v1.project) == 0


def test_an_expired_id_awaiting_its_sweep_is_spent_too(v1):
    artifact_id = new_id()
    insert_expired_artifact(v1.project, artifact_id=artifact_id)
    response = put(v1, artifact_id, content=b"x")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "artifact_conflict"


def test_two_projects_each_hold_the_same_id_and_neither_learns_of_the_other(v1, other_v1):
    artifact_id = new_id()
    mine = put(v1, artifact_id, content=b"mine")
    # The other project's put of the same id is an ordinary create: no conflict, nothing that says it is taken.
    theirs = put(other_v1, artifact_id, subject="bob", kind="file", content=b"theirs")
    assert (mine.status_code, theirs.status_code) == (200, 200)
    assert theirs.json()["replayed"] is False and theirs.json()["id"] == artifact_id
    assert base64.b64decode(v1.post("/artifacts/get", {"id": artifact_id}).json()["content"]) == b"mine"
    assert base64.b64decode(other_v1.post("/artifacts/get", {"id": artifact_id}).json()["content"]) == b"theirs"
    # Deleting one leaves the other, and the tombstone spends the id in its own project only.
    version = mine.json()["version"]
    assert v1.post("/artifacts/delete", {"id": artifact_id, "expected_version": version}).status_code == 200
    assert other_v1.post("/artifacts/get", {"id": artifact_id}).status_code == 200
    again = put(other_v1, artifact_id, subject="bob", kind="file", content=b"theirs")
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert put(v1, artifact_id, content=b"mine").status_code == 409
    assert (artifact_count(v1.project), artifact_count(other_v1.project)) == (0, 1)


def test_a_project_may_use_an_id_another_project_deleted(v1, other_v1):
    artifact_id = new_id()
    first = put(v1, artifact_id).json()
    assert v1.post("/artifacts/delete", {"id": artifact_id, "expected_version": first["version"]}).status_code == 200
    assert put(other_v1, artifact_id).status_code == 200


# --- the storage allowance --------------------------------------------------------------------------


def _configure(project, **limits):
    values = {"max_object_bytes": 262144, "max_bytes": 16777216, "max_objects": 128, "max_age_hours": 720,
              **limits}
    return artifacts.configure_storage(project=project, principal="cli", **values)


def test_too_many_objects_is_429_storage_capacity_without_retry_after(v1):
    _configure(v1.project, max_objects=1)
    assert put(v1).status_code == 200
    response = put(v1)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "storage_capacity"
    assert "Retry-After" not in response
    assert artifact_count(v1.project) == 1
    assert scalar("SELECT count(*) FROM observation WHERE scope = %s", [v1.project]) == 1
    assert used(v1.project) == (5, 1)
    assert ledger(v1.project, "artifact.put")[-1] == ("refused", 0, "credential")


def test_too_many_bytes_and_a_growing_update_are_refused(v1):
    _configure(v1.project, max_bytes=10)
    first = put(v1, content=b"12345678").json()
    assert put(v1, content=b"123").status_code == 429
    grow = put(v1, first["id"], content=b"12345678901", expected_version=first["version"])
    assert grow.status_code == 429 and "Retry-After" not in grow
    shrink = put(v1, first["id"], content=b"1", expected_version=first["version"])
    assert shrink.status_code == 200
    assert used(v1.project) == (1, 1)


def test_object_size_over_policy_is_429_but_over_512_kib_is_400(v1):
    _configure(v1.project, max_object_bytes=10)
    over_policy = put(v1, content=b"x" * 11)
    assert over_policy.status_code == 429
    assert over_policy.json()["error"]["code"] == "storage_capacity"
    over_hard_limit = put(v1, content=b"x" * 524_289)
    assert over_hard_limit.status_code == 400
    assert over_hard_limit.json()["error"]["code"] == "invalid_artifact"
    assert used(v1.project) == (0, 0)


def test_exactly_512_kib_is_accepted_under_a_policy_that_allows_it(v1):
    _configure(v1.project, max_object_bytes=524_288)
    response = put(v1, content=b"\x00" * 524_288)
    assert response.status_code == 200
    assert response.json()["bytes"] == 524_288


def test_deleting_releases_the_allowance(v1):
    _configure(v1.project, max_objects=1)
    first = put(v1).json()
    v1.post("/artifacts/delete", {"id": first["id"], "expected_version": first["version"]})
    assert used(v1.project) == (0, 0)
    assert put(v1).status_code == 200


def test_configure_checks_ranges_and_writes_its_ledger_row(v1):
    policy = _configure(v1.project, max_objects=3, max_age_hours=1)
    assert (policy.max_objects, policy.max_age_hours) == (3, 1)
    with pytest.raises(Invalid):
        _configure(v1.project, max_objects=0)
    with pytest.raises(Invalid):
        _configure(v1.project, max_object_bytes=524_289)
    with pytest.raises(NotFound):
        _configure("no_such_project")
    assert ledger(v1.project, "artifact.configure") == [("allowed", 1, "operator")]
    body = put(v1).json()
    with connection.cursor() as cursor:
        cursor.execute("SELECT expires_at - created_at FROM agent_artifact WHERE artifact_id = %s", [body["id"]])
        assert cursor.fetchone()[0] == timedelta(hours=1)


def test_memoir_storage_limits_command_keeps_omitted_limits(v1, capsys):
    call_command("memoir_storage", "limits", "--project", v1.project, "--max-objects", "7")
    policy = artifacts.get_storage_policy(project=v1.project)
    assert (policy.max_objects, policy.max_object_bytes, policy.max_bytes, policy.max_age_hours) == (
        7, 262144, 16777216, 720)
    assert "max_objects=7" in capsys.readouterr().out
    with pytest.raises(CommandError):
        call_command("memoir_storage", "limits", "--project", v1.project, "--max-age-hours", "8761")
    with connection.cursor() as cursor:
        cursor.execute("SELECT principal, principal_kind FROM audit_entry WHERE project = %s"
                       " AND operation = 'artifact.configure'", [v1.project])
        assert cursor.fetchall() == [("cli", "operator")]


# --- put: validation --------------------------------------------------------------------------------

INVALID_PUTS = {
    "id not a uuid": {"id": "not-a-uuid"},
    "id in braces": {"id": "{" + "0" * 8 + "-0000-0000-0000-" + "0" * 12 + "}"},
    "missing subject": {"data_subject_id": None},
    "blank subject": {"data_subject_id": "  "},
    "subject over 1024 bytes": {"data_subject_id": "é" * 513},
    "subject with NUL": {"data_subject_id": "a\x00b"},
    "missing kind": {"kind": None},
    "unknown kind": {"kind": "blob"},
    "name over 256 bytes": {"name": "n" * 257},
    "name with NUL": {"name": "a\x00"},
    "missing content": {"content": None},
    "unpadded base64": {"content": "aGk"},
    "non-zero pad bits": {"content": "aGj="},
    "url-safe alphabet": {"content": "-_-_"},
    "whitespace in base64": {"content": "aGVs bG8="},
    "not base64": {"content": "***"},
    "version not a uuid": {"expected_version": "v1"},
}


@pytest.mark.parametrize("case", sorted(INVALID_PUTS))
def test_invalid_put_is_400_invalid_artifact_and_writes_nothing(v1, case):
    body = {"id": new_id(), "data_subject_id": "alice", "kind": "state", "content": b64(b"hello")}
    for key, value in INVALID_PUTS[case].items():
        if value is None:
            body.pop(key)
        else:
            body[key] = value
    response = v1.post("/artifacts/put", body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_artifact"
    assert artifact_count(v1.project) == 0
    assert ledger(v1.project, "artifact.put") == [("refused", 0, "credential")]


def test_empty_content_is_zero_bytes(v1):
    artifact_id = new_id()
    response = v1.post("/artifacts/put", {"id": artifact_id, "data_subject_id": "a", "kind": "file", "content": ""})
    assert response.status_code == 200
    assert response.json()["bytes"] == 0
    assert v1.post("/artifacts/get", {"id": artifact_id}).json()["content"] == ""


def test_uppercase_id_is_stored_lowercase(v1):
    artifact_id = new_id()
    body = put(v1, artifact_id.upper()).json()
    assert body["id"] == artifact_id


def test_unknown_field_is_invalid_body(v1):
    response = v1.post("/artifacts/put", {"id": new_id(), "data_subject_id": "a", "kind": "state", "content": "",
                                          "scope": "x"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_body"


# --- get --------------------------------------------------------------------------------------------


def test_get_returns_metadata_and_content_and_checks_the_subject(v1):
    artifact_id = new_id()
    created = put(v1, artifact_id, content=b"\x00\xffdata", name="f").json()
    got = v1.post("/artifacts/get", {"id": artifact_id, "data_subject_id": "alice"})
    assert got.status_code == 200
    body = got.json()
    assert base64.b64decode(body["content"]) == b"\x00\xffdata"
    assert {k: v for k, v in body.items() if k != "content"} == {k: v for k, v in created.items()
                                                                 if k != "replayed"}
    other = v1.post("/artifacts/get", {"id": artifact_id, "data_subject_id": "bob"})
    assert other.status_code == 404
    assert other.json() == v1.post("/artifacts/get", {"id": new_id()}).json()
    assert ledger(v1.project, "artifact.get") == [("allowed", 1, "credential"), ("refused", 0, "credential"),
                                                  ("refused", 0, "credential")]


def test_get_of_an_expired_artifact_is_404_before_any_sweep(v1):
    artifact_id = new_id()
    insert_expired_artifact(v1.project, artifact_id=artifact_id)
    response = v1.post("/artifacts/get", {"id": artifact_id})
    assert response.status_code == 404
    assert artifact_count(v1.project) == 1  # still there: hidden, not yet swept


def test_get_selector_hides_an_artifact_once_its_deadline_passes(v1):
    body = put(v1).json()
    artifact = artifacts.get_artifact(project=v1.project, artifact_id=body["id"])
    assert artifacts.get_artifact(project=v1.project, artifact_id=body["id"],
                                  now=artifact.expires_at - timedelta(seconds=1)).id == body["id"]
    with pytest.raises(NotFound):
        artifacts.get_artifact(project=v1.project, artifact_id=body["id"], now=artifact.expires_at)
    page, _ = artifacts.list_artifacts(project=v1.project, now=artifact.expires_at)
    assert page == []


def test_get_with_an_invalid_id_is_400(v1):
    response = v1.post("/artifacts/get", {"id": "nope"})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_artifact")


# --- list -------------------------------------------------------------------------------------------


def test_list_filters_by_kind_subject_and_a_literal_name_prefix(v1):
    names = {"50%_off": "state", "50xyoff": "state", "a_b": "file", "axb": "file", "back\\slash": "state",
             "backXslash": "state"}
    ids = {}
    for name, kind in names.items():
        ids[name] = put(v1, name=name, kind=kind, subject="alice" if kind == "state" else "bob").json()["id"]

    def listed(**filters):
        response = v1.post("/artifacts/list", filters)
        assert response.status_code == 200
        return sorted(a["name"] for a in response.json()["artifacts"])

    assert listed(name_prefix="50%") == ["50%_off"]
    assert listed(name_prefix="a_") == ["a_b"]
    assert listed(name_prefix="back\\") == ["back\\slash"]
    assert listed(name_prefix="A_") == []  # case-sensitive
    assert listed(kind="file") == ["a_b", "axb"]
    assert listed(data_subject_id="alice") == sorted(n for n, k in names.items() if k == "state")
    assert listed(kind="state", name_prefix="50") == ["50%_off", "50xyoff"]
    assert listed() == sorted(names)


def test_list_pages_by_id_with_a_string_cursor_and_hides_expired(v1):
    expired = new_id()
    insert_expired_artifact(v1.project, artifact_id=expired)
    ids = sorted(put(v1).json()["id"] for _ in range(5))
    first = v1.post("/artifacts/list", {"limit": 2}).json()
    assert [a["id"] for a in first["artifacts"]] == ids[:2]
    assert first["next"] == {"id": ids[1]}
    second = v1.post("/artifacts/list", {"limit": 2, "after": first["next"]["id"]}).json()
    assert [a["id"] for a in second["artifacts"]] == ids[2:4]
    last = v1.post("/artifacts/list", {"limit": 2, "after": ids[3]}).json()
    assert [a["id"] for a in last["artifacts"]] == ids[4:]
    assert "next" not in last
    everything = v1.post("/artifacts/list", {"limit": 0}).json()
    assert [a["id"] for a in everything["artifacts"]] == ids
    assert "content" not in everything["artifacts"][0]
    assert ledger(v1.project, "artifact.list")[-1] == ("allowed", 5, "credential")


def test_list_defaults_to_20(v1):
    for _ in range(21):
        put(v1, content=b"")
    body = v1.post("/artifacts/list", {}).json()
    assert len(body["artifacts"]) == 20 and "next" in body


@pytest.mark.parametrize("body", [{"limit": 101}, {"limit": -1}, {"after": "x"}, {"kind": "blob"},
                                  {"name_prefix": "n" * 257}, {"data_subject_id": "a\x00"}])
def test_list_validation_is_400_invalid_artifact(v1, body):
    response = v1.post("/artifacts/list", body)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_artifact")


# --- delete -----------------------------------------------------------------------------------------


def test_delete_refuses_a_stale_version_and_without_one_deletes_whatever_is_current(v1):
    body = put(v1).json()
    stale = v1.post("/artifacts/delete", {"id": body["id"], "expected_version": new_id()})
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "artifact_conflict")
    wrong_subject = v1.post("/artifacts/delete", {"id": body["id"], "data_subject_id": "bob"})
    assert wrong_subject.status_code == 404
    assert artifact_count(v1.project) == 1
    put(v1, body["id"], content=b"newer")
    unconditional = v1.post("/artifacts/delete", {"id": body["id"], "data_subject_id": "alice"})
    assert (unconditional.status_code, unconditional.json()) == (200, {"deleted": True})
    assert artifact_count(v1.project) == 0
    assert v1.post("/artifacts/delete", {"id": body["id"]}).status_code == 404


def test_delete_removes_artifact_and_owner_and_leaves_a_tombstone(v1):
    body = put(v1).json()
    response = v1.post("/artifacts/delete", {"id": body["id"], "expected_version": body["version"],
                                             "data_subject_id": "alice"})
    assert response.status_code == 200
    assert response.json() == {"deleted": True}
    assert artifact_count(v1.project) == 0
    assert scalar("SELECT count(*) FROM observation WHERE observation_id = %s", [body["source_observation_id"]]) == 0
    assert scalar("SELECT count(*) FROM projection_dependency WHERE scope = %s", [v1.project]) == 0
    assert scalar("SELECT count(*) FROM artifact_tombstone WHERE scope = %s AND artifact_id = %s",
                  [v1.project, body["id"]]) == 1
    repeat = v1.post("/artifacts/delete", {"id": body["id"], "expected_version": body["version"]})
    assert repeat.status_code == 404
    assert v1.post("/artifacts/get", {"id": body["id"]}).status_code == 404
    assert ledger(v1.project, "artifact.delete") == [("allowed", 1, "credential"), ("refused", 0, "credential")]


def test_delete_of_an_expired_artifact_is_404(v1):
    artifact_id = new_id()
    insert_expired_artifact(v1.project, artifact_id=artifact_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT version::text FROM agent_artifact WHERE artifact_id = %s", [artifact_id])
        version = cursor.fetchone()[0]
    assert v1.post("/artifacts/delete", {"id": artifact_id, "expected_version": version}).status_code == 404


# --- projects and access ----------------------------------------------------------------------------


def test_another_projects_artifact_is_not_found_everywhere(v1, other_v1):
    body = put(v1).json()
    unknown = other_v1.post("/artifacts/get", {"id": new_id()})
    foreign = other_v1.post("/artifacts/get", {"id": body["id"]})
    assert foreign.status_code == 404 and foreign.json() == unknown.json()
    assert other_v1.post("/artifacts/list", {}).json() == {"artifacts": []}
    delete = other_v1.post("/artifacts/delete", {"id": body["id"], "expected_version": body["version"]})
    assert delete.status_code == 404
    update = put(other_v1, body["id"], expected_version=body["version"])
    assert update.status_code == 404
    assert v1.post("/artifacts/get", {"id": body["id"]}).json()["version"] == body["version"]


def test_read_only_credential_may_read_but_not_write(v1):
    body = put(v1).json()
    _, token = services.issue_credential(project=v1.project, name="ro", access="read_only", principal="cli")
    ro = V1(v1.project, token)
    assert ro.post("/artifacts/get", {"id": body["id"]}).status_code == 200
    assert ro.post("/artifacts/list", {}).status_code == 200
    for path, payload in (("/artifacts/put", {}), ("/artifacts/delete", {})):
        response = ro.post(path, payload)
        assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")

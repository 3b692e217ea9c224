"""The retention sweep (governance.md §3): due observations go through the erasure walk, page by page,
with a receipt and a system ledger row per pass; expired artifacts go even without a policy."""
import pytest
from django.db import connection

from governance import services
from governance.retention import PAGE, sweep
from memory import services as memory_services
from tests.conftest import unique_name
from tests.governance.support import (
    add_artifact,
    form,
    later,
    one,
    project_counts,
    register_subject,
    rows,
    word,
)

pytestmark = pytest.mark.django_db


def _project(retention_days=None):
    name = unique_name()
    services.create_project(name=name, retention_days=retention_days, principal="cli")
    return name


def _turn(project, subject, text, *, days, minutes_ago):
    from datetime import timedelta

    from django.utils import timezone

    return memory_services.observe(
        project=project, data_subject_id=subject, retention_days=days,
        occurred_at=timezone.now() - timedelta(minutes=minutes_ago),
        messages=[{"role": "user", "content": text, "group_ordinal": 0}]).id


def test_due_turns_are_swept_with_a_receipt_and_a_system_ledger_row():
    project = _project(retention_days=1)
    org = word("Acm")
    _turn(project, "a", f"I work at {org}.", days=1, minutes_ago=3)
    _turn(project, "a", "I live in Paris.", days=1, minutes_ago=2)
    keeper = _turn(project, "b", f"I work at {org}.", days=30, minutes_ago=1)
    form(project)
    before = project_counts(project)

    assert sweep(project=project) == []  # nothing is due yet
    touched = sweep(now=later(2), project=project)

    assert len(touched) == 1 and touched[0]["scope"] == project and touched[0]["observations"] == 2
    after = project_counts(project)
    deleted = touched[0]["deleted"]
    for key in ("observation", "message", "fact", "fact_evidence", "entity_name_receipt"):
        assert before[key] - after[key] == deleted[key], key
    # The organisation survives: a turn outside this page registered it too.
    assert one("SELECT canonical_name FROM entity WHERE scope = %s AND normalized_name = %s",
               [project, org.lower()]) == (org,)
    assert rows("SELECT observation_id::text FROM observation WHERE scope = %s", [project]) == [(keeper,)]
    assert rows("SELECT sweep_id::text, observations FROM retention_sweep WHERE scope = %s", [project]) == [
        (touched[0]["sweeps"][0], 2)]
    assert rows("SELECT principal, principal_kind, magnitude FROM audit_entry WHERE project = %s"
                " AND operation = 'retention.sweep'", [project]) == [("system", "system", 2)]
    assert one("SELECT formed_offset, log_offset FROM watermark WHERE scope = %s", [project]) == (2, 2)


def test_expired_artifacts_are_swept_in_a_project_without_a_policy():
    project = _project()
    artifact, owner = add_artifact(project, "a", b"old state", expires="-1 hour")
    fresh, _ = add_artifact(project, "a", b"new state", expires="2 hours")
    touched = sweep(project=project)
    assert len(touched) == 1 and touched[0]["deleted"]["agent_artifact"] == 1
    assert rows("SELECT artifact_id::text FROM agent_artifact WHERE scope = %s", [project]) == [(fresh,)]
    assert one("SELECT count(*) FROM observation WHERE observation_id = %s", [owner]) == (0,)
    assert one("SELECT count(*) FROM artifact_tombstone WHERE scope = %s AND artifact_id = %s",
               [project, artifact]) == (1,)
    assert one("SELECT used_objects FROM agent_storage_policy WHERE scope = %s", [project]) == (1,)


def test_more_than_a_page_is_swept_in_several_passes_each_with_its_receipt():
    project = _project(retention_days=1)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
            " retention_until, formed_at, formation_attempts)"
            " SELECT gen_random_uuid(), %s, g, 'turn', now(), 'user', now() - interval '1 hour', now(), 0"
            " FROM generate_series(0, %s) g", [project, PAGE])
        cursor.execute("INSERT INTO watermark (scope, log_offset, watermark_at, updated_at) VALUES (%s, %s, now(), now())",
                       [project, PAGE])
    touched = sweep(project=project)
    assert touched[0]["observations"] == PAGE + 1 and len(touched[0]["sweeps"]) == 2
    assert rows("SELECT observations FROM retention_sweep WHERE scope = %s ORDER BY observations", [project]) == [
        (1,), (PAGE,)]
    assert one("SELECT count(*) FROM observation WHERE scope = %s", [project]) == (0,)


def test_unused_subjects_past_inactive_after_expire():
    project = _project()
    register_subject(project, "idle", inactive_after="-1 day")
    busy = register_subject(project, "busy", inactive_after="-1 day")
    fresh = register_subject(project, "fresh", inactive_after="1 day")
    memory_services.observe(project=project, data_subject_id=busy,
                            messages=[{"role": "user", "content": "hello", "group_ordinal": 0}])
    touched = sweep(project=project)
    assert touched[0]["deleted"]["data_subject"] == 1 and touched[0]["observations"] == 0
    assert {r[0] for r in rows("SELECT subject_id::text FROM data_subject WHERE scope = %s", [project])} == {
        busy, fresh}

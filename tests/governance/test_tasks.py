"""The Celery side of governance: beat runs the retention sweep hourly and seals every five minutes."""
import pytest

from config.celery import app
from governance import tasks
from tests.governance.support import one


def test_beat_schedules_the_sweep_hourly_and_the_seal_every_five_minutes():
    by_task = {entry["task"]: entry["schedule"] for entry in app.conf.beat_schedule.values()}
    assert by_task["governance.tasks.retention_sweep"] == 3600
    assert by_task["governance.tasks.seal_audit"] == 300
    assert {"governance.tasks.retention_sweep", "governance.tasks.seal_audit"} <= set(app.tasks)


@pytest.mark.django_db
def test_the_seal_task_seals_as_the_system():
    seal_id = tasks.seal_audit()
    assert one("SELECT max(seal_id) FROM audit_seal") == (seal_id,)
    assert one("SELECT principal, principal_kind FROM audit_entry WHERE operation = 'audit.seal'"
               " ORDER BY entry_id DESC LIMIT 1") == ("system", "system")

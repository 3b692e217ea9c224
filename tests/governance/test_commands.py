"""The governance management commands (api.md §9): same services, ledger rows as `cli` / `operator`."""
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.governance.support import form, one, rows, say

pytestmark = pytest.mark.django_db


def _run(*args):
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def _ledger(project, op):
    return rows("SELECT principal, principal_kind, magnitude, outcome FROM audit_entry WHERE project = %s"
                " AND operation = %s ORDER BY entry_id", [project, op])


def test_memoir_erase_by_subject_prints_the_receipt_and_writes_erase(new_project, django_capture_on_commit_callbacks):
    project, _ = new_project
    say(project, "alice", "I live in Paris.")
    form(project)
    with django_capture_on_commit_callbacks(execute=True):
        receipt = json.loads(_run("memoir_erase", "--project", project, "--subject", "alice", "--reason", "asked"))
    assert receipt["clean"] is True and receipt["deleted"]["observation"] == 1
    magnitude = sum(v for k, v in receipt["deleted"].items() if k != "fact_evidence_orphaned")
    assert _ledger(project, "erase") == [("cli", "operator", magnitude, "allowed")]
    assert one("SELECT reason, principal_kind FROM erasure_request WHERE scope = %s", [project]) == ("asked", "operator")


def test_memoir_erase_by_sources_reads_a_file(new_project, tmp_path):
    project, _ = new_project
    gone = say(project, "alice", "I live in Paris.")
    kept = say(project, "alice", "I work at Acme.")
    path = tmp_path / "sources.txt"
    path.write_text(f"{gone}\n\n")
    receipt = json.loads(_run("memoir_erase", "--project", project, "--sources", str(path)))
    assert receipt["source_observation_ids"] == [gone] and receipt["deleted"]["observation"] == 1
    assert rows("SELECT observation_id::text FROM observation WHERE scope = %s", [project]) == [(kept,)]


def test_a_refused_cli_erasure_leaves_only_its_refused_row(new_project):
    project, _ = new_project
    with pytest.raises(CommandError):
        _run("memoir_erase", "--project", project, "--subject", "   ")
    assert _ledger(project, "erase") == [("cli", "operator", 0, "refused")]
    assert one("SELECT count(*) FROM erasure_request WHERE scope = %s", [project]) == (0,)


def test_memoir_export_prints_json(new_project):
    project, _ = new_project
    say(project, "alice", "I live in Paris.")
    form(project)
    result = json.loads(_run("memoir_export", "--project", project, "--subject", "alice"))
    assert result["rows"]["fact"] == 1 and result["sections"]["message"][0]["content"] == "I live in Paris."
    assert _ledger(project, "export") == [("cli", "operator", sum(result["rows"].values()), "allowed")]


def test_memoir_erasures_list_shows_receipts_without_their_subject(new_project):
    project, _ = new_project
    say(project, "alice-secret", "I live in Paris.")
    _run("memoir_erase", "--project", project, "--subject", "alice-secret")
    out = _run("memoir_erasures", "list", "--project", project, "--limit", "0")
    assert len(out.splitlines()) == 1 and "data_subject_id" in out and "\tclean" in out
    assert "alice-secret" not in out
    assert _ledger(project, "erasure.list") == [("cli", "operator", 1, "allowed")]


def test_memoir_refusals_summary_counts_and_bounds_its_limit(new_project):
    project, _ = new_project
    say(project, "alice", "I used to live in Amman.")
    form(project)
    out = _run("memoir_refusals", "summary", "--project", project)
    assert out.splitlines() == ["1\tnot_current\tlives_in"]
    assert _ledger(project, "refusal.summary") == [("cli", "operator", 1, "allowed")]
    for bad in ("501", "-1"):
        with pytest.raises(CommandError):
            _run("memoir_refusals", "summary", "--project", project, "--limit", bad)


def test_memoir_retention_sweep_runs_one_pass(new_project):
    project, _ = new_project
    with connection.cursor() as cursor:
        cursor.execute("UPDATE project SET retention_days = 1 WHERE name = %s", [project])
    from memory import services

    services.observe(project=project, retention_days=-1,
                     messages=[{"role": "user", "content": "old", "group_ordinal": 0}])
    out = _run("memoir_retention", "sweep", "--project", project)
    assert json.loads(out.splitlines()[0])["observations"] == 1
    assert _ledger(project, "retention.sweep") == [("system", "system", 1, "allowed")]

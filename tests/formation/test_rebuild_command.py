"""`memoir_formation rebuild start|status|cancel`: the operator's shell over the rebuild services, each
writing its ledger row as the CLI operator; existing subcommands unchanged."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.conftest import make_project
from tests.formation.rebuild_support import seed


def run(*args):
    out = StringIO()
    call_command("memoir_formation", *args, stdout=out)
    return out.getvalue()


def test_dry_run_start_status_cancel(committed):
    project, _, _ = make_project(committed)
    seed(committed, project, ["I live in Dublin.", "Yeah, I love to."])
    with committed():
        assert run("rebuild", "status", "--project", project) == "no rebuild for this project\n"
        with pytest.raises(CommandError, match="--to"):
            run("rebuild", "start", "--project", project)
        with pytest.raises(CommandError, match="target"):
            run("rebuild", "start", "--project", project, "--to", "curated/v1")
        # rules/v1 over turns rules/v1 formed: nothing to re-form, and the dry run says so.
        assert run("rebuild", "start", "--project", project, "--to", "rules/v1", "--dry-run").startswith(
            "dry run: 0 sources would be re-formed under rules/v1: +0 -0 facts")
        started = run("rebuild", "start", "--project", project, "--to", "rules/v1", "--keep-orphans")
        assert started.startswith("running\tto=rules/v1\treinterpreted_through=None\treinterpreting_through=1")
        with pytest.raises(CommandError, match="already running"):
            run("rebuild", "start", "--project", project, "--to", "rules/v1")
        assert run("rebuild", "status", "--project", project).startswith("running\t")
        assert run("rebuild", "cancel", "--project", project).startswith("cancelled\t")
        with pytest.raises(CommandError, match="no rebuild is running"):
            run("rebuild", "cancel", "--project", project)
        assert "formed 0 turns" in run("drain", "--project", project)
        with connection.cursor() as cursor:
            cursor.execute("SELECT operation, principal, principal_kind FROM audit_entry WHERE project = %s"
                           " AND operation LIKE 'formation.rebuild%%' ORDER BY entry_id", [project])
            rows = cursor.fetchall()
            cursor.execute("SELECT clean_up FROM formation_rebuild WHERE scope = %s", [project])
            assert cursor.fetchone() == (False,)
    assert [op for op, *_ in rows] == ["formation.rebuild", "formation.rebuild", "formation.rebuild.start",
                                       "formation.rebuild", "formation.rebuild.cancel"]
    assert {(principal, kind) for _, principal, kind in rows} == {("cli", "operator")}

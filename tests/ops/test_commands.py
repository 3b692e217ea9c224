"""Every operator command fails clearly (issue 14): an unknown project and a malformed id each end in one
worded line on stderr and a non-zero exit (no traceback, no SQL), --json gives one shape, and every option
of every command (subcommands included) has help. Commands are found programmatically, so a new command is
covered without editing this file."""
import argparse
import contextlib
import io
import json
import uuid

import pytest
from django.core.management import get_commands, load_command_class
from django.core.management.base import OutputWrapper

from tests.conftest import make_project

APPS = ("governance", "formation", "api")
UNKNOWN = "no_such_project_zz"
# Commands that create what they are given rather than look it up.
CREATES = {("memoir_project", "create"), ("memoir_bootstrap", None)}


def operator_commands():
    return sorted((name, app) for name, app in get_commands().items() if app in APPS and name.startswith("memoir_"))


def parsers(name, app):
    """(subcommand or None, parser) for the command and each of its subcommands."""
    parser = load_command_class(app, name).create_parser("manage.py", name)
    found = [(None, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += list(action.choices.items())
    return found


def invoke(name, app, argv):
    """Run the command as manage.py would: (exit status, stdout, stderr)."""
    command = load_command_class(app, name)
    out, err = io.StringIO(), io.StringIO()
    command.stdout, command.stderr = OutputWrapper(out), OutputWrapper(err)
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            command.run_from_argv(["manage.py", name, *argv])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def argv_for(name, sub, parser, *, project, id_value):
    """Arguments that satisfy the parser: `project` for every project, `id_value` for every id."""
    argv = [sub] if sub else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction) or action.dest in ("json",):
            continue
        is_project = action.dest == "project" or (name == "memoir_project" and action.dest == "name")
        if action.option_strings:
            if is_project:
                argv += [action.option_strings[0], project]
            elif action.required:
                argv += [action.option_strings[0], "x"]
            continue
        if is_project:
            argv.append(project)
        elif action.dest.endswith("_id"):
            argv.append(id_value)
        elif action.dest == "days":
            argv.append("30")
        elif action.choices:
            argv.append(next(iter(action.choices)))
        else:
            argv.append("agent")
    for group in parser._mutually_exclusive_groups:
        if group.required:
            first = group._group_actions[0]
            argv += [first.option_strings[0], "someone"]
    return argv


def assert_one_clean_line(code, err, expected):
    lines = [line for line in err.splitlines() if line.strip()]
    assert code not in (0, None), err
    assert len(lines) == 1, err
    assert expected in lines[0], err
    for leak in ("Traceback", "SELECT ", "INSERT ", "UPDATE ", "psycopg"):
        assert leak not in err


def test_the_commands_are_found():
    names = {name for name, _ in operator_commands()}
    assert {"memoir_project", "memoir_credential", "memoir_formation", "memoir_erase", "memoir_export",
            "memoir_retention", "memoir_audit", "memoir_openapi", "memoir_version"} <= names


@pytest.mark.parametrize("name,app", operator_commands())
def test_every_option_of_every_command_has_help(name, app):
    for sub, parser in parsers(name, app):
        text = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help, (name, sub, action.dest)
            shown = action.help.split("%(")[0].strip()[:30]
            assert shown in " ".join(text.split()), (name, sub, action.dest)


def _project_parsers():
    for name, app in operator_commands():
        for sub, parser in parsers(name, app):
            if (name, sub) in CREATES or (sub is None and len(parsers(name, app)) > 1):
                continue
            dests = {a.dest for a in parser._actions}
            if "project" in dests or (name == "memoir_project" and "name" in dests):
                yield name, app, sub


def _id_parsers():
    for name, app in operator_commands():
        for sub, parser in parsers(name, app):
            if any(not a.option_strings and a.dest.endswith("_id") for a in parser._actions):
                yield name, app, sub


@pytest.mark.parametrize("name,app,sub", list(_project_parsers()))
def test_an_unknown_project_is_one_worded_line(committed, test_database_name, name, app, sub):
    parser = dict(parsers(name, app))[sub]
    argv = argv_for(name, sub, parser, project=UNKNOWN, id_value=str(uuid.uuid4()))
    with committed():
        code, _, err = invoke(name, app, argv)
        assert_one_clean_line(code, err, f"unknown project '{UNKNOWN}'")
        code, out, err = invoke(name, app, [*argv, "--json"])
    assert code not in (0, None) and out == ""
    assert json.loads(err) == {"ok": False, "command": name,
                               "error": {"code": "unknown_project", "message": f"unknown project '{UNKNOWN}'"}}


@pytest.mark.parametrize("name,app,sub", list(_id_parsers()))
def test_a_malformed_id_is_one_worded_line(committed, test_database_name, name, app, sub):
    project, _, _ = make_project(committed)
    parser = dict(parsers(name, app))[sub]
    argv = argv_for(name, sub, parser, project=project, id_value="not-a-uuid")
    with committed():
        code, _, err = invoke(name, app, argv)
    assert_one_clean_line(code, err, "malformed")


def test_a_malformed_source_id_in_a_file_is_one_worded_line(committed, test_database_name, tmp_path):
    project, _, _ = make_project(committed)
    path = tmp_path / "ids.txt"
    path.write_text("not-a-uuid\n")
    for name in ("memoir_erase", "memoir_export"):
        with committed():
            code, _, err = invoke(name, "governance", ["--project", project, "--sources", str(path)])
        assert_one_clean_line(code, err, "malformed observation id 'not-a-uuid'")


def test_argument_errors_are_one_line_too(committed, test_database_name):
    with committed():
        code, _, err = invoke("memoir_formation", "formation", ["parked"])
    assert_one_clean_line(code, err, "--project")
    with committed():
        code, _, err = invoke("memoir_credential", "governance", ["launch"])
    assert_one_clean_line(code, err, "invalid choice")


def test_json_output_has_one_shape(committed, test_database_name):
    project, _, credential_id = make_project(committed)
    with committed():
        for name, app, argv in (("memoir_version", "governance", []),
                                ("memoir_formation", "formation", ["status"]),
                                ("memoir_credential", "governance", ["list", "--project", project]),
                                ("memoir_refusals", "governance", ["summary", "--project", project]),
                                ("memoir_storage", "governance", ["limits", "--project", project])):
            code, out, err = invoke(name, app, [*argv, "--json"])
            assert code in (0, None), err
            lines = out.splitlines()
            assert len(lines) == 1, out
            document = json.loads(lines[0])
            assert set(document) == {"ok", "command", "result"} and document["ok"] is True
            assert document["command"] == name
    from config import __version__

    with committed():
        _, out, _ = invoke("memoir_version", "governance", [])
    assert out.strip() == __version__
    with committed():
        _, out, _ = invoke("memoir_credential", "governance", ["list", "--project", project, "--json"])
    assert json.loads(out)["result"][0]["credential_id"] == credential_id

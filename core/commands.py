"""The base of every operator command: arguments checked before any work, failures as one worded line on
stderr with a non-zero exit (never a traceback or SQL), and `--json` for one machine-readable shape.

Output with --json: stdout gets one line {"ok": true, "command": NAME, "result": ...}; a failure writes one
line {"ok": false, "command": NAME, "error": {"code": CODE, "message": TEXT}} on stderr.
"""
import argparse
import json
import sys
import uuid

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.management.base import BaseCommand, CommandError, handle_default_options
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError, connections

from core.errors import DomainError
from core.models import Project

JSON_HELP = "print one JSON object on stdout ({\"ok\", \"command\", \"result\"}); errors as one JSON line on stderr"


class OperatorError(CommandError):
    """A refusal with a stable code, worded for a person; `returncode` 1 unless said otherwise."""

    def __init__(self, message, *, code="invalid_argument", returncode=1):
        super().__init__(message, returncode=returncode)
        self.code = code


def unknown_project(name):
    """The one wording for a project that does not exist, in every command."""
    return OperatorError(f"unknown project {name!r}", code="unknown_project")


def require_project(name):
    """The project's name if it exists; an OperatorError (unknown_project) otherwise."""
    if not isinstance(name, str) or not Project.objects.filter(name=name).exists():
        raise unknown_project(name)
    return name


def parse_uuid(value, what):
    """A canonical UUID string, or an OperatorError naming `what` (e.g. "credential id")."""
    try:
        return str(uuid.UUID(str(value).strip()))
    except ValueError:
        raise OperatorError(f"malformed {what} {value!r}: expected a UUID", code="malformed_id") from None


def _one_line_error(parser, message):
    """argparse's own errors (a missing or unknown argument) as one line, like every other failure."""
    parser.exit(2, f"error: {parser.prog}: {message} (see --help)\n")


class OperatorCommand(BaseCommand):
    """Subclasses implement `run(**options)` returning (result for --json, lines of text) or raising
    OperatorError; DomainError, ValidationError and database errors become one-line failures too."""

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument("--json", action="store_true", help=JSON_HELP)
        for sub in _subparsers(parser):
            sub.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
        for each in [parser, *_subparsers(parser)]:
            each.error = lambda message, p=each: _one_line_error(p, message)
        return parser

    def handle(self, *args, **options):
        self._json = bool(options.get("json"))
        try:
            result, lines = self.run(**options)
        except OperatorError:
            raise
        except DomainError as err:
            # The services word an unknown project as "no such project" / "no project NAME".
            message = err.message or ""
            code = ("unknown_project" if err.code == "not_found"
                    and (message == "no such project" or message.startswith("no project ")) else err.code)
            if code == "unknown_project":
                raise unknown_project(options.get("project") or options.get("name")) from None
            raise OperatorError(err.message or err.code, code=err.code) from None
        except ValidationError as err:
            raise OperatorError("; ".join(err.messages), code="invalid_argument") from None
        except DatabaseError as err:
            # The database's text can quote the statement and its values: name the kind of failure only.
            raise OperatorError(f"the database refused the request ({type(err).__name__})",
                                code="database_error") from None
        if self._json:
            self.stdout.write(json.dumps({"ok": True, "command": self.command_name(), "result": result},
                                         cls=DjangoJSONEncoder, ensure_ascii=False))
        else:
            for line in lines:
                self.stdout.write(line)
        return None

    def run(self, **options):
        raise NotImplementedError

    def command_name(self):
        return type(self).__module__.rsplit(".", 1)[-1]

    def error_line(self, err, as_json):
        code = getattr(err, "code", "failed")
        if as_json:
            return json.dumps({"ok": False, "command": self.command_name(),
                               "error": {"code": code, "message": str(err)}}, ensure_ascii=False)
        return f"error: {err}"

    def run_from_argv(self, argv):
        """As Django's, but a failure is one line on stderr (JSON with --json) and tracebacks stay off."""
        self._called_from_command_line = True
        parser = self.create_parser(argv[0], argv[1])
        options = parser.parse_args(argv[2:])
        cmd_options = vars(options)
        args = cmd_options.pop("args", ())
        handle_default_options(options)
        try:
            self.execute(*args, **cmd_options)
        except CommandError as err:
            if options.traceback:
                raise
            self.stderr.write(self.error_line(err, cmd_options.get("json")))
            sys.exit(err.returncode)
        finally:
            try:
                connections.close_all()
            except ImproperlyConfigured:
                pass


def _subparsers(parser):
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.extend(action.choices.values())
    return found

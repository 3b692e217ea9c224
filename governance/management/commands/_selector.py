"""Shared argument handling for the erasure, export and listing commands (not a command itself)."""
import sys

from core import audit
from core.commands import OperatorCommand, OperatorError, unknown_project
from core.commands import require_project as project_exists


def add_selector_arguments(parser):
    parser.add_argument("--project", required=True, help="the project's name")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--subject", help="the data_subject_id to select")
    group.add_argument("--sources", metavar="FILE", help="a file of observation UUIDs, one per line ('-' reads stdin)")


def read_sources(path):
    """The non-empty lines of FILE (or stdin), or None when no file was named."""
    if path is None:
        return None
    try:
        handle = sys.stdin if path == "-" else open(path, encoding="utf-8")
    except OSError as exc:
        raise OperatorError(f"cannot read {path}: {exc.strerror}", code="unreadable_file") from None
    with handle:
        return [line.strip() for line in handle if line.strip()]


def refuse(op, project, err):
    """A refused CLI attempt leaves its ledger row, then fails the command."""
    audit.record_best_effort(op=op, principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                             project=project if err.status != 404 else "", magnitude=0, outcome="refused")
    raise OperatorError(err.message or err.code, code=err.code)


def require_project(op, project):
    """The named project must exist; otherwise the attempt is refused (and ledgered) like any other."""
    try:
        project_exists(project)
    except OperatorError:
        audit.record_best_effort(op=op, principal=audit.CLI_PRINCIPAL, principal_kind="operator", project="",
                                 magnitude=0, outcome="refused")
        raise unknown_project(project) from None


def parse_limit(value):
    """--limit N: 0..500, where 0 (or omitted) means 100."""
    if value is None or value == 0:
        return 100
    if not 0 <= value <= 500:
        raise OperatorError("--limit is 0..500 (0 means 100)")
    return value


class ProjectListing(OperatorCommand):
    """`<command> <action> --project P [--limit N]`: one ledgered read of a project's rows. Subclasses set `action`,
    `action_help`, `op`, and implement `rows(project, limit)` and `line(row)`."""

    action = action_help = op = None

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar=f"{{{self.action}}}",
                                    help=f"{self.action}: {self.action_help}")
        listing = sub.add_parser(self.action, help=self.action_help)
        listing.add_argument("--project", required=True, help="the project's name")
        listing.add_argument("--limit", type=int, help="0..500 (0 means 100)")

    def run(self, *, action, project, limit=None, **options):
        limit = parse_limit(limit)
        require_project(self.op, project)
        rows = self.rows(project, limit)
        audit.record(op=self.op, principal=audit.CLI_PRINCIPAL, principal_kind="operator", project=project,
                     magnitude=len(rows))
        return rows, [self.line(row) for row in rows]

"""`memoir_refusals summary --project P [--limit N]`: refusal counts by reason and predicate, largest first."""
from core import audit
from core.commands import OperatorCommand
from governance import export

from ._selector import parse_limit, require_project


class Command(OperatorCommand):
    help = "Summarize a project's refused claims by (reason, predicate)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{summary}", help="summary: the counts")
        summary = sub.add_parser("summary", help="counts by (reason, predicate), largest first")
        summary.add_argument("--project", required=True, help="the project's name")
        summary.add_argument("--limit", type=int, help="0..500 (0 means 100)")

    def run(self, *, action, project, limit=None, **options):
        limit = parse_limit(limit)
        require_project("refusal.summary", project)
        rows = export.refusal_summary(project=project, limit=limit)
        audit.record(op="refusal.summary", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=len(rows))
        return rows, [f"{row['count']}\t{row['reason']}\t{row['predicate']}" for row in rows]

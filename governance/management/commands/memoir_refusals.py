"""`memoir_refusals summary --project P [--limit N]`: refusal counts by reason and predicate, largest first."""
from django.core.management.base import BaseCommand

from governance import audit, export

from ._selector import parse_limit, require_project


class Command(BaseCommand):
    help = "Summarize a project's refused claims by (reason, predicate)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        summary = sub.add_parser("summary")
        summary.add_argument("--project", required=True)
        summary.add_argument("--limit", type=int, help="0..500 (0 means 100)")

    def handle(self, *args, action, project, limit=None, **options):
        limit = parse_limit(limit)
        require_project("refusal.summary", project)
        rows = export.refusal_summary(project=project, limit=limit)
        audit.record("refusal.summary", audit.CLI_PRINCIPAL, "operator", project, len(rows))
        for row in rows:
            self.stdout.write(f"{row['count']}\t{row['reason']}\t{row['predicate']}")

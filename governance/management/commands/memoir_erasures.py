"""`memoir_erasures list --project P [--limit N]`: the project's erasure receipts, newest first."""
from django.core.management.base import BaseCommand

from governance import audit, erasure

from ._selector import parse_limit, require_project


class Command(BaseCommand):
    help = "List a project's erasure receipts (selector kind, times, clean), newest first."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list")
        listing.add_argument("--project", required=True)
        listing.add_argument("--limit", type=int, help="0..500 (0 means 100)")

    def handle(self, *args, action, project, limit=None, **options):
        limit = parse_limit(limit)
        require_project("erasure.list", project)
        items = erasure.list_erasures(project=project, limit=limit)
        audit.record("erasure.list", audit.CLI_PRINCIPAL, "operator", project, len(items))
        for item in items:
            clean = {True: "clean", False: "RESIDUAL", None: "open"}[item["clean"]]
            self.stdout.write(f"{item['request_id']}\t{item['selector']}\t{item['requested_at']}\t"
                              f"{item['completed_at'] or '-'}\t{clean}")

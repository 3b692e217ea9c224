"""`memoir_erasures list --project P [--limit N]`: the project's erasure receipts, newest first."""
from core import audit
from core.commands import OperatorCommand
from governance import erasure

from ._selector import parse_limit, require_project


class Command(OperatorCommand):
    help = "List a project's erasure receipts (selector kind, times, clean), newest first."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{list}", help="list: the receipts")
        listing = sub.add_parser("list", help="list receipts, newest first (never their subject)")
        listing.add_argument("--project", required=True, help="the project's name")
        listing.add_argument("--limit", type=int, help="0..500 (0 means 100)")

    def run(self, *, action, project, limit=None, **options):
        limit = parse_limit(limit)
        require_project("erasure.list", project)
        items = erasure.list_erasures(project=project, limit=limit)
        audit.record(op="erasure.list", principal=audit.CLI_PRINCIPAL, principal_kind="operator",
                     project=project, magnitude=len(items))
        lines = []
        for item in items:
            clean = {True: "clean", False: "RESIDUAL", None: "open"}[item["clean"]]
            lines.append(f"{item['request_id']}\t{item['selector']}\t{item['requested_at']}\t"
                         f"{item['completed_at'] or '-'}\t{clean}")
        return items, lines

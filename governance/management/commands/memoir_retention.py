"""`memoir_retention sweep [--project P]`: run one retention pass now (its ledger rows are the system's)."""
import json

from core.commands import OperatorCommand, require_project
from governance import retention


class Command(OperatorCommand):
    help = "Run one retention sweep: delete due observations and expired subjects, writing sweep receipts."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{sweep}", help="sweep: one pass now")
        sub.add_parser("sweep", help="delete what is due now").add_argument(
            "--project", help="sweep only this project (default: every project)")

    def run(self, *, action, project=None, **options):
        if project is not None:
            require_project(project)
        touched = retention.sweep(project=project)
        lines = [json.dumps(summary) for summary in touched]
        lines.append(f"swept {len(touched)} projects, {sum(t['observations'] for t in touched)} observations")
        return touched, lines

"""`memoir_retention sweep [--project P]`: run one retention pass now (its ledger rows are the system's)."""
import json

from django.core.management.base import BaseCommand

from governance import retention


class Command(BaseCommand):
    help = "Run one retention sweep: delete due observations and expired subjects, writing sweep receipts."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("sweep").add_argument("--project", help="sweep only this project")

    def handle(self, *args, action, project=None, **options):
        touched = retention.sweep(project=project)
        for summary in touched:
            self.stdout.write(json.dumps(summary))
        self.stdout.write(f"swept {len(touched)} projects, {sum(t['observations'] for t in touched)} observations")

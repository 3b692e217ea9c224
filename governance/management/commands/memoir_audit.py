"""`memoir_audit seal|verify`: seal the ledger now, or verify the seal chain (exit status 1 when invalid)."""
import json

from django.core.management.base import BaseCommand, CommandError

from governance import audit, ledger


class Command(BaseCommand):
    help = "Seal the audit ledger, or verify its seal chain."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("seal")
        sub.add_parser("verify")

    def handle(self, *args, action, **options):
        if action == "seal":
            sealed = ledger.seal(principal=audit.CLI_PRINCIPAL, principal_kind="operator")
            self.stdout.write(json.dumps(sealed) if sealed else "nothing to seal")
            return
        result = ledger.verify(principal=audit.CLI_PRINCIPAL, principal_kind="operator")
        self.stdout.write(json.dumps(result))
        if not result["valid"]:
            raise CommandError(result["failure"], returncode=1)

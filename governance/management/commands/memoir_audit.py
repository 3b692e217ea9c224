"""`memoir_audit seal|verify|head`: seal the ledger now, verify the seal chain (exit status 1 when invalid), or
print the head digest to keep outside the database (for `verify --expect-head`)."""
import json
import re

from django.core.management.base import BaseCommand, CommandError

from governance import audit, ledger

_DIGEST = re.compile(r"^[0-9a-fA-F]{64}$")


class Command(BaseCommand):
    help = "Seal the audit ledger, verify its seal chain, or print its head digest."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("seal", help="seal the entries written since the last seal")
        verify = sub.add_parser("verify", help="recompute every seal; exit 1 when the chain is broken")
        verify.add_argument("--expect-head", metavar="DIGEST",
                            help="a head digest printed earlier by `memoir_audit head`; fail unless it is still "
                                 "a seal of the chain")
        sub.add_parser("head", help="print the last seal's digest, to keep somewhere the database cannot reach")

    def handle(self, *args, action, **options):
        if action == "seal":
            sealed = ledger.seal(principal=audit.CLI_PRINCIPAL, principal_kind="operator")
            self.stdout.write(json.dumps(sealed) if sealed else "nothing to seal")
            return
        if action == "head":
            self.stdout.write(json.dumps(ledger.head()))
            return
        expect = options.get("expect_head")
        if expect is not None and not _DIGEST.match(expect):
            raise CommandError("--expect-head takes a 64-character hex digest", returncode=2)
        result = ledger.verify(principal=audit.CLI_PRINCIPAL, principal_kind="operator", expect_head=expect)
        self.stdout.write(json.dumps(result))
        if not result["valid"]:
            raise CommandError(result["failure"], returncode=1)

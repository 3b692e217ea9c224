"""`memoir_audit seal|verify`: seal the ledger now, or verify the seal chain (exit status 1 when invalid)."""
import json

from governance import audit, ledger
from governance.management.base import OperatorCommand, OperatorError


class Command(OperatorCommand):
    help = "Seal the audit ledger, or verify its seal chain (exit status 1 when it is broken)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{seal,verify}",
                                    help="seal: seal the unsealed entries now; verify: check every seal")
        sub.add_parser("seal", help="seal the entries written since the last seal")
        sub.add_parser("verify", help="recompute the seal chain; exit 1 when an entry or seal was altered")

    def run(self, *, action, **options):
        if action == "seal":
            sealed = ledger.seal(principal=audit.CLI_PRINCIPAL, principal_kind="operator")
            return sealed, [json.dumps(sealed) if sealed else "nothing to seal"]
        result = ledger.verify(principal=audit.CLI_PRINCIPAL, principal_kind="operator")
        if not result["valid"]:
            # The report goes to stdout either way; the failure line and the exit status follow.
            self.stdout.write(json.dumps(result) if not options.get("json") else
                              json.dumps({"ok": False, "command": "memoir_audit", "result": result}))
            raise OperatorError(result["failure"], code="chain_broken")
        return result, [json.dumps(result)]

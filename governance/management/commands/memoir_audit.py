"""`memoir_audit seal|verify|head`: seal the ledger now, verify the seal chain (exit status 1 when invalid), or
print the head digest to keep outside the database."""
import json
import re

from core import audit
from core.commands import OperatorCommand, OperatorError
from governance import ledger

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class Command(OperatorCommand):
    help = "Seal the audit ledger, verify its seal chain (exit status 1 when it is broken), or print its head digest."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{seal,verify,head}",
                                    help="seal: seal the unsealed entries now; verify: check every seal;"
                                         " head: print the last seal's digest")
        sub.add_parser("seal", help="seal the entries written since the last seal")
        verify = sub.add_parser("verify", help="recompute the seal chain; exit 1 when an entry or seal was altered")
        verify.add_argument("--expect-head", metavar="DIGEST",
                            help="a head digest printed earlier by `memoir_audit head`; fail unless it is still "
                                 "a seal of the chain")
        sub.add_parser("head", help="print the last seal's digest, to keep somewhere the database cannot reach")

    def run(self, *, action, **options):
        if action == "seal":
            sealed = ledger.seal(principal=audit.CLI_PRINCIPAL, principal_kind="operator")
            return sealed, [json.dumps(sealed) if sealed else "nothing to seal"]
        if action == "head":
            head = ledger.head()
            return head, [json.dumps(head)]
        expect = options.get("expect_head")
        if expect is not None and not _DIGEST.match(expect):
            raise OperatorError("--expect-head takes a 64-character hex digest", returncode=2)
        result = ledger.verify(principal=audit.CLI_PRINCIPAL, principal_kind="operator", expect_head=expect)
        if not result["valid"]:
            # The report goes to stdout either way; the failure line and the exit status follow.
            self.stdout.write(json.dumps(result) if not options.get("json") else
                              json.dumps({"ok": False, "command": "memoir_audit", "result": result}))
            raise OperatorError(result["failure"], code="chain_broken")
        return result, [json.dumps(result)]

"""`memoir_erase --project P (--subject S | --sources FILE)`: erase a data subject or sources and print the receipt."""
import json

from core import audit
from core.commands import OperatorCommand, OperatorError, parse_uuid
from core.errors import DomainError
from governance import erasure

from ._selector import add_selector_arguments, read_sources, refuse, require_project


class Command(OperatorCommand):
    help = "Erase a data subject (or a list of source observations) and print the erasure receipt as JSON."

    def add_arguments(self, parser):
        add_selector_arguments(parser)
        parser.add_argument("--reason", default="", help="why (kept on the receipt, never in the ledger)")

    def run(self, *, project, subject=None, sources=None, reason="", **options):
        require_project("erase", project)
        ids = read_sources(sources)
        if ids is not None:
            ids = [parse_uuid(value, "observation id") for value in ids]
        try:
            receipt = erasure.erase(project=project, data_subject_id=subject, source_observation_ids=ids,
                                    reason=reason, principal=audit.CLI_PRINCIPAL, principal_kind="operator")
        except DomainError as err:
            refuse("erase", project, err)
        if not receipt["clean"]:
            self.stdout.write(json.dumps(receipt, indent=2, ensure_ascii=False))
            raise OperatorError("the erasure left residual rows; investigate before repeating it", code="residual")
        return receipt, [json.dumps(receipt, indent=2, ensure_ascii=False)]

"""`memoir_erase --project P (--subject S | --sources FILE)`: erase a data subject or sources and print the receipt."""
import json

from django.core.management.base import BaseCommand, CommandError

from governance import audit, erasure
from memory.errors import DomainError

from ._selector import add_selector_arguments, read_sources, refuse


class Command(BaseCommand):
    help = "Erase a data subject (or a list of source observations) and print the erasure receipt as JSON."

    def add_arguments(self, parser):
        add_selector_arguments(parser)
        parser.add_argument("--reason", default="")

    def handle(self, *args, project, subject=None, sources=None, reason="", **options):
        try:
            receipt = erasure.erase(project=project, data_subject_id=subject, source_observation_ids=read_sources(sources),
                                    reason=reason, principal=audit.CLI_PRINCIPAL, principal_kind="operator")
        except DomainError as err:
            refuse("erase", project, err)
        self.stdout.write(json.dumps(receipt, indent=2, ensure_ascii=False))
        if not receipt["clean"]:
            raise CommandError("the erasure left residual rows; investigate before repeating it", returncode=1)

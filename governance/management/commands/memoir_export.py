"""`memoir_export --project P (--subject S | --sources FILE)`: print a subject access export as JSON."""
import json

from django.core.management.base import BaseCommand

from governance import audit, export
from memory.errors import DomainError

from ._selector import add_selector_arguments, read_sources, refuse


class Command(BaseCommand):
    help = "Export every row a data subject (or a list of source observations) reaches, as JSON on stdout."

    def add_arguments(self, parser):
        add_selector_arguments(parser)

    def handle(self, *args, project, subject=None, sources=None, **options):
        try:
            result = export.export(project=project, data_subject_id=subject, source_observation_ids=read_sources(sources),
                                   principal=audit.CLI_PRINCIPAL, principal_kind="operator")
        except DomainError as err:
            refuse("export", project, err)
        self.stdout.write(json.dumps(result, ensure_ascii=False))

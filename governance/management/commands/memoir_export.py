"""`memoir_export --project P (--subject S | --sources FILE)`: print a subject access export as JSON."""
import json

from core import audit
from core.commands import OperatorCommand, parse_uuid
from core.errors import DomainError
from governance import export

from ._selector import add_selector_arguments, read_sources, refuse, require_project


class Command(OperatorCommand):
    help = "Export every row a data subject (or a list of source observations) reaches, as JSON on stdout."

    def add_arguments(self, parser):
        add_selector_arguments(parser)

    def run(self, *, project, subject=None, sources=None, **options):
        require_project("export", project)
        ids = read_sources(sources)
        if ids is not None:
            ids = [parse_uuid(value, "observation id") for value in ids]
        try:
            result = export.export(project=project, data_subject_id=subject, source_observation_ids=ids,
                                   principal=audit.CLI_PRINCIPAL, principal_kind="operator")
        except DomainError as err:
            refuse("export", project, err)
        return result, [json.dumps(result, ensure_ascii=False, default=str)]

"""`memoir_version`: print the running Memoir version (the one the console and /v1/schema show)."""
from core.commands import OperatorCommand
from core.version import __version__


class Command(OperatorCommand):
    help = "Print Memoir's version."
    requires_system_checks = []

    def run(self, **options):
        return {"version": __version__}, [__version__]

"""`memoir_openapi [--write | --check]`: print the /v1 OpenAPI document, refresh the checked-in copy, or
fail (exit status 1) when the copy differs from what the code generates."""
import json
from pathlib import Path

from django.conf import settings

from api import openapi
from core.commands import OperatorCommand, OperatorError

CHECKED_IN = Path(settings.BASE_DIR) / "docs" / "openapi.json"


class Command(OperatorCommand):
    help = "Print, write (--write) or check (--check) the checked-in OpenAPI document docs/openapi.json."

    def add_arguments(self, parser):
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--write", action="store_true", help="refresh docs/openapi.json")
        mode.add_argument("--check", action="store_true", help="exit 1 when docs/openapi.json is stale")

    def run(self, *, write=False, check=False, **options):
        generated = openapi.render(openapi.build_document())
        path = str(CHECKED_IN.relative_to(settings.BASE_DIR))
        if write:
            CHECKED_IN.write_bytes(generated)
            return {"written": path}, [f"wrote {path}"]
        if check:
            if not CHECKED_IN.exists() or CHECKED_IN.read_bytes() != generated:
                raise OperatorError("docs/openapi.json is stale: run `manage.py memoir_openapi --write`",
                                    code="stale")
            return {"current": path}, ["docs/openapi.json is current"]
        if options.get("json"):
            return json.loads(generated), []
        self.stdout.write(generated.decode("utf-8"), ending="")
        return None, []

"""Django system checks for the deployment around Memoir: a database server whose log keeps content (memoir.W001)."""
from django.core import checks
from django.db import DatabaseError

from . import dblog


@checks.register("memoir")
def database_log_keeps_no_content(app_configs=None, databases=None, **kwargs):
    try:
        unsafe = dblog.unsafe_settings()
    except DatabaseError:
        return []  # no server to ask (e.g. `check` before `make services`); /ready reports that instead
    if not unsafe:
        return []
    return [checks.Warning(dblog.warning_text(unsafe), id="memoir.W001",
                           hint="docs/database-roles.md, section 'The server log'")]

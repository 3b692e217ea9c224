"""Whether the database server's own log would keep content (issue 15): the settings that make PostgreSQL write a
failing statement, a key violation's DETAIL or every statement with its parameters into a log erasure cannot reach.
Read by the system check (governance/checks.py), `/ready` and the console banner."""
import logging
import time

from django.db import DatabaseError, connections

logger = logging.getLogger(__name__)

# name -> (values that keep no content, what to set)
SAFE = {
    "log_min_error_statement": ({"panic"}, "panic"),
    "log_error_verbosity": ({"terse"}, "terse"),
    "log_statement": ({"none", "ddl"}, "none"),
    "log_min_duration_statement": ({"-1"}, "-1"),
    "log_parameter_max_length_on_error": ({"0"}, "0"),
}
FIX = ("set log_min_error_statement = panic, log_error_verbosity = terse, log_statement = none and "
       "log_min_duration_statement = -1 on the database server (ALTER SYSTEM, ALTER DATABASE or ALTER ROLE ... SET)")
_CACHE_SECONDS = 60.0
_cache = {"at": -_CACHE_SECONDS, "value": None}


def unsafe_settings(alias="default"):
    """The log settings of the server `alias` reaches that would retain content, as {name: current value}.

    Reads the session's effective values, so per-database and per-role settings count. Raises DatabaseError when
    the server cannot be asked."""
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT name, setting FROM pg_settings WHERE name = ANY(%s::text[])", [sorted(SAFE)])
        current = dict(cursor.fetchall())
    return {name: value for name, value in sorted(current.items()) if value not in SAFE[name][0]}


def warning_text(unsafe):
    """One line: which settings keep content and what to set."""
    named = ", ".join(f"{name} = {value}" for name, value in unsafe.items())
    return f"the database server's log would keep content ({named}): {FIX}"


def cached_warning():
    """warning_text() for the default database, refreshed at most once a minute; "" when safe or unknown."""
    now = time.monotonic()
    if now - _cache["at"] >= _CACHE_SECONDS or _cache["value"] is None:
        try:
            unsafe = unsafe_settings()
        except DatabaseError:
            return _cache["value"] or ""
        _cache.update(at=now, value=warning_text(unsafe) if unsafe else "")
    return _cache["value"]

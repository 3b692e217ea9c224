"""Running one whole transaction again when PostgreSQL aborted it for a lock cycle or a serialization
failure: everything it did was rolled back, so a second run is the same request, not a duplicate."""
import logging

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)

DEADLOCK = "40P01"
SERIALIZATION = "40001"


def sqlstate(exc):
    return getattr(exc.__cause__, "sqlstate", None)


def run_retrying(work, *, what, sqlstates=(DEADLOCK,), attempts=3):
    """work() until it returns, at most `attempts` times. Only outside any transaction: inside one, the
    abort belongs to the caller's transaction and a rerun would run on a dead connection."""
    if connection.in_atomic_block:
        attempts = 1
    for attempt in range(attempts):
        try:
            return work()
        except DatabaseError as exc:
            if sqlstate(exc) not in sqlstates or attempt == attempts - 1:
                raise
            logger.warning("%s lost a lock conflict (SQLSTATE %s); running it again", what, sqlstate(exc))
    raise AssertionError("unreachable")

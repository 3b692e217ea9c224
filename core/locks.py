"""Advisory locks named by text ("memoir:<namespace>:<part>:…"), so every writer that must serialize on one name
(an idempotency key, an artifact id, a formation source, one project's drain) computes the same key.
Transaction-scoped locks wait; session locks are tried, for "one worker per project" loops."""


def _part(value):
    return value.hex() if isinstance(value, bytes | bytearray) else str(value)


def _name(namespace, parts):
    return ":".join(["memoir", namespace, *map(_part, parts)])


def advisory_xact_lock(cursor, namespace, *parts):
    """Wait for the named lock; it is released at commit or rollback. Bytes parts are named by their hex."""
    cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [_name(namespace, parts)])


def try_session_lock(cursor, namespace, *parts):
    """Take the named session lock if it is free (True), held until `session_unlock` or the connection ends."""
    cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [_name(namespace, parts)])
    return cursor.fetchone()[0]


def session_unlock(cursor, namespace, *parts):
    cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [_name(namespace, parts)])

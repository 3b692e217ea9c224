"""Transaction-scoped advisory locks named by text ("memoir:<namespace>:<part>:…"), so every writer that must
serialize on one name (an idempotency key, an artifact id, a formation source) computes the same key."""


def _part(value):
    return value.hex() if isinstance(value, bytes | bytearray) else str(value)


def advisory_xact_lock(cursor, namespace, *parts):
    """Wait for the named lock; it is released at commit or rollback. Bytes parts are named by their hex."""
    name = ":".join(["memoir", namespace, *map(_part, parts)])
    cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [name])

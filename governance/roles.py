"""The two database roles (docs/database-roles.md): which connection settings the owner uses, and the grants
that make the runtime role able to serve requests but never rewrite the ledger, its triggers or its functions."""
from contextlib import contextmanager

import environ
from django.conf import settings
from django.db import connections
from psycopg import sql as pgsql

# Tables the runtime may only read and append to, with the columns an INSERT may name. The entry id and the time
# are not among them: the database assigns both (governance.md §4, docs/decisions.md).
APPEND_ONLY = {
    "audit_entry": ("operation", "principal", "principal_kind", "project", "magnitude", "outcome"),
}
# Tables the runtime may only read: seals appear through the owner's SECURITY DEFINER function, and the erasure
# registry is what erasure trusts to find everything derived from a message.
READ_ONLY = ("audit_seal", "django_migrations", "projection_kind")


def owner_settings():
    """USER/PASSWORD/HOST/PORT of MIGRATION_DATABASE_URL, or {} when one role does both jobs."""
    url = getattr(settings, "MIGRATION_DATABASE_URL", "")
    if not url:
        return {}
    parsed = environ.Env.db_url_config(url)
    return {key: parsed[key] for key in ("USER", "PASSWORD", "HOST", "PORT") if parsed.get(key) not in (None, "")}


def _same_server(owner, settings_dict):
    return (str(owner.get("HOST", "")), str(owner.get("PORT", ""))) == (
        str(settings_dict.get("HOST") or ""), str(settings_dict.get("PORT") or ""))


@contextmanager
def as_owner(alias="default"):
    """Run the block on `alias` connected as the owner role, then reconnect as whoever it was before.

    The owner URL only lends its credentials to a connection on the same server: a DATABASE_URL naming another
    server (a private test cluster) is used as it is."""
    owner = owner_settings()
    connection = connections[alias]
    if owner and not _same_server(owner, connection.settings_dict):
        owner = {}
    saved = {key: connection.settings_dict.get(key) for key in owner}
    if not owner or all(saved[key] == value for key, value in owner.items()):
        yield connection
        return
    connection.close()
    connection.settings_dict.update(owner)
    try:
        yield connection
    finally:
        connection.close()
        connection.settings_dict.update(saved)


def runtime_role_state(cursor, role):
    """'missing', 'self' (the connected role is the runtime one) or 'present'."""
    cursor.execute("SELECT current_user::text = %s::text, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s::text)",
                   [role, role])
    is_self, exists = cursor.fetchone()
    return "self" if is_self else "present" if exists else "missing"


def apply_runtime_grants(connection):
    """Grant the runtime role what it needs on every table of the schema, then take back the ledger's.

    Idempotent; run by `migrate` after the migrations. Does nothing when the role does not exist or is the one
    connected (a single-role installation). DDL takes no parameters: names are composed as psycopg.sql identifiers."""
    role = settings.MEMOIR_RUNTIME_ROLE
    with connection.cursor() as cursor:
        if runtime_role_state(cursor, role) != "present":
            return False
        r = pgsql.Identifier(role)
        templates = [
            "GRANT USAGE ON SCHEMA public TO {role}",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
            "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}",
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {role}",
        ]
        cursor.execute("SELECT current_setting('server_version_num')::int")
        if cursor.fetchone()[0] >= 170000:
            # ANALYZE and VACUUM after bulk work (PostgreSQL 17's MAINTAIN: no rows, triggers or functions change);
            # the ledger's tables lose it again below with everything else.
            templates += ["GRANT MAINTAIN ON ALL TABLES IN SCHEMA public TO {role}",
                          "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT MAINTAIN ON TABLES TO {role}"]
        statements = [pgsql.SQL(t).format(role=r) for t in templates]
        for table, columns in APPEND_ONLY.items():
            t = pgsql.Identifier(table)
            statements += [pgsql.SQL("REVOKE ALL ON {table} FROM {role}").format(table=t, role=r),
                           pgsql.SQL("GRANT SELECT ON {table} TO {role}").format(table=t, role=r),
                           pgsql.SQL("GRANT INSERT ({columns}) ON {table} TO {role}").format(
                               columns=pgsql.SQL(", ").join(map(pgsql.Identifier, columns)), table=t, role=r)]
        for table in READ_ONLY:
            t = pgsql.Identifier(table)
            statements += [pgsql.SQL("REVOKE ALL ON {table} FROM {role}").format(table=t, role=r),
                           pgsql.SQL("GRANT SELECT ON {table} TO {role}").format(table=t, role=r)]
        for statement in statements:
            cursor.execute(statement)
    return True

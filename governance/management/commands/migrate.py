"""`migrate` as the owner role: Django's command, connected with MIGRATION_DATABASE_URL's credentials, followed
by the runtime role's grants (governance/roles.py). Without a migration URL it is Django's command unchanged."""
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DEFAULT_DB_ALIAS

from governance import roles


class Command(DjangoMigrate):
    help = DjangoMigrate.help + " Connects as the owner role (MIGRATION_DATABASE_URL) and grants the runtime role."

    def handle(self, *args, **options):
        alias = options.get("database") or DEFAULT_DB_ALIAS
        with roles.as_owner(alias) as connection:
            super().handle(*args, **options)
            if not options.get("plan") and not options.get("check_unapplied"):
                roles.apply_runtime_grants(connection)

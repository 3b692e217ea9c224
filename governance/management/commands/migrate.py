"""`migrate` as the owner role: Django's command, connected with MIGRATION_DATABASE_URL's credentials, preceded
by the one-time adoption of the history before the layering (governance/legacy_history.py) and followed by the
runtime role's grants (governance/roles.py). Without a migration URL it connects as Django's command does."""
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DEFAULT_DB_ALIAS

from governance import legacy_history, roles


class Command(DjangoMigrate):
    help = DjangoMigrate.help + (" Connects as the owner role (MIGRATION_DATABASE_URL), adopts the migration"
                                 " history from before the layering, and grants the runtime role.")

    def handle(self, *args, **options):
        alias = options.get("database") or DEFAULT_DB_ALIAS
        read_only = options.get("plan") or options.get("check_unapplied")
        with roles.as_owner(alias) as connection:
            if read_only:
                if legacy_history.pending(connection):
                    self.stdout.write("This database has the migration history from before the layering:"
                                      " `migrate` adopts it first (no schema change), so the plan below, read"
                                      " before that, lists the new baseline as unapplied.")
            elif legacy_history.adopt(connection) and options.get("verbosity", 1) >= 1:
                self.stdout.write("Adopted the migration history from before the layering: the new baseline is"
                                  " recorded as applied (no schema change).")
            super().handle(*args, **options)
            if not read_only:
                roles.apply_runtime_grants(connection)

"""The migration history before the layering, and the one step that moves a database migrated with it onto the
new one (docs/decisions.md, "Tables at the bottom"). `migrate` runs it first (management/commands/migrate.py).

Until the layering governance, memory and notifications pointed at each other's tables, so their migrations
zig-zagged (governance 0001 → memory 0001 → governance 0002 → …). The new history creates exactly the same
schema app by app (core, memory, then governance, formation, notifications, then the console's groups) under
new names. A database with the whole old history already has everything the new baseline creates, so the step
records the baseline as applied: no DDL runs and no row of data changes. It keeps the old rows (Django ignores
rows of migrations it has no file for), so the previous release still sees its own history as complete.
"""
from django.core.management.base import CommandError
from django.db import transaction
from django.db.migrations.recorder import MigrationRecorder

# The last history before the layering (0.2.0 development, commit b7d072d): every migration of it, per app.
LEGACY = {
    "governance": (
        "0001_initial", "0002_initial", "0003_console_groups", "0004_artifact_project_identity",
        "0005_audit_entry_assigned_by_database", "0006_audit_operations_round2", "0007_rebuild_permission",
        "0008_subject_reference_name_keys",
    ),
    "memory": (
        "0001_initial", "0002_database_rules", "0003_watermark_function", "0004_fact_slot_indexes",
        "0005_mark_formed_function", "0006_fact_index_tuning", "0007_fact_slot_per_subject",
        "0008_formation_error_without_content", "0009_rules_v2_extractor_version", "0010_fact_has_name_index",
        "0011_formation_rebuild", "0012_passages", "0013_entity_vectors", "0014_lexeme_counts",
        "0015_lexical_follower", "0016_passage_vector_subject_index", "0017_speaker_name_keys",
    ),
    "notifications": (
        "0001_endpoints_and_deliveries", "0002_formed_outbox_trigger", "0003_console_permissions",
    ),
}

# The new history's migrations that together build what LEGACY built. Fixed: a migration added after the
# layering is not part of it, and runs on an adopted database like on any other.
BASELINE = {
    "core": ("0001_initial", "0002_ledger_functions"),
    "memory": ("0001_tables", "0002_rules", "0003_passages", "0004_vocabulary"),
    "governance": ("0001_tables", "0002_rules", "0003_projection_kinds"),
    "formation": ("0001_initial",),
    "notifications": ("0001_tables", "0002_outbox_trigger"),
    "console": ("0001_groups",),
}

# Models whose table moved to another app: their content type (and so its permissions, and any group or admin
# log row naming them) follows. Project and the ledger kept theirs: governance's proxies carry them.
MOVED_CONTENT_TYPES = (("governance", "formation", "formationheartbeat"),)


def _keys(history):
    return {(app, name) for app, names in history.items() for name in names}


def pending(connection):
    """True when `connection`'s database has the old history and the new baseline is not yet recorded."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return False
    applied = set(recorder.applied_migrations())
    return bool(_keys(LEGACY) & applied) and not _keys(BASELINE) <= applied


def adopt(connection):
    """Record the new baseline as applied on a database migrated with the whole old history; True if it did.

    A fresh database (no old rows) and one adopted before are left alone. A database with only part of the old
    history is refused: the new baseline would skip what it lacks."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return False
    legacy, baseline = _keys(LEGACY), _keys(BASELINE)
    with transaction.atomic(using=connection.alias):
        with connection.cursor() as cursor:
            # Two `migrate` runs at once: the second waits here and then finds the baseline recorded.
            cursor.execute("LOCK TABLE django_migrations IN SHARE ROW EXCLUSIVE MODE")
        applied = set(recorder.applied_migrations())
        found = legacy & applied
        if not found or baseline <= applied:
            return False
        missing = sorted(legacy - found)
        if missing:
            raise CommandError(
                "this database has part of the migration history from before the layering (missing "
                + ", ".join(f"{app}.{name}" for app, name in missing)
                + "): run `migrate` with the previous release first, then with this one (docs/decisions.md, "
                "\"Tables at the bottom\")")
        if baseline & applied:
            raise CommandError("this database records part of the new baseline beside the old history: "
                               "django_migrations was edited by hand; restore it before migrating")
        for app, name in sorted(baseline):
            recorder.record_applied(app, name)
        with connection.cursor() as cursor:
            for old_app, new_app, model in MOVED_CONTENT_TYPES:
                cursor.execute(
                    "UPDATE django_content_type SET app_label = %s WHERE app_label = %s AND model = %s"
                    " AND NOT EXISTS (SELECT 1 FROM django_content_type WHERE app_label = %s AND model = %s)",
                    [new_app, old_app, model, new_app, model])
    return True

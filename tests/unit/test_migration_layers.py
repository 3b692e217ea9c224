"""The migration graph follows the layers (docs/architecture.md): `migrate` on an empty database runs each app's
migrations together, bottom layer first, and no app's migration depends on an app above or beside it. The
models match the migrations (a fresh `makemigrations` finds nothing), and the baseline that `migrate` records on
a database migrated with the history before the layering is still on disk (governance/legacy_history.py).

No database: the graph and the plan are read from the migration files.
"""
from django.apps import apps
from django.core.management.commands import makemigrations
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.questioner import NonInteractiveMigrationQuestioner
from django.db.migrations.state import ProjectState

from governance import legacy_history

# Bottom first; apps in one layer are independent of one another.
LAYERS = (("core",), ("memory",), ("governance", "formation", "notifications"), ("api", "console"))
RANK = {app: rank for rank, layer in enumerate(LAYERS) for app in layer}


def _loader():
    return MigrationLoader(None, ignore_no_migrations=True)


def _fresh_plan():
    """The migrations `migrate` applies to an empty database, in its order (Django's own planner)."""
    executor = MigrationExecutor(None)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes(), clean_start=True)
    return [(migration.app_label, migration.name) for migration, _backwards in plan]


def test_a_fresh_migrate_runs_app_by_app_in_layer_order():
    # The baseline (what the layering created) runs app by app; a migration added after it cannot be put back
    # inside it without an applied baseline migration gaining an unapplied dependency, so it runs after the
    # whole baseline (its dependencies, checked below, still point down or to its own app).
    plan = _fresh_plan()
    baseline = {(app, name) for app, names in legacy_history.BASELINE.items() for name in names}
    ours = [app for app, name in plan if app in RANK and (app, name) in baseline]
    runs = [app for i, app in enumerate(ours) if i == 0 or ours[i - 1] != app]
    assert len(runs) == len(set(runs)), f"an app's migrations are split up (zig-zag): {runs}"
    ranks = [RANK[app] for app in runs]
    assert ranks == sorted(ranks), f"an app runs before an app of a lower layer: {runs}"
    assert runs[:2] == ["core", "memory"], runs
    last_of_baseline = max(i for i, step in enumerate(plan) if step in baseline)
    later = [step for step in plan[:last_of_baseline] if step[0] in RANK and step not in baseline]
    assert not later, f"a migration added after the baseline runs inside it: {later}"


def test_migrations_depend_only_on_their_own_app_or_lower_layers():
    upward = []
    for (app, name), migration in _loader().disk_migrations.items():
        if app not in RANK:
            continue
        for dep_app, dep_name in migration.dependencies:
            if dep_app != app and dep_app in RANK and RANK[dep_app] >= RANK[app]:
                upward.append(f"{app}.{name} -> {dep_app}.{dep_name}")
    assert not upward, upward


def test_the_models_need_no_new_migration():
    loader = _loader()
    autodetector = makemigrations.Command.autodetector(  # pgtrigger's, which also compares triggers
        loader.project_state(), ProjectState.from_apps(apps), NonInteractiveMigrationQuestioner(dry_run=True))
    changes = autodetector.changes(graph=loader.graph)
    assert not changes, {app: [m.operations for m in migrations] for app, migrations in changes.items()}


def test_the_adopted_baseline_is_on_disk_and_no_old_name_is_reused():
    on_disk = set(_loader().disk_migrations)
    baseline = {(app, name) for app, names in legacy_history.BASELINE.items() for name in names}
    legacy = {(app, name) for app, names in legacy_history.LEGACY.items() for name in names}
    assert baseline <= on_disk, sorted(baseline - on_disk)
    assert not legacy & on_disk, sorted(legacy & on_disk)
    # Each app's part of the baseline is its first migrations, with no gap: nothing an adopted database lacks
    # can come before or among them.
    plan = _fresh_plan()
    for app, names in legacy_history.BASELINE.items():
        assert tuple(name for a, name in plan if a == app)[:len(names)] == names, app

"""The console's user groups and their permissions (console.md §2): from governance's 0003_console_groups and
0007_rebuild_permission and notifications' 0003_console_permissions, in one place at the top.

It depends on the last migration of every app below the console, so the console's migrations always run last
(tests/unit/test_migration_layers.py); formation has no permission here."""
from django.apps import apps as global_apps
from django.db import migrations

GROUPS = {
    "memoir_operators": [
        "governance.view_project", "governance.add_project", "governance.change_project",
        "governance.view_credential", "governance.issue_credential", "governance.revoke_credential",
        "memory.view_observation", "memory.view_parkedturn", "memory.unpark_turn",
        "governance.view_agentstoragepolicy", "governance.change_agentstoragepolicy",
        "memory.run_rebuild",
        "notifications.view_notificationendpoint", "notifications.view_notificationdelivery",
        "notifications.retry_delivery",
    ],
    "memoir_compliance": [
        "governance.view_erasurerequest", "governance.view_retentionsweep", "governance.view_auditentry",
        "governance.view_auditseal", "governance.view_datasubject", "memory.view_rejectedclaim",
        "governance.run_erasure", "governance.run_export", "governance.seal_audit", "governance.verify_audit",
        "governance.view_refusal_summary",
    ],
    "memoir_engineers": [
        "memory.view_observation", "memory.view_turnmessage", "memory.view_fact", "memory.view_factevidence",
        "memory.view_facthistory", "memory.view_entity", "memory.view_rejectedclaim",
        "memory.view_memoryfeedback", "memory.view_segment", "memory.view_predicate",
        "memory.view_content", "governance.view_refusal_summary",
    ],
}


def create_groups(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    # On a fresh database permissions only appear in post_migrate, after every migration: make them now.
    for label in ("governance", "memory", "notifications"):
        create_permissions(global_apps.get_app_config(label), apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        wanted = []
        for perm in perms:
            app_label, codename = perm.split(".")
            wanted.append(Permission.objects.get(content_type__app_label=app_label, codename=codename))
        group.permissions.add(*wanted)


def drop_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=list(GROUPS)).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0002_ledger_functions"),
        ("memory", "0004_vocabulary"),
        ("governance", "0003_projection_kinds"),
        ("formation", "0001_initial"),
        ("notifications", "0002_outbox_trigger"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, drop_groups)]

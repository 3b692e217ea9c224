"""Operators may start and cancel extractor rebuilds (the console's Extractor rebuild page)."""
from django.apps import apps as global_apps
from django.db import migrations


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    create_permissions(global_apps.get_app_config("memory"), apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    permission = Permission.objects.get(content_type__app_label="memory", codename="run_rebuild")
    for group in Group.objects.filter(name="memoir_operators"):
        group.permissions.add(permission)


def revoke(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(content_type__app_label="memory", codename="run_rebuild").delete()


class Migration(migrations.Migration):

    dependencies = [
        ("governance", "0006_audit_operations_round2"),
        ("governance", "0003_console_groups"),
        ("memory", "0011_formation_rebuild"),
    ]

    operations = [migrations.RunPython(grant, revoke)]

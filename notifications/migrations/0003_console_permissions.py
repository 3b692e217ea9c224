"""The console's operators may see endpoints and deliveries and retry a parked delivery."""
from django.apps import apps as global_apps
from django.db import migrations

PERMISSIONS = ("view_notificationendpoint", "view_notificationdelivery", "retry_delivery")


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    create_permissions(global_apps.get_app_config("notifications"), apps=apps, verbosity=0)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="memoir_operators")
    group.permissions.add(*Permission.objects.filter(content_type__app_label="notifications",
                                                      codename__in=PERMISSIONS))


class Migration(migrations.Migration):
    dependencies = [("notifications", "0002_formed_outbox_trigger"), ("governance", "0003_console_groups")]
    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]

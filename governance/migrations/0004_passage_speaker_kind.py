"""The erasure registry's passage_speaker kind (memory 0007): keyed by its source observation like the passage
sources, so erasure and retention delete and count it."""
from django.db import migrations

from memory.passage_schema import SPEAKER_KIND


def register(apps, schema_editor):
    kind, table, column, description = SPEAKER_KIND
    apps.get_model("governance", "ProjectionKind").objects.update_or_create(kind=kind, defaults={
        "projection_table": table, "id_column": column, "survives_sharing": False, "description": description})


def unregister(apps, schema_editor):
    apps.get_model("governance", "ProjectionKind").objects.filter(kind=SPEAKER_KIND[0]).delete()


class Migration(migrations.Migration):
    dependencies = [("governance", "0003_projection_kinds"), ("memory", "0007_passage_speaker")]
    operations = [migrations.RunPython(register, unregister)]

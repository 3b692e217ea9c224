"""Entity vectors for semantic anchors and `/v1/entities/candidates`, only where pgvector exists, registered for
erasure by the observations their words came from (docs/decisions.md, "Entity candidates")."""
from django.db import migrations

from memory.passage_schema import ENTITY_VECTOR_KIND, ENTITY_VECTOR_REVERSE, create_entity_vector_storage


def entity_vector_storage(apps, schema_editor):
    create_entity_vector_storage(schema_editor.connection)


def register_kind(apps, schema_editor):
    kind, table, column, description = ENTITY_VECTOR_KIND
    apps.get_model("governance", "ProjectionKind").objects.update_or_create(kind=kind, defaults={
        "projection_table": table, "id_column": column, "survives_sharing": False, "description": description})


def unregister_kind(apps, schema_editor):
    apps.get_model("governance", "ProjectionKind").objects.filter(kind=ENTITY_VECTOR_KIND[0]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0012_passages"),
    ]

    operations = [
        migrations.RunPython(entity_vector_storage, migrations.RunPython.noop),
        migrations.RunSQL(migrations.RunSQL.noop, ENTITY_VECTOR_REVERSE),
        migrations.RunPython(register_kind, unregister_kind),
    ]

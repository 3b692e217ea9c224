"""The erasure registry's projection kinds: memory's projections (its vocabulary), the passage sources and
vectors, and the entity vectors (from memory's 0002_database_rules, 0012_passages and 0013_entity_vectors)."""
from django.db import migrations

from memory.passage_schema import ENTITY_VECTOR_KIND, PASSAGE_KINDS
from memory.vocabulary import PROJECTION_KINDS


def register(apps, schema_editor):
    ProjectionKind = apps.get_model("governance", "ProjectionKind")
    ProjectionKind.objects.bulk_create(
        ProjectionKind(kind=k, projection_table=t, id_column=c, survives_sharing=s, description=d)
        for k, t, c, s, d in PROJECTION_KINDS
    )
    for kind, table, column, description in (*PASSAGE_KINDS, ENTITY_VECTOR_KIND):
        ProjectionKind.objects.update_or_create(kind=kind, defaults={
            "projection_table": table, "id_column": column, "survives_sharing": False, "description": description})


def unregister(apps, schema_editor):
    kinds = [k[0] for k in (*PROJECTION_KINDS, *PASSAGE_KINDS, ENTITY_VECTOR_KIND)]
    apps.get_model("governance", "ProjectionKind").objects.filter(kind__in=kinds).delete()


class Migration(migrations.Migration):
    dependencies = [("governance", "0002_rules")]
    operations = [migrations.RunPython(register, unregister)]

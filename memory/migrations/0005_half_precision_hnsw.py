"""The HNSW indexes of the vector tables over half-precision casts of the vectors (pgvector's halfvec, 0.7+): half
the index's memory, a faster walk, the same exact re-rank (docs/decisions.md, "Half-precision HNSW"). Where pgvector
has no halfvec, or there are no vector tables, nothing changes. With many vectors stored, this rebuilds their
indexes (docs/operating.md says how to build them beforehand, concurrently)."""
from django.db import migrations

from memory.passage_schema import use_half_precision_hnsw


def to_half(apps, schema_editor):
    use_half_precision_hnsw(schema_editor.connection, half=True)


def to_full(apps, schema_editor):
    use_half_precision_hnsw(schema_editor.connection, half=False)


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_vocabulary")]
    operations = [migrations.RunPython(to_half, to_full)]

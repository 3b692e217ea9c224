"""A subject's vectors of a generation found through a btree, so passage search reads a small subject's vectors
whole (exact) instead of walking the HNSW graph past everyone else's (docs/decisions.md, "A subject's passages")."""
from django.db import migrations


def create_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('public.passage_vector') IS NOT NULL")
        if cursor.fetchone()[0]:  # the vector tables exist only where pgvector was present
            cursor.execute("CREATE INDEX IF NOT EXISTS passage_vector_subject_idx"
                           " ON passage_vector (generation_id, data_subject_id)")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0015_lexical_follower"),
    ]

    operations = [
        migrations.RunPython(create_index, migrations.RunPython.noop),
        migrations.RunSQL(migrations.RunSQL.noop, "DROP INDEX IF EXISTS passage_vector_subject_idx"),
    ]

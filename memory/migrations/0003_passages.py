"""Passages: a passage source per stored turn message with its content digest and an english tsvector under a
GIN index; the vector tables with HNSW indexes, only where pgvector exists; per-project lexeme counts; the
lexical follower's state (docs/decisions.md, "Passages", "Entity candidates", "Lexeme counts", "Lexical
follower", "A subject's passages").

Squashed from memory's 0012–0016 and run in their order (the sources' message trigger is created and then
replaced by the follower, as it was); the projection kinds 0012 and 0013 registered are governance's rows now
(governance 0003_projection_kinds)."""
from django.db import migrations, transaction

from memory.passage_schema import (
    ENTITY_VECTOR_REVERSE,
    LEXEME_COUNTS_REVERSE,
    LEXEME_COUNTS_SQL,
    LEXICAL_FOLLOWER_REVERSE,
    LEXICAL_FOLLOWER_SQL,
    SOURCES_REVERSE,
    SOURCES_SQL,
    VECTOR_REVERSE,
    create_entity_vector_storage,
    create_vector_storage,
)


def vector_storage(apps, schema_editor):
    create_vector_storage(schema_editor.connection, transaction)


def entity_vector_storage(apps, schema_editor):
    create_entity_vector_storage(schema_editor.connection)


def passage_vector_subject_index(apps, schema_editor):
    # A subject's vectors of a generation found through a btree, so passage search reads a small subject's
    # vectors whole (exact) instead of walking the HNSW graph past everyone else's.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('public.passage_vector') IS NOT NULL")
        if cursor.fetchone()[0]:  # the vector tables exist only where pgvector was present
            cursor.execute("CREATE INDEX IF NOT EXISTS passage_vector_subject_idx"
                           " ON passage_vector (generation_id, data_subject_id)")


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_rules")]

    operations = [
        migrations.RunSQL(SOURCES_SQL, SOURCES_REVERSE),
        migrations.RunPython(vector_storage, migrations.RunPython.noop),
        migrations.RunSQL(migrations.RunSQL.noop, VECTOR_REVERSE),
        migrations.RunPython(entity_vector_storage, migrations.RunPython.noop),
        migrations.RunSQL(migrations.RunSQL.noop, ENTITY_VECTOR_REVERSE),
        migrations.RunSQL(LEXEME_COUNTS_SQL, LEXEME_COUNTS_REVERSE),
        migrations.RunSQL(LEXICAL_FOLLOWER_SQL, LEXICAL_FOLLOWER_REVERSE),
        migrations.RunPython(passage_vector_subject_index, migrations.RunPython.noop),
        migrations.RunSQL(migrations.RunSQL.noop, "DROP INDEX IF EXISTS passage_vector_subject_idx"),
    ]

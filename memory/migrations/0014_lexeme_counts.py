"""Per-project lexeme document counts kept by triggers on passage_source, for the lexical half's idf at scale
(docs/decisions.md, "Lexeme counts")."""
from django.db import migrations

from memory.passage_schema import LEXEME_COUNTS_REVERSE, LEXEME_COUNTS_SQL


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0013_entity_vectors"),
    ]

    operations = [
        migrations.RunSQL(LEXEME_COUNTS_SQL, LEXEME_COUNTS_REVERSE),
    ]

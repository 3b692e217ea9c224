"""Passage sources move from the message trigger to the lexical follower, which records how far it has indexed
each project's log (docs/decisions.md, "Lexical follower")."""
from django.db import migrations

from memory.passage_schema import LEXICAL_FOLLOWER_REVERSE, LEXICAL_FOLLOWER_SQL


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0014_lexeme_counts"),
    ]

    operations = [
        migrations.RunSQL(LEXICAL_FOLLOWER_SQL, LEXICAL_FOLLOWER_REVERSE),
    ]

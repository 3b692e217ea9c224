"""The people who speak in each project (passage_speaker), with a GIN index over the names their data subject ids
spell, filled from the passage sources already written; the lexical follower keeps it from then on
(docs/decisions.md, "A subject id that spells a name")."""
from django.db import migrations

from memory.passage_schema import SPEAKER_REVERSE, SPEAKER_SQL


class Migration(migrations.Migration):
    dependencies = [("memory", "0006_passage_continuation")]
    operations = [migrations.RunSQL(SPEAKER_SQL, SPEAKER_REVERSE)]

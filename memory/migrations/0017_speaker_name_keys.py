"""The names a speaker's data subject id spells ("c01-maya", "maya.okafor@…"), indexed per project, so a recall
without a subject finds the person a question names by their id too (docs/decisions.md, "A subject id that spells
a name")."""
from django.db import migrations

# Each run of letters in the id, lower-cased, of at least two letters, prefixed with the project: a canonical
# UUID spells no name (its hex runs would read as "bed", "face"). IMMUTABLE as lower() is: it follows the
# database's character type, which a database keeps for life. COST tells the planner what a call costs (a regex
# split and an aggregate): at the default it would rather run it on every row of a LIMITed scan than use the index
# (40 ms a word at 5,000 subjects, against 0.05 through the index).
CREATE = r"""
CREATE FUNCTION memoir_speaker_name_keys(scope text, subject text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 10000 AS $$
  SELECT coalesce(array_agg(DISTINCT scope || ' ' || word), '{}')
  FROM regexp_split_to_table(lower(subject), '[^[:alpha:]]+') AS word
  WHERE length(word) >= 2
    AND subject !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
$$;
CREATE INDEX entity_speaker_name_keys_idx ON entity
  USING gin (memoir_speaker_name_keys(scope, speaker_subject_id)) WHERE identity_kind = 'speaker';
"""
DROP = """
DROP INDEX IF EXISTS entity_speaker_name_keys_idx;
DROP FUNCTION IF EXISTS memoir_speaker_name_keys(text, text);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0016_passage_vector_subject_index"),
    ]

    operations = [
        migrations.RunSQL(CREATE, DROP),
    ]

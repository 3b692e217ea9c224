"""The names a registered subject's external reference spells ("maya.okafor@…"), indexed per project with memory's
`memoir_speaker_name_keys`, so a recall without a subject finds a registered person the question names by their
reference too, formed fact or not (docs/decisions.md, "A subject id that spells a name")."""
from django.db import migrations

CREATE = ("CREATE INDEX data_subject_reference_name_keys_idx ON data_subject"
          " USING gin (memoir_speaker_name_keys(scope, external_reference)) WHERE external_reference IS NOT NULL")
DROP = "DROP INDEX IF EXISTS data_subject_reference_name_keys_idx"


class Migration(migrations.Migration):
    dependencies = [
        ("governance", "0007_rebuild_permission"),
        ("memory", "0017_speaker_name_keys"),
    ]

    operations = [
        migrations.RunSQL(CREATE, DROP),
    ]

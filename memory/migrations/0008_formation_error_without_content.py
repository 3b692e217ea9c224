"""Earlier versions kept up to 300 characters of a model's reply in formation_error (shown to operators without
view_content); keep only the category before the first ': '."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0007_fact_slot_per_subject"),
    ]

    operations = [
        migrations.RunSQL(
            "UPDATE observation SET formation_error = split_part(formation_error, ': ', 1)"
            " WHERE formation_error LIKE 'model %: %'",
            migrations.RunSQL.noop,
        ),
    ]

"""A single-valued slot is per data subject: the exclusion constraint gains the fact's subject, so one
person's statement about a shared entity never closes, blocks or (through erasure) deletes another's."""

import django.contrib.postgres.constraints
import django.db.models.functions.comparison
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0003_console_groups'),
        ('memory', '0006_fact_index_tuning'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='fact',
            name='fact_single_cardinality_excl',
        ),
        migrations.AddConstraint(
            model_name='fact',
            constraint=django.contrib.postgres.constraints.ExclusionConstraint(condition=models.Q(('cardinality', 'one'), ('subject_entity__isnull', False)), expressions=[('project', '='), ('subject_entity', '='), ('predicate', '='), (django.db.models.functions.comparison.Coalesce('data_subject_id', models.Value('')), '='), ('valid', '&&'), ('known', '&&')], name='fact_single_cardinality_excl'),
        ),
    ]

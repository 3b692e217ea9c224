"""Formation's heartbeat (until the layering governance's table; governance 0001 created it and memory 0002 seeded
its one row). It needs no other table: the dependency on memory's last migration keeps the plan layer by layer
(tests/unit/test_migration_layers.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("memory", "0004_vocabulary"),
    ]

    operations = [
        migrations.CreateModel(
            name='FormationHeartbeat',
            fields=[
                ('id', models.SmallIntegerField(default=1, primary_key=True, serialize=False)),
                ('last_pass_at', models.DateTimeField(null=True)),
                ('last_progress_at', models.DateTimeField(null=True)),
                ('last_failure_at', models.DateTimeField(null=True)),
                ('passes', models.BigIntegerField(default=0)),
                ('failures', models.BigIntegerField(default=0)),
            ],
            options={
                'db_table': 'formation_heartbeat',
                'constraints': [models.CheckConstraint(condition=models.Q(('id', 1)), name='formation_heartbeat_singleton_chk')],
            },
        ),
        migrations.RunSQL("INSERT INTO formation_heartbeat (id, passes, failures) VALUES (1, 0, 0)",
                          "DELETE FROM formation_heartbeat WHERE id = 1"),
    ]

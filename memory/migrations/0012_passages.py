"""Passages: a passage source per stored turn message (written with it by a statement trigger, with its
content digest and an english tsvector under a GIN index), embedding generations, and, only where pgvector
exists, the vector table with HNSW indexes (docs/decisions.md, "Passages")."""

import django.db.models.deletion
import django.db.models.functions.datetime
import uuid
from django.db import migrations, models, transaction

from memory.passage_schema import (
    PASSAGE_KINDS,
    SOURCES_REVERSE,
    SOURCES_SQL,
    VECTOR_REVERSE,
    create_vector_storage,
)


def register_kinds(apps, schema_editor):
    ProjectionKind = apps.get_model("governance", "ProjectionKind")
    for kind, table, column, description in PASSAGE_KINDS:
        ProjectionKind.objects.update_or_create(kind=kind, defaults={
            "projection_table": table, "id_column": column, "survives_sharing": False, "description": description})


def unregister_kinds(apps, schema_editor):
    apps.get_model("governance", "ProjectionKind").objects.filter(kind__in=[k[0] for k in PASSAGE_KINDS]).delete()


def vector_storage(apps, schema_editor):
    create_vector_storage(schema_editor.connection, transaction)


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0006_audit_operations_round2'),
        ('memory', '0011_formation_rebuild'),
    ]

    operations = [
        migrations.CreateModel(
            name='EmbeddingGeneration',
            fields=[
                ('generation_id', models.UUIDField(default=uuid.uuid4, primary_key=True, serialize=False)),
                ('provider', models.CharField(choices=[('local', 'local'), ('endpoint', 'endpoint')], max_length=16)),
                ('model', models.TextField()),
                ('revision', models.TextField(default='')),
                ('dimensions', models.IntegerField()),
                ('metric', models.CharField(default='cosine', max_length=16)),
                ('input_format', models.CharField(default='message-text/v1', max_length=32)),
                ('state', models.CharField(choices=[('building', 'building'), ('active', 'active'), ('cancelled', 'cancelled'), ('retired', 'retired')], default='building', max_length=16)),
                ('auto_activate', models.BooleanField(default=False)),
                ('covered_through_offset', models.BigIntegerField(null=True)),
                ('started_by', models.TextField()),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('built_at', models.DateTimeField(null=True)),
                ('activated_at', models.DateTimeField(null=True)),
                ('ended_at', models.DateTimeField(null=True)),
                ('project', models.ForeignKey(db_column='scope', on_delete=django.db.models.deletion.PROTECT, related_name='+', to='governance.project')),
            ],
            options={
                'db_table': 'embedding_generation',
                'indexes': [models.Index(fields=['project', 'state'], name='embedding_generation_state_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(('state__in', ('building', 'active', 'cancelled', 'retired'))), name='embedding_generation_state_chk'), models.CheckConstraint(condition=models.Q(('provider__in', ('local', 'endpoint'))), name='embedding_generation_provider_chk'), models.CheckConstraint(condition=models.Q(('dimensions__gte', 1), ('dimensions__lte', 16000)), name='embedding_generation_dimensions_chk'), models.CheckConstraint(condition=models.Q(('metric', 'cosine')), name='embedding_generation_metric_chk'), models.CheckConstraint(condition=models.Q(('input_format', 'message-text/v1')), name='embedding_generation_format_chk'), models.UniqueConstraint(condition=models.Q(('state', 'active')), fields=('project',), name='embedding_generation_one_active'), models.UniqueConstraint(condition=models.Q(('state', 'building')), fields=('project',), name='embedding_generation_one_building')],
            },
        ),
        migrations.RunSQL(SOURCES_SQL, SOURCES_REVERSE),
        migrations.RunPython(vector_storage, migrations.RunPython.noop),
        migrations.RunSQL(migrations.RunSQL.noop, VECTOR_REVERSE),
        migrations.RunPython(register_kinds, unregister_kinds),
    ]

# The audit operation CHECK for the second round's ops (embedding.*, formation.rebuild.*, notification.retry):
# one migration with their union, so no branch's list overwrites another's.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('governance', '0005_audit_entry_assigned_by_database'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='auditentry',
            name='audit_operation_chk',
        ),
        migrations.AlterField(
            model_name='auditentry',
            name='operation',
            field=models.CharField(choices=[('observe', 'observe'), ('recall', 'recall'), ('erase', 'erase'), ('freshness', 'freshness'), ('export', 'export'), ('authenticate', 'authenticate'), ('project.create', 'project.create'), ('project.suspend', 'project.suspend'), ('project.resume', 'project.resume'), ('project.retention', 'project.retention'), ('project.list', 'project.list'), ('credential.issue', 'credential.issue'), ('credential.revoke', 'credential.revoke'), ('credential.list', 'credential.list'), ('formation.unpark', 'formation.unpark'), ('formation.status', 'formation.status'), ('formation.parked', 'formation.parked'), ('formation.rebuild.start', 'formation.rebuild.start'), ('formation.rebuild.cancel', 'formation.rebuild.cancel'), ('formation.rebuild', 'formation.rebuild'), ('citation.resolve', 'citation.resolve'), ('message.get', 'message.get'), ('record.list', 'record.list'), ('record.history', 'record.history'), ('record.retract', 'record.retract'), ('record.correct', 'record.correct'), ('record.assert', 'record.assert'), ('feedback.record', 'feedback.record'), ('feedback.list', 'feedback.list'), ('feedback.promote', 'feedback.promote'), ('artifact.put', 'artifact.put'), ('artifact.get', 'artifact.get'), ('artifact.list', 'artifact.list'), ('artifact.delete', 'artifact.delete'), ('artifact.configure', 'artifact.configure'), ('subject.register', 'subject.register'), ('subject.get', 'subject.get'), ('subject.list', 'subject.list'), ('subject.update', 'subject.update'), ('entity.list', 'entity.list'), ('entity.get', 'entity.get'), ('entity.purge', 'entity.purge'), ('notification.register', 'notification.register'), ('notification.list', 'notification.list'), ('notification.disable', 'notification.disable'), ('notification.deliveries', 'notification.deliveries'), ('notification.retry', 'notification.retry'), ('embedding.search', 'embedding.search'), ('entity_embedding.search', 'entity_embedding.search'), ('report_embedding.search', 'report_embedding.search'), ('context.assemble', 'context.assemble'), ('retention.sweep', 'retention.sweep'), ('refusal.summary', 'refusal.summary'), ('erasure.list', 'erasure.list'), ('audit.seal', 'audit.seal'), ('audit.verify', 'audit.verify'), ('audit.activity', 'audit.activity'), ('console.read', 'console.read'), ('console.login', 'console.login'), ('route.unknown', 'route.unknown'), ('embedding.start', 'embedding.start'), ('embedding.build', 'embedding.build'), ('embedding.activate', 'embedding.activate'), ('embedding.cancel', 'embedding.cancel'), ('embedding.prune', 'embedding.prune'), ('embedding.repair', 'embedding.repair')], max_length=32),
        ),
        migrations.AddConstraint(
            model_name='auditentry',
            constraint=models.CheckConstraint(condition=models.Q(('operation__in', ('observe', 'recall', 'erase', 'freshness', 'export', 'authenticate', 'project.create', 'project.suspend', 'project.resume', 'project.retention', 'project.list', 'credential.issue', 'credential.revoke', 'credential.list', 'formation.unpark', 'formation.status', 'formation.parked', 'formation.rebuild.start', 'formation.rebuild.cancel', 'formation.rebuild', 'citation.resolve', 'message.get', 'record.list', 'record.history', 'record.retract', 'record.correct', 'record.assert', 'feedback.record', 'feedback.list', 'feedback.promote', 'artifact.put', 'artifact.get', 'artifact.list', 'artifact.delete', 'artifact.configure', 'subject.register', 'subject.get', 'subject.list', 'subject.update', 'entity.list', 'entity.get', 'entity.purge', 'notification.register', 'notification.list', 'notification.disable', 'notification.deliveries', 'notification.retry', 'embedding.search', 'entity_embedding.search', 'report_embedding.search', 'context.assemble', 'retention.sweep', 'refusal.summary', 'erasure.list', 'audit.seal', 'audit.verify', 'audit.activity', 'console.read', 'console.login', 'route.unknown', 'embedding.start', 'embedding.build', 'embedding.activate', 'embedding.cancel', 'embedding.prune', 'embedding.repair'))), name='audit_operation_chk'),
        ),
    ]

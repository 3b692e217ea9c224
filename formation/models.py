"""Formation's table: the heartbeat the driver stamps on each sweep (one row, id 1), which the console reads."""
from django.db import models
from django.db.models import CheckConstraint, Q


class FormationHeartbeat(models.Model):
    id = models.SmallIntegerField(primary_key=True, default=1)
    last_pass_at = models.DateTimeField(null=True)
    last_progress_at = models.DateTimeField(null=True)
    last_failure_at = models.DateTimeField(null=True)
    passes = models.BigIntegerField(default=0)
    failures = models.BigIntegerField(default=0)

    class Meta:
        db_table = "formation_heartbeat"
        constraints = [CheckConstraint(condition=Q(id=1), name="formation_heartbeat_singleton_chk")]

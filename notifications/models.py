"""Notification endpoints and the delivery outbox (docs/webhooks.md). Rows name a project, offsets and
counts only: no subject, no content, and the signing secret only as ciphertext."""
from django.db import models
from django.db.models import CheckConstraint, Q

PROJECT = "core.Project"

# The fixed categories `last_error` may hold; a raw network error could name internal addresses.
ERROR_CATEGORIES = (
    "destination not permitted", "address not permitted", "redirect not followed", "timeout",
    "connection refused", "tls failure", "network error", "endpoint disabled",
)
ERROR_CATEGORY_RE = r"^destination (answered|refused with) [0-9]{3}$"


class NotificationEndpoint(models.Model):
    id = models.UUIDField(primary_key=True, db_column="endpoint_id")
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    url = models.TextField()
    secret_ciphertext = models.BinaryField()
    created_by = models.TextField()
    created_at = models.DateTimeField()
    disabled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "notification_endpoint"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["project", "created_at"], name="notif_endpoint_scope_idx")]

    def __str__(self):
        return f"endpoint {self.id}"


class NotificationDelivery(models.Model):
    id = models.UUIDField(primary_key=True, db_column="delivery_id")
    endpoint = models.ForeignKey(NotificationEndpoint, models.PROTECT, db_column="endpoint_id",
                                 related_name="deliveries")
    project = models.ForeignKey(PROJECT, models.PROTECT, db_column="scope", related_name="+")
    formed_through = models.BigIntegerField()
    stored_through = models.BigIntegerField()
    parked_turns = models.IntegerField()
    occurred_at = models.DateTimeField()
    created_at = models.DateTimeField()
    attempts = models.IntegerField(default=0, db_default=0)
    next_attempt_at = models.DateTimeField()
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    parked_at = models.DateTimeField(null=True, blank=True)
    last_status = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)

    class Meta:
        db_table = "notification_delivery"
        verbose_name_plural = "notification deliveries"
        indexes = [
            models.Index(fields=["next_attempt_at"], name="notif_delivery_due_idx",
                         condition=Q(delivered_at__isnull=True, parked_at__isnull=True)),
            models.Index(fields=["project", "created_at"], name="notif_delivery_scope_idx"),
            models.Index(fields=["endpoint"], name="notif_delivery_endpoint_idx"),
        ]
        constraints = [
            CheckConstraint(condition=Q(last_error__isnull=True) | Q(last_error__in=ERROR_CATEGORIES)
                            | Q(last_error__regex=ERROR_CATEGORY_RE), name="notif_delivery_error_category_chk"),
            CheckConstraint(condition=Q(attempts__gte=0), name="notif_delivery_attempts_chk"),
        ]
        permissions = [("retry_delivery", "Can retry a parked notification delivery")]

    def __str__(self):
        return f"delivery {self.id}"

"""The notifications app: endpoints, the delivery outbox and its sender."""
from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"

"""App config for core: the bottom layer, and the tables every layer points at (project, the audit ledger)."""
from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    default_auto_field = "django.db.models.BigAutoField"

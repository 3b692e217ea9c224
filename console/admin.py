"""Every model registration on the console's site, found by Django's admin autodiscovery (console is an app).

The models stay in their own apps (their labels never change); only their console pages live here."""
from console import admin_governance, admin_memory, admin_notifications  # noqa: F401 - registering is importing

__all__ = ("admin_governance", "admin_memory", "admin_notifications")

"""App config for console: no tables, only admin registrations, console pages and their templates."""
from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"

"""The api app. At startup it refuses to run when a /v1 route's op is missing from the ledger's closed
operation list (data-model.md §6), so no route can answer before its audit row is possible."""
from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, get_resolver


def route_views(patterns):
    """Every V1View subclass routed by `patterns`, resolvers included, in URLconf order."""
    # Here, not at the top: apps.py is imported before the app registry is ready.
    from .base import V1View

    found = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            found.extend(route_views(pattern.url_patterns))
        elif isinstance(pattern, URLPattern):
            cls = getattr(pattern.callback, "cls", None)
            if isinstance(cls, type) and issubclass(cls, V1View):
                found.append(cls)
    return found


def check_route_ops(patterns=None):
    """Raise ImproperlyConfigured naming every routed op the ledger cannot record."""
    # Here, not at the top: apps.py is imported before the app registry is ready.
    from core.audit import OPERATIONS

    if patterns is None:
        patterns = get_resolver().url_patterns
    missing = sorted({repr(cls.op) for cls in route_views(patterns) if cls.op not in OPERATIONS})
    if missing:
        raise ImproperlyConfigured(
            "these /v1 route ops are not in core.audit.OPERATIONS: " + ", ".join(missing))


class ApiConfig(AppConfig):
    name = "api"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        check_route_ops()

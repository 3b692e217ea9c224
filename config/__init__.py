"""Project configuration: settings, URLs, the Celery app and the WSGI entry point."""
# The version lives in core (every layer may read it); config re-exports it for its own modules and callers.
from core.version import __version__

from .celery import app as celery_app

__all__ = ("__version__", "celery_app")

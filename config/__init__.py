"""Project configuration: settings, URLs, the Celery app and the WSGI entry point."""
# The one version string: the console footer, /v1/schema's info.version and `manage.py memoir_version` show it.
__version__ = "0.2.0"

from .celery import app as celery_app  # noqa: E402 - the version must not wait on Celery's import

__all__ = ("__version__", "celery_app")

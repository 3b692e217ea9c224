"""WSGI entry point served by gunicorn."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
application = get_wsgi_application()

from memory.embedders import warm_in_background  # noqa: E402 - needs the settings configured above

warm_in_background()

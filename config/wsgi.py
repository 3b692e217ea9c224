"""WSGI entry point served by gunicorn."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
application = get_wsgi_application()

from memory.embedders import serve_questions, warm_in_background  # noqa: E402 - needs the settings configured above

serve_questions()
warm_in_background()

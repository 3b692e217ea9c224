"""Production settings: secure cookies and a mandatory secret key."""
from .base import *  # noqa: F403

SECRET_KEY = env("DJANGO_SECRET_KEY")  # noqa: F405
DEBUG = False
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True

# The notification test-only switches never reach a production deployment.
if MEMOIR_NOTIFY_ALLOW_PRIVATE or MEMOIR_NOTIFY_CA_BUNDLE:  # noqa: F405
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("MEMOIR_NOTIFY_ALLOW_PRIVATE and MEMOIR_NOTIFY_CA_BUNDLE are for tests only")

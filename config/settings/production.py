"""Production settings: select with DJANGO_SETTINGS_MODULE=config.settings.production (docs/operating.md).

Every value an operator must choose is required here (no development defaults), TLS is assumed to end at a
reverse proxy that sets X-Forwarded-Proto, and `manage.py check --deploy` is clean with the documented
variables set (tests/ops/test_production.py runs it).
"""
import os

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403

for _required in ("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL"):
    if not os.environ.get(_required):
        raise ImproperlyConfigured(f"{_required} must be set for config.settings.production (docs/operating.md)")

SECRET_KEY = env("DJANGO_SECRET_KEY")  # noqa: F405
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")  # noqa: F405
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])  # noqa: F405
DEBUG = False

# TLS ends at the reverse proxy, which must set X-Forwarded-Proto (and strip a client-sent one).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("MEMOIR_SSL_REDIRECT", default=True)  # noqa: F405
# Load balancers probe over plain HTTP on the private side.
SECURE_REDIRECT_EXEMPT = [r"^health$", r"^ready$", r"^metrics$"]
SECURE_HSTS_SECONDS = env.int("MEMOIR_HSTS_SECONDS", default=31536000)  # noqa: F405
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("MEMOIR_HSTS_INCLUDE_SUBDOMAINS", default=True)  # noqa: F405
SECURE_HSTS_PRELOAD = env.bool("MEMOIR_HSTS_PRELOAD", default=True)  # noqa: F405
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True

# One JSON object per line unless told otherwise (MEMOIR_LOG_FORMAT=text).
LOGGING = build_logging(  # noqa: F405
    fmt=env("MEMOIR_LOG_FORMAT", default="json"),  # noqa: F405
    level=env("MEMOIR_LOG_LEVEL", default="INFO"),  # noqa: F405
)
SECURE_CONTENT_TYPE_NOSNIFF = True

# The notification test-only switches never reach a production deployment.
if MEMOIR_NOTIFY_ALLOW_PRIVATE or MEMOIR_NOTIFY_CA_BUNDLE:  # noqa: F405
    raise ImproperlyConfigured("MEMOIR_NOTIFY_ALLOW_PRIVATE and MEMOIR_NOTIFY_CA_BUNDLE are for tests only")

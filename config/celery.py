"""The Celery app and its code-declared beat schedule (formation.md §3).

Celery only kicks work: PostgreSQL is the queue, so a lost message delays formation and loses nothing.
"""
import os

from celery import Celery
from celery.signals import setup_logging
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("memoir")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("formation"))
app.conf.task_routes = {
    "formation.tasks.drain_project": {"queue": "formation"},
    "formation.tasks.compaction_pass": {"queue": "formation"},
    "formation.tasks.rebuild_slice": {"queue": "formation"},
}
app.conf.beat_schedule = {
    "formation-sweep": {
        "task": "formation.tasks.sweep",
        "schedule": float(os.environ.get("MEMOIR_FORMATION_INTERVAL", "5")),
        "options": {"expires": 5},
    },
    "formation-compaction": {
        "task": "formation.tasks.compaction_pass",
        "schedule": 60.0,
        "options": {"expires": 60},
    },
    "formation-rebuild-sweep": {
        "task": "formation.tasks.rebuild_sweep",
        "schedule": float(os.environ.get("MEMOIR_FORMATION_INTERVAL", "5")),
        "options": {"expires": 5},
    },
    "retention-sweep": {"task": "governance.tasks.retention_sweep", "schedule": 3600.0, "options": {"expires": 3600}},
    "embedding-sweep": {
        "task": "memory.tasks.embedding_sweep",
        "schedule": float(os.environ.get("MEMOIR_EMBEDDING_INTERVAL", "10")),
        "options": {"expires": 10},
    },
    "lexeme-count-fold": {"task": "memory.tasks.fold_lexeme_counts", "schedule": 30.0, "options": {"expires": 30}},
    "audit-seal": {"task": "governance.tasks.seal_audit", "schedule": 300.0, "options": {"expires": 300}},
    "notification-deliveries": {
        "task": "notifications.tasks.deliver",
        "schedule": float(os.environ.get("MEMOIR_NOTIFY_INTERVAL", "5")),
        "options": {"expires": 5},
    },
}
app.autodiscover_tasks()


@setup_logging.connect
def use_django_logging(**_):
    """Worker and beat log through settings.LOGGING (config/logs.py): its format, and Celery's per-task lines
    kept below INFO, instead of Celery's own set-up (which --loglevel would otherwise drive)."""
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)

"""The Celery app and its code-declared beat schedule (formation.md §3).

Celery only kicks work: PostgreSQL is the queue, so a lost message delays formation and loses nothing.
"""
import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("memoir")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("formation"))
app.conf.task_routes = {
    "formation.tasks.drain_project": {"queue": "formation"},
    "formation.tasks.compaction_pass": {"queue": "formation"},
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
    "retention-sweep": {"task": "governance.tasks.retention_sweep", "schedule": 3600.0, "options": {"expires": 3600}},
    "embedding-sweep": {
        "task": "memory.tasks.embedding_sweep",
        "schedule": float(os.environ.get("MEMOIR_EMBEDDING_INTERVAL", "10")),
        "options": {"expires": 10},
    },
    "audit-seal": {"task": "governance.tasks.seal_audit", "schedule": 300.0, "options": {"expires": 300}},
}
app.autodiscover_tasks()

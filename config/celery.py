"""The Celery app (formation.md §3); its queues, routes and beat schedule are settings (config/settings/base.py).

Celery only kicks work: PostgreSQL is the queue, so a lost message delays formation and loses nothing.
"""
import logging.config
import os

from celery import Celery
from celery.signals import setup_logging
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("memoir")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def use_django_logging(**_):
    """Worker and beat log through settings.LOGGING (config/logs.py): its format, and Celery's per-task lines
    kept below INFO, instead of Celery's own set-up (which --loglevel would otherwise drive)."""
    logging.config.dictConfig(settings.LOGGING)

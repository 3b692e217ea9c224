"""Celery tasks: thin wrappers over the driver and the compaction pass (formation.md §3, §11)."""
from celery import shared_task

from . import compaction, driver
from .kick import kick_drain


@shared_task(name="formation.tasks.drain_project", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=660, time_limit=720)
def drain_project(project):
    stats = driver.drain_task_body(project)
    if stats.out_of_time:
        kick_drain(project)
    return {"formed": stats.turns_formed, "failed": stats.turns_failed, "parked": stats.turns_parked}


@shared_task(name="formation.tasks.sweep")
def sweep():
    return driver.sweep(kick_drain)


@shared_task(name="formation.tasks.compaction_pass")
def compaction_pass():
    return compaction.run_pass()

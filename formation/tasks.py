"""Celery tasks: thin wrappers over the driver and the compaction pass (formation.md §3, §11)."""
import logging

from celery import shared_task

from . import compaction, driver, rebuild
from .kick import kick_drain

logger = logging.getLogger(__name__)


@shared_task(name="formation.tasks.drain_project", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=660, time_limit=720)
def drain_project(project):
    stats = driver.drain_task_body(project)
    did = stats.turns_formed or stats.turns_failed or stats.turns_parked
    logger.log(logging.INFO if did else logging.DEBUG, "drain formed %s, failed %s, parked %s turns",
               stats.turns_formed, stats.turns_failed, stats.turns_parked)
    if stats.out_of_time:
        kick_drain(project)
    return {"formed": stats.turns_formed, "failed": stats.turns_failed, "parked": stats.turns_parked}


@shared_task(name="formation.tasks.sweep")
def sweep():
    kicked = driver.sweep(kick_drain)
    # Every 5 s by default: kicking is not work (the drains it starts say at INFO when they formed something).
    logger.debug("formation sweep kicked %s project(s)", len(kicked))
    return len(kicked)


@shared_task(name="formation.tasks.compaction_pass")
def compaction_pass():
    written = compaction.run_pass()
    logger.log(logging.INFO if written else logging.DEBUG, "compaction wrote segments in %s project(s)",
               len(written or {}))
    return written


@shared_task(name="formation.tasks.rebuild_slice", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=660, time_limit=720)
def rebuild_slice(project):
    """One slice of a project's extractor rebuild; a job with more to do queues its next slice behind the
    drains already waiting, so a rebuild never holds a worker away from new turns for long."""
    result = rebuild.slice_task_body(project)
    if result.state == "more":
        rebuild.kick_rebuild(project)
    elif result.state == "waiting":
        rebuild.kick_rebuild(project, countdown=1)
    return {"state": result.state, "sources": result.sources}


@shared_task(name="formation.tasks.rebuild_sweep")
def rebuild_sweep():
    return rebuild.sweep(rebuild.kick_rebuild)

"""Celery only sends: the periodic pass reads the PostgreSQL outbox, so a lost message or a dead worker loses
nothing."""
from celery import shared_task

from . import delivery, destinations


@shared_task(name="notifications.tasks.deliver", ignore_result=True)
def deliver():
    """Send due deliveries; a full batch means more may be due, so another pass is queued at once."""
    if not destinations.enabled():
        return
    if delivery.deliver_due() >= delivery.BATCH:
        deliver.apply_async(retry=False)

"""Celery tasks for governance: the hourly retention sweep and the five-minute ledger seal (thin wrappers)."""
import logging

from celery import shared_task

from core import audit
from governance import ledger, retention

logger = logging.getLogger(__name__)


@shared_task(name="governance.tasks.retention_sweep")
def retention_sweep():
    touched = retention.sweep()
    logger.log(logging.INFO if touched else logging.DEBUG, "retention sweep touched %s project(s)", len(touched))
    return {"projects": len(touched), "observations": sum(t["observations"] for t in touched)}


@shared_task(name="governance.tasks.seal_audit")
def seal_audit():
    sealed = ledger.seal(principal=audit.SYSTEM_PRINCIPAL, principal_kind="system")
    if sealed is None:
        logger.debug("audit seal: nothing to seal")
    return sealed["seal_id"] if sealed else None

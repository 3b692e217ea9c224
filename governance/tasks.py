"""Celery tasks for governance: the hourly retention sweep and the five-minute ledger seal (thin wrappers)."""
from celery import shared_task

from . import audit, ledger, retention


@shared_task(name="governance.tasks.retention_sweep")
def retention_sweep():
    touched = retention.sweep()
    return {"projects": len(touched), "observations": sum(t["observations"] for t in touched)}


@shared_task(name="governance.tasks.seal_audit")
def seal_audit():
    sealed = ledger.seal(principal=audit.SYSTEM_PRINCIPAL, principal_kind="system")
    return sealed["seal_id"] if sealed else None

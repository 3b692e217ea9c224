"""The audit ledger's closed operation list and its single write function (governance.md §4).

A ledger row never holds content: no subject, question, quote, record id, token or error text.
"""
import logging

from django.db import connection

logger = logging.getLogger(__name__)

OPERATIONS = (
    "observe", "recall", "erase", "freshness", "export", "authenticate",
    "project.create", "project.suspend", "project.resume", "project.retention", "project.list",
    "credential.issue", "credential.revoke", "credential.list",
    "formation.unpark", "formation.status", "formation.parked",
    "formation.rebuild.start", "formation.rebuild.cancel", "formation.rebuild",
    "citation.resolve", "message.get",
    "record.list", "record.history", "record.retract", "record.correct", "record.assert",
    "feedback.record", "feedback.list", "feedback.promote",
    "artifact.put", "artifact.get", "artifact.list", "artifact.delete", "artifact.configure",
    "subject.register", "subject.get", "subject.list", "subject.update",
    "entity.list", "entity.get", "entity.purge",
    "notification.register", "notification.list", "notification.disable", "notification.deliveries",
    "notification.retry",
    "embedding.search", "entity_embedding.search", "report_embedding.search",
    "context.assemble", "retention.sweep", "refusal.summary", "erasure.list",
    "audit.seal", "audit.verify", "audit.activity",
    "console.read", "console.login", "route.unknown",
    "embedding.start", "embedding.build", "embedding.activate", "embedding.cancel", "embedding.prune",
    "embedding.repair",
)
PRINCIPAL_KINDS = ("credential", "operator", "system")
OUTCOMES = ("allowed", "refused")
CLI_PRINCIPAL = "cli"
SYSTEM_PRINCIPAL = "system"


class UnknownOperation(ValueError):
    pass


def record(*, op, principal, principal_kind, project="", magnitude=0, outcome="allowed"):
    """Append one ledger row. Inside a transaction it is atomic with it; callers decide which."""
    if op not in OPERATIONS:
        raise UnknownOperation(op)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_entry (operation, principal, principal_kind, project, magnitude, outcome)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            [op, principal, principal_kind, project or "", max(0, int(magnitude)), outcome],
        )


def record_best_effort(*, op, principal, principal_kind, project="", magnitude=0, outcome="allowed"):
    """Append a ledger row outside the caller's transaction, logging (never raising) on failure."""
    try:
        record(op=op, principal=principal, principal_kind=principal_kind, project=project, magnitude=magnitude,
               outcome=outcome)
    except Exception:  # the request has been answered; a lost best-effort row is only logged
        logger.exception("audit write failed for op=%s outcome=%s", op, outcome)

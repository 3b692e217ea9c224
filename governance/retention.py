"""The retention sweep (governance.md §3): due observations are removed by the erasure walk, page by page.

Each pass is one transaction holding its `retention_sweep` receipt and its `retention.sweep` ledger row.
"""
import json
import logging

from django.db import connection, transaction

from core import audit
from core.encoding import format_ts
from core.retry import run_retrying
from memory.services import recompute_watermark

from .erasure import Selection, read_registry, remove_selection

logger = logging.getLogger(__name__)

PAGE = 500
# Bounds one run; a project with more due observations continues on the next run.
MAX_PASSES_PER_RUN = 20


def _cutoff(cursor, now):
    cursor.execute("SELECT coalesce(%s::timestamptz, now())", [now])
    return cursor.fetchone()[0]


def _due_projects(now, project):
    """Projects with due observations (retention policy or expired artifacts) or expired subjects."""
    with connection.cursor() as cursor:
        cutoff = _cutoff(cursor, now)
        cursor.execute(
            "SELECT p.name FROM project p WHERE (%s::text IS NULL OR p.name = %s) AND ("
            " EXISTS (SELECT 1 FROM observation o WHERE o.scope = p.name AND o.retention_until <= %s)"
            " OR EXISTS (SELECT 1 FROM data_subject s WHERE s.scope = p.name AND s.inactive_after <= %s))"
            " ORDER BY p.name", [project, project, cutoff, cutoff])
        return [row[0] for row in cursor.fetchall()]


def _expire_subjects(cursor, project, cutoff):
    """Delete subjects past inactive_after that no remaining observation or artifact names."""
    cursor.execute(
        "DELETE FROM data_subject s WHERE s.scope = %s AND s.inactive_after <= %s"
        " AND NOT EXISTS (SELECT 1 FROM observation o WHERE o.scope = s.scope AND o.data_subject_id = s.subject_id::text)"
        " AND NOT EXISTS (SELECT 1 FROM agent_artifact a WHERE a.scope = s.scope"
        "  AND a.data_subject_id = s.subject_id::text)", [project, cutoff])
    return cursor.rowcount


def _pass(project, now):
    """One page of one project. Returns (receipt or None, whether a full page was taken)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cutoff = _cutoff(cursor, now)
        cursor.execute(
            "SELECT observation_id FROM observation WHERE scope = %s AND retention_until <= %s"
            " ORDER BY retention_until, log_offset LIMIT %s FOR UPDATE SKIP LOCKED", [project, cutoff, PAGE])
        ids = [str(row[0]) for row in cursor.fetchall()]
        deleted = {}
        if ids:
            registry = read_registry(cursor)
            deleted, residual = remove_selection(cursor, Selection(project, ids=ids), registry, ids)
            if any(residual.values()):
                logger.warning("retention sweep of %s left residual rows", project)
            recompute_watermark(cursor, project)
        deleted["data_subject"] = _expire_subjects(cursor, project, cutoff)
        if not ids and not deleted["data_subject"]:
            return None, False
        deleted = dict(sorted(deleted.items()))
        cursor.execute(
            "INSERT INTO retention_sweep (sweep_id, scope, swept_at, observations, deleted)"
            " VALUES (gen_random_uuid(), %s, now(), %s, %s::jsonb) RETURNING sweep_id, swept_at",
            [project, len(ids), json.dumps(deleted)])
        sweep_id, swept_at = cursor.fetchone()
        audit.record(op="retention.sweep", principal=audit.SYSTEM_PRINCIPAL, principal_kind="system",
                     project=project, magnitude=len(ids))
    receipt = {"sweep_id": str(sweep_id), "scope": project, "swept_at": format_ts(swept_at),
               "observations": len(ids), "deleted": deleted}
    return receipt, len(ids) == PAGE


def _merge(total, receipt):
    if total is None:
        return {"scope": receipt["scope"], "sweeps": [receipt["sweep_id"]], "observations": receipt["observations"],
                "deleted": dict(receipt["deleted"])}
    total["sweeps"].append(receipt["sweep_id"])
    total["observations"] += receipt["observations"]
    for key, value in receipt["deleted"].items():
        total["deleted"][key] = total["deleted"].get(key, 0) + value
    return total


def sweep(*, now=None, project=None):
    """One retention run over every project with something due (or only `project`).

    Returns one summary per project touched: its pass receipts' ids and the summed counts.
    """
    touched = []
    for name in _due_projects(now, project):
        total = None
        for _ in range(MAX_PASSES_PER_RUN):
            receipt, more = run_retrying(lambda name=name: _pass(name, now), what="retention sweep")
            if receipt is not None:
                total = _merge(total, receipt)
            if not more:
                break
        if total is not None:
            total["deleted"] = dict(sorted(total["deleted"].items()))
            touched.append(total)
    return touched

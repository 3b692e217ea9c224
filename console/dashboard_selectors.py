"""Reads behind the console dashboard and /metrics: formation figures per project, refusals by reason over
time, erasures, exports, retention sweeps, the ledger's seal and verification, and embedding coverage.

Read-only, aggregate figures only: project names, closed-set codes and counts, never content or a subject id.
"""
from datetime import date, timedelta

from django.db import connection
from django.utils import timezone

from console import selectors as console_selectors
from core.closed_sets import REFUSAL_REASONS
from governance.models import Project
from memory.passages import vector_storage_ready

CHART_DAYS = 14


def _rows(sql, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def formation_by_project(*, project=None):
    """[{name, label, stored, formed, parked, backlog, lag_seconds, suspended}] by project name."""
    projects = Project.objects.order_by("name")
    if project:
        projects = projects.filter(name=project)
    now = timezone.now()
    out = []
    for p in console_selectors.with_formation_figures(projects):
        lag = max(0.0, (now - p.oldest_unformed).total_seconds()) if p.oldest_unformed else 0.0
        out.append({"name": p.name, "label": p.label, "stored": p.stored or 0, "formed": p.formed or 0,
                    "parked": p.parked, "backlog": p.backlog, "lag_seconds": lag,
                    "lag": console_selectors.age(p.oldest_unformed, now), "suspended": p.suspended_at is not None})
    return out


def instance_state():
    """The formation heartbeat, the instance-wide ingestion budget, and projects and live credentials."""
    beat = _rows("SELECT last_pass_at FROM formation_heartbeat WHERE id = 1")
    budget = _rows("SELECT pending, max_pending FROM ingestion_budget LIMIT 1")
    counts = _rows("SELECT (SELECT count(*) FROM project), (SELECT count(*) FROM project WHERE suspended_at IS NOT NULL),"
                   " (SELECT count(*) FROM credential WHERE revoked_at IS NULL)")[0]
    now = timezone.now()
    last_pass = beat[0][0] if beat else None
    return {
        "last_pass_at": last_pass,
        "last_pass_age": console_selectors.age(last_pass, now) if last_pass else "never",
        "stale": last_pass is None or (now - last_pass).total_seconds() > console_selectors.HEARTBEAT_STALE_SECONDS,
        "pending": budget[0][0] if budget else 0, "max_pending": budget[0][1] if budget else None,
        "projects": counts[0], "suspended": counts[1], "live_credentials": counts[2],
    }


def refusals_by_day(*, days=CHART_DAYS, project=None):
    """Refusal counts per UTC day and reason over the last `days` days: {"days": [date], "series": {reason:
    [count per day]}, "totals": {reason: count}}; every reason of the closed set is present."""
    first = timezone.now().date() - timedelta(days=days - 1)
    sql = ("SELECT (recorded_at AT TIME ZONE 'UTC')::date, reason, count(*) FROM rejected_claim"
           " WHERE recorded_at >= %s::date" + (" AND scope = %s" if project else "") +
           " GROUP BY 1, 2")
    params = [first.isoformat()] + ([project] if project else [])
    day_list = [first + timedelta(days=i) for i in range(days)]
    index = {d: i for i, d in enumerate(day_list)}
    series = {reason: [0] * days for reason in REFUSAL_REASONS}
    for day, reason, count in _rows(sql, params):
        if day in index and reason in series:
            series[reason][index[day]] += count
    return {"days": day_list, "series": series, "totals": {r: sum(v) for r, v in series.items()}}


def refusals_by_reason(*, project=None):
    """All-time refusal counts by (project, reason): [(project, reason, count)]."""
    sql = "SELECT scope, reason, count(*) FROM rejected_claim" + (" WHERE scope = %s" if project else "") + \
        " GROUP BY 1, 2 ORDER BY 1, 2"
    return _rows(sql, [project] if project else [])


def claims_admitted(*, project=None):
    """Evidence rows (each an admitted claim's citation) per project: [(project, count)]."""
    sql = "SELECT scope, count(*) FROM fact_evidence" + (" WHERE scope = %s" if project else "") + \
        " GROUP BY 1 ORDER BY 1"
    return _rows(sql, [project] if project else [])


def erasures_by_project(*, project=None):
    """[(project, done, clean, open)] from the erasure receipts (which are never deleted)."""
    sql = ("SELECT scope, count(*) FILTER (WHERE completed_at IS NOT NULL),"
           " count(*) FILTER (WHERE completed_at IS NOT NULL AND NOT EXISTS ("
           "   SELECT 1 FROM jsonb_each_text(residual) r WHERE r.value <> '0')),"
           " count(*) FILTER (WHERE completed_at IS NULL)"
           " FROM erasure_request" + (" WHERE scope = %s" if project else "") + " GROUP BY 1 ORDER BY 1")
    return _rows(sql, [project] if project else [])


def retention_sweeps_by_project(*, project=None):
    """[(project, sweeps, observations deleted)] from the sweep receipts."""
    sql = ("SELECT scope, count(*), coalesce(sum(observations), 0) FROM retention_sweep"
           + (" WHERE scope = %s" if project else "") + " GROUP BY 1 ORDER BY 1")
    return _rows(sql, [project] if project else [])


def ledger_counts(*, operations=None, project=None, since=None):
    """Ledger rows by (operation, outcome), optionally for some operations, one project, or since a time."""
    where, params = [], []
    if operations:
        where.append("operation = ANY(%s::text[])")
        params.append(list(operations))
    if project:
        where.append("project = %s")
        params.append(project)
    if since is not None:
        where.append("occurred_at >= %s")
        params.append(since)
    sql = "SELECT operation, outcome, count(*) FROM audit_entry"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return _rows(sql + " GROUP BY 1, 2 ORDER BY 1, 2", params)


def exports_by_project(*, project=None):
    """[(project, allowed export rows)] from the ledger."""
    sql = ("SELECT project, count(*) FROM audit_entry WHERE operation = 'export' AND outcome = 'allowed'"
           " AND project <> ''" + (" AND project = %s" if project else "") + " GROUP BY 1 ORDER BY 1")
    return _rows(sql, [project] if project else [])


def ledger_by_day(*, operations, days=CHART_DAYS, project=None):
    """Allowed ledger rows per UTC day for each of `operations`: {"days": [date], "series": {op: [count]}}."""
    first = timezone.now().date() - timedelta(days=days - 1)
    sql = ("SELECT (occurred_at AT TIME ZONE 'UTC')::date, operation, count(*) FROM audit_entry"
           " WHERE occurred_at >= %s::date AND operation = ANY(%s::text[]) AND outcome = 'allowed'"
           + (" AND project = %s" if project else "") + " GROUP BY 1, 2")
    params = [first.isoformat(), list(operations)] + ([project] if project else [])
    day_list = [first + timedelta(days=i) for i in range(days)]
    index = {d: i for i, d in enumerate(day_list)}
    series = {op: [0] * days for op in operations}
    for day, op, count in _rows(sql, params):
        if day in index:
            series[op][index[day]] += count
    return {"days": day_list, "series": series}


def seal_state():
    """The last seal (id, sealed_at, entries covered), entries not yet sealed, and the last verification."""
    last = _rows("SELECT seal_id, sealed_at, to_entry FROM audit_seal ORDER BY seal_id DESC LIMIT 1")
    head = _rows("SELECT coalesce(max(entry_id), 0) FROM audit_entry")[0][0]
    verified = _rows("SELECT occurred_at, outcome FROM audit_entry WHERE operation = 'audit.verify'"
                     " ORDER BY entry_id DESC LIMIT 1")
    now = timezone.now()
    seal_id, sealed_at, to_entry = last[0] if last else (None, None, 0)
    return {
        "seal_id": seal_id, "sealed_at": sealed_at, "unsealed": max(0, head - (to_entry or 0)),
        "seal_age_seconds": (now - sealed_at).total_seconds() if sealed_at else None,
        "seal_age": console_selectors.age(sealed_at, now) if sealed_at else "never",
        "verified_at": verified[0][0] if verified else None,
        "verified_age": console_selectors.age(verified[0][0], now) if verified else "never",
    }


def embedding_coverage(*, project=None):
    """Stored turn messages, how many the lexical follower has given a passage source, and how many carry a vector
    of their project's active embedding generation; `embedded` is None where the database has no vector storage
    (no pgvector)."""
    where, args = (" WHERE scope = %s", [project]) if project else ("", [])
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id"
                       " WHERE o.kind = 'turn'" + (" AND o.scope = %s" if project else ""), args)
        total = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM passage_source" + where, args)
        indexed = cursor.fetchone()[0]
        embedded = None
        if vector_storage_ready():
            cursor.execute(
                "SELECT count(*) FROM passage_vector v JOIN embedding_generation g"
                " ON g.generation_id = v.generation_id AND g.state = 'active'"
                + (" WHERE v.scope = %s" if project else ""), args)
            embedded = cursor.fetchone()[0]
    return {"total": total, "indexed": indexed, "embedded": embedded}


def day_labels(days):
    return [d.strftime("%d %b") if isinstance(d, date) else str(d) for d in days]

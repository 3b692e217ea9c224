"""Operator read-outs of one project's personal data: the subject access export (governance.md §2)
and the refusal summary (console.md §4)."""
import json

from django.db import connection, transaction

from core import audit
from core.errors import DomainError

from .erasure import WALK_ORDER, Selection, parse_selector, read_registry, registered_subject, require_project

EXPORT_LIMIT = 50_000


def _sections(selection, registry, registered):
    """(key, from-and-where SQL over alias t, params, order) for every section, in a fixed order."""
    project = selection.project
    obs_sql, obs_params = selection.observation_filter("t")
    msg_sql, msg_params = selection.observation_filter("o")
    sections = [
        ("observation", f"observation t WHERE {obs_sql}", obs_params, "t.log_offset"),
        ("message", f"turn_message t JOIN observation o ON o.observation_id = t.observation_id WHERE {msg_sql}",
         msg_params, "o.log_offset, t.ordinal"),
    ]
    for key, order in (("fact_evidence", "t.id"), ("entity_name_receipt", "t.id"), ("record_retraction", "t.id"),
                       ("curated_claim", "t.source_observation_id")):
        src_sql, src_params = selection.source_in("t.source_observation_id")
        sections.append((key, f"{key} t WHERE t.scope = %s AND {src_sql}", [project, *src_params], order))
    walked = set()
    for kind in registry:
        walked.add(kind.kind)
        # De-duplicated by id: the IN (…) matches each projection once however often it was registered.
        where, params = selection.registrations("d")
        sections.append((
            kind.kind,
            f"{kind.table} t WHERE t.scope = %s AND t.{kind.column} IN (SELECT d.projection_id::uuid"
            f" FROM projection_dependency d WHERE {where} AND d.projection_kind = %s)",
            [project, *params, kind.kind], f"t.{kind.column}"))
    empty = [key for key in WALK_ORDER if key not in walked]
    if registered is not None:
        sections.append(("data_subject", "data_subject t WHERE t.scope = %s AND t.subject_id = %s",
                         [project, registered], "t.subject_id"))
        sections.append(("subject_retry", "subject_retry t WHERE t.scope = %s AND t.subject_id = %s",
                         [project, registered], "t.id"))
    else:
        empty += ["data_subject", "subject_retry"]
    return sections, empty


def _load(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def export(*, project, data_subject_id=None, source_observation_ids=None, principal, principal_kind):
    """Every row the selection reaches, as raw database rows, from one REPEATABLE READ READ ONLY snapshot.

    Raises Invalid (no_subject / invalid_export) or DomainError 422 export_too_large over 50,000 rows.
    """
    subject, ids = parse_selector(data_subject_id=data_subject_id, source_observation_ids=source_observation_ids,
                                  code="invalid_export")
    require_project(project)
    selection = Selection(project, subject=subject, ids=ids)
    nested = connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        if not nested:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        registry = read_registry(cursor)
        registered = registered_subject(cursor, project, subject, lock=False) if subject is not None else None
        sections, empty = _sections(selection, registry, registered)
        counts = {}
        for key, from_where, params, _order in sections:
            cursor.execute(f"SELECT count(*) FROM {from_where}", params)
            counts[key] = cursor.fetchone()[0]
        total = sum(counts.values())
        if total > EXPORT_LIMIT:
            raise DomainError("export_too_large", "the export holds more than 50000 rows; export by source",
                              status=422)
        out = {key: [] for key in empty}
        for key, from_where, params, order in sections:
            cursor.execute(f"SELECT to_jsonb(t.*) FROM {from_where} ORDER BY {order}", params)
            out[key] = [_load(row[0]) for row in cursor.fetchall()]
    audit.record_best_effort(op="export", principal=principal, principal_kind=principal_kind, project=project,
                             magnitude=total)
    result = {
        "scope": project,
        "data_subject_id": subject or "",
        "sections": dict(sorted(out.items())),
        "rows": {key: len(rows) for key, rows in sorted(out.items())},
    }
    if ids:
        result["source_observation_ids"] = ids
    return result


def refusal_summary(*, project, limit=100):
    """Counts of refusals by (reason, predicate), largest first."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reason, predicate, count(*) FROM rejected_claim WHERE scope = %s GROUP BY reason, predicate"
            " ORDER BY count(*) DESC, reason, predicate LIMIT %s", [project, limit])
        return [{"reason": r, "predicate": p, "count": n} for r, p, n in cursor.fetchall()]

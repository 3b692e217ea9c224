"""Erasure (governance.md §1): the registry-driven removal of a selection and its receipt.

`remove_selection` is the shared walk; the retention sweep (governance/retention.py) reuses it.
"""
import json
import logging
import re
from dataclasses import dataclass

from django.db import connection, transaction
from psycopg import sql as pgsql

from core import audit
from core.encoding import format_ts
from core.errors import DomainError, Invalid, NotFound
from core.limits import MAX_SUBJECT_BYTES
from core.retry import DEADLOCK, SERIALIZATION, run_retrying
from core.strings import canonical_uuid, has_nul, is_blank, utf8_len
from memory import lexeme_counts
from memory.services import recompute_watermark

from .models import Project

logger = logging.getLogger(__name__)

MAX_SOURCE_IDS = 10_000
MAX_REASON_BYTES = 1_024
# Dependents first: a row is removed before anything it points at (governance.md §1.2 step 5).
WALK_ORDER = ("feedback", "fact_history", "segment", "agent_artifact", "rejected_claim", "fact", "entity")
SOURCE_KEYS = ("entity_name_receipt", "record_retraction", "curated_claim", "message", "fact_evidence", "observation")
_IDENT = re.compile(r"^[a-z][a-z0-9_]*$")
# A registry kind whose id column is this is keyed by its source observation (passage sources and vectors):
# the selection reaches it directly, with no projection_dependency row per message.
SOURCE_KEYED_COLUMN = "source_id"
# A kind whose id column is this holds an array of the observations its row was derived from (entity vectors:
# an entity's names and quotes come from many messages); any one of them selected reaches the row.
SOURCES_KEYED_COLUMN = "source_ids"
# Derived from the message but carried inside another kind's row: counted beside it in the receipt.
CARRIED = {"passage_source": "passage_tsvector"}
# Deleting from this table moves the project's lexeme counts (memory/lexeme_counts.py), a kind of its own.
LEXEME_COUNTED = "passage_source"
LEXEME_COUNT_KIND = "passage_lexeme_count"


@dataclass(frozen=True)
class Kind:
    kind: str
    table: str
    column: str
    survives_sharing: bool


class Selection:
    """The observations an erasure or retention pass removes, expressed as SQL fragments.

    A subject selection is re-evaluated by every statement (READ COMMITTED), never cached as a list.
    """

    def __init__(self, project, *, subject=None, ids=None):
        self.project = project
        self.subject = subject
        self.ids = list(ids) if ids is not None else None

    def observation_filter(self, alias):
        if self.subject is not None:
            return f"{alias}.scope = %s AND {alias}.data_subject_id = %s", [self.project, self.subject]
        return f"{alias}.scope = %s AND {alias}.observation_id = ANY(%s::uuid[])", [self.project, self.ids]

    def source_in(self, column):
        """`column` names an observation of the selection; callers also filter their own table on scope."""
        if self.subject is not None:
            return (f"{column} IN (SELECT so.observation_id FROM observation so"
                    " WHERE so.scope = %s AND so.data_subject_id = %s)"), [self.project, self.subject]
        return f"{column} = ANY(%s::uuid[])", [self.ids]

    def selected_or_locked(self, column, locked):
        """`column` names an observation of the selection now, or one locked at the start (which were this
        project's); for residuals after the delete. Scoped without help from the caller's table."""
        sql, params = self.observation_filter("so")
        # One array, so the count is an index scan rather than an OR over two sets.
        return (f"{column} = ANY(%s::uuid[] || ARRAY(SELECT so.observation_id FROM observation so"
                f" WHERE {sql}))"), [locked, *params]

    def registrations(self, alias):
        """Registrations made by the selection."""
        if self.subject is not None:
            return f"{alias}.scope = %s AND {alias}.data_subject_id = %s", [self.project, self.subject]
        return f"{alias}.scope = %s AND {alias}.source_observation_id = ANY(%s::uuid[])", [self.project, self.ids]

    def outside(self, alias):
        """A registration made from outside the selection (a NULL-subject one counts as outside)."""
        if self.subject is not None:
            return f"{alias}.data_subject_id IS DISTINCT FROM %s", [self.subject]
        return f"{alias}.source_observation_id <> ALL(%s::uuid[])", [self.ids]

    def projection_ids(self, kind, survives_sharing):
        """S for one kind: the uuids the selection registered (governance.md §1.2 step 5)."""
        where, params = self.registrations("d")
        sql = f"SELECT d.projection_id::uuid FROM projection_dependency d WHERE {where} AND d.projection_kind = %s"
        params = [*params, kind]
        if survives_sharing:
            outside, outside_params = self.outside("x")
            sql += (" AND NOT EXISTS (SELECT 1 FROM projection_dependency x WHERE x.scope = d.scope"
                    " AND x.projection_kind = d.projection_kind AND x.projection_id = d.projection_id"
                    f" AND {outside})")
            params += outside_params
        return sql, params


def parse_selector(*, data_subject_id, source_observation_ids, code):
    """(subject, ids): exactly one is set. Raises Invalid("no_subject") or Invalid(code)."""
    subject = data_subject_id
    if subject is not None and (not isinstance(subject, str) or is_blank(subject)):
        if not isinstance(subject, str):
            raise Invalid(code, "data_subject_id is a string")
        subject = None
    ids = source_observation_ids
    if ids is not None and not isinstance(ids, (list, tuple)):
        raise Invalid(code, "source_observation_ids is a list of UUIDs")
    if not ids:
        ids = None
    if subject is None and ids is None:
        raise Invalid("no_subject", "name a data_subject_id or source_observation_ids")
    if subject is not None and ids is not None:
        raise Invalid(code, "name exactly one of data_subject_id and source_observation_ids")
    if subject is not None:
        if has_nul(subject) or utf8_len(subject) > MAX_SUBJECT_BYTES:
            raise Invalid(code, "data_subject_id is at most 1024 bytes with no NUL")
        return subject, None
    if len(ids) > MAX_SOURCE_IDS:
        raise Invalid(code, "at most 10000 source observation ids")
    cleaned = []
    for value in ids:
        uid = canonical_uuid(value)
        if uid is None:
            raise Invalid(code, "every source observation id is a UUID")
        cleaned.append(uid)
    return None, list(dict.fromkeys(cleaned))


def require_project(project):
    if not Project.objects.filter(name=project).exists():
        raise NotFound("not_found", "no such project")


def read_registry(cursor):
    """The registry, read fresh in the caller's transaction; refuses (500) when empty or malformed."""
    cursor.execute("SELECT kind, projection_table, id_column, survives_sharing FROM projection_kind"
                   " WHERE id_column <> ALL(%s)", [[SOURCE_KEYED_COLUMN, SOURCES_KEYED_COLUMN]])
    rows = cursor.fetchall()
    if not rows:
        raise DomainError("internal", "the erasure registry is empty", status=500)
    kinds = {}
    for kind, table, column, survives in rows:
        if not (_IDENT.match(table) and _IDENT.match(column)):
            raise DomainError("internal", "the erasure registry names an invalid table or column", status=500)
        kinds[kind] = Kind(kind, table, column, bool(survives))
    # Kinds added later by a migration go before the known ones: they depend on facts and entities.
    extra = sorted(k for k in kinds if k not in WALK_ORDER)
    return [kinds[k] for k in extra] + [kinds[k] for k in WALK_ORDER if k in kinds]


def read_source_kinds(cursor):
    """The source-keyed kinds whose table exists here (passage_vector needs pgvector), dependents first."""
    cursor.execute("SELECT kind, projection_table, to_regclass(projection_table) IS NOT NULL FROM projection_kind"
                   " WHERE id_column = %s ORDER BY kind DESC", [SOURCE_KEYED_COLUMN])
    kinds = []
    for kind, table, exists in cursor.fetchall():
        if not _IDENT.match(table):
            raise DomainError("internal", "the erasure registry names an invalid table", status=500)
        kinds.append((kind, table, exists))
    return kinds


def _remove_source_keyed(cursor, selection, locked, deleted, residual):
    """Passage vectors, then passage sources (with their tsvectors), of the selection's observations."""
    project = selection.project
    for kind, table, exists in read_source_kinds(cursor):
        carried = CARRIED.get(kind)
        if not exists:
            deleted[kind] = residual[kind] = 0
            if carried:
                deleted[carried] = residual[carried] = 0
            continue
        t_sql, t_params = selection.source_in("t.source_id")
        counted = table == LEXEME_COUNTED
        cursor.execute(_sql("DELETE FROM {table} t WHERE t.scope = %s AND {where}{returning}", table=table, where=t_sql,
                            returning=" RETURNING tsvector_to_array(t.lexemes)" if counted else ""),
                       [project, *t_params])
        deleted[kind] = cursor.rowcount
        erased_lexemes = {lexeme for row in cursor.fetchall() for lexeme in row[0]} if counted else set()
        if carried:
            deleted[carried] = cursor.rowcount  # one tsvector per source row
        r_sql, r_params = selection.selected_or_locked("t.source_id", locked)
        residual[kind] = _count(cursor, _sql("SELECT count(*) FROM {table} t WHERE {where}", table=table, where=r_sql),
                                r_params)
        if carried:
            residual[carried] = residual[kind]
        if counted:
            # The delete's trigger wrote negative counts; folded now, a word only the selection used leaves no
            # count behind (not even its digest).
            deleted[LEXEME_COUNT_KIND] = lexeme_counts.fold(cursor, project=project)
            residual[LEXEME_COUNT_KIND] = lexeme_counts.held_nowhere(cursor, project=project, lexemes=erased_lexemes)


def _remove_sources_keyed(cursor, selection, locked, deleted, residual):
    """Rows derived from several observations (entity vectors), when any of them is selected. Runs before the
    walk: an entity the walk deletes would otherwise take its vectors along uncounted."""
    project = selection.project
    cursor.execute("SELECT kind, projection_table, to_regclass(projection_table) IS NOT NULL FROM projection_kind"
                   " WHERE id_column = %s ORDER BY kind", [SOURCES_KEYED_COLUMN])
    for kind, table, exists in cursor.fetchall():
        if not _IDENT.match(table):
            raise DomainError("internal", "the erasure registry names an invalid table", status=500)
        if not exists:
            deleted[kind] = residual[kind] = 0
            continue
        o_sql, o_params = selection.observation_filter("so")
        chosen = f"ARRAY(SELECT so.observation_id FROM observation so WHERE {o_sql})"
        cursor.execute(_sql("DELETE FROM {table} t WHERE t.scope = %s AND t.source_ids && {chosen}", table=table,
                            chosen=chosen), [project, *o_params])
        deleted[kind] = cursor.rowcount
        residual[kind] = _count(
            cursor, _sql("SELECT count(*) FROM {table} t WHERE t.scope = %s AND t.source_ids && (%s::uuid[] || {chosen})",
                         table=table, chosen=chosen),
            [project, locked, *o_params])


def registered_subject(cursor, project, subject, *, lock):
    """The data_subject row a subject selector names, or None. Subject ids are compared as their text form."""
    if canonical_uuid(subject) != subject:
        return None  # only the lowercase uuid text can equal subject_id::text
    cursor.execute(
        "SELECT subject_id FROM data_subject WHERE scope = %s AND subject_id = %s::uuid AND subject_id::text = %s"
        + (" FOR UPDATE" if lock else ""),
        [project, subject, subject],
    )
    row = cursor.fetchone()
    return row[0] if row else None


_IDENTIFIER_FIELDS = ("table", "column")


def _sql(template, **parts):
    """A statement composed with psycopg.sql: `table` and `column` (names read from the erasure registry) are
    quoted as identifiers, every other part is trusted SQL text built in this module (fragments with their own
    placeholders)."""
    return pgsql.SQL(template).format(**{
        name: pgsql.Identifier(value) if name in _IDENTIFIER_FIELDS else pgsql.SQL(value) for name, value in parts.items()})


def _count(cursor, sql, params):
    cursor.execute(sql, params)
    return cursor.fetchone()[0]


def _walk(cursor, selection, registry, deleted, residual):
    project = selection.project
    walked = set()
    for kind in registry:
        walked.add(kind.kind)
        s_sql, s_params = selection.projection_ids(kind.kind, kind.survives_sharing)
        cursor.execute(_sql("DELETE FROM {table} WHERE scope = %s AND {column} IN ({selected})", table=kind.table,
                            column=kind.column, selected=s_sql), [project, *s_params])
        deleted[kind.kind] = cursor.rowcount
        # The same S, evaluated again: a row the selector still reaches has survived.
        residual[kind.kind] = _count(
            cursor, _sql("SELECT count(*) FROM {table} WHERE scope = %s AND {column} IN ({selected})",
                         table=kind.table, column=kind.column, selected=s_sql),
            [project, *s_params])
    for kind in WALK_ORDER:
        if kind in walked:
            continue
        # A known kind missing from the registry cannot be deleted; whatever the selection registered survives.
        where, params = selection.registrations("d")
        deleted[kind] = 0
        residual[kind] = _count(
            cursor, f"SELECT count(DISTINCT d.projection_id) FROM projection_dependency d WHERE {where}"
            " AND d.projection_kind = %s", [*params, kind])


def _refresh_entities(cursor, project, touched):
    """Rebuild aliases (and, if erased, the canonical spelling) from the remaining name receipts."""
    cursor.execute("SELECT entity_id FROM entity WHERE scope = %s AND entity_id = ANY(%s::uuid[])"
                   " ORDER BY entity_id FOR UPDATE", [project, touched])
    alive = [row[0] for row in cursor.fetchall()]
    if not alive:
        return
    cursor.execute(
        "WITH remaining AS ("
        "  SELECT r.entity_id, r.name, min(r.id) AS first_id FROM entity_name_receipt r"
        "  WHERE r.scope = %s AND r.entity_id = ANY(%s::uuid[]) GROUP BY r.entity_id, r.name),"
        " rebuilt AS ("
        "  SELECT e.entity_id, CASE WHEN EXISTS (SELECT 1 FROM remaining m WHERE m.entity_id = e.entity_id"
        "    AND m.name = e.canonical_name) THEN e.canonical_name"
        "   ELSE coalesce((SELECT m.name FROM remaining m WHERE m.entity_id = e.entity_id ORDER BY m.first_id"
        "    LIMIT 1), e.normalized_name) END AS canonical"
        "  FROM entity e WHERE e.scope = %s AND e.entity_id = ANY(%s::uuid[]))"
        " UPDATE entity e SET canonical_name = b.canonical,"
        "  aliases = coalesce((SELECT array_agg(m.name ORDER BY m.name) FROM remaining m"
        "   WHERE m.entity_id = e.entity_id AND m.name <> b.canonical), '{}')"
        " FROM rebuilt b WHERE e.entity_id = b.entity_id",
        [project, alive, project, alive],
    )


def remove_selection(cursor, selection, registry, locked):
    """Steps 4–9 and 11 of governance.md §1.2: everything the selection produced, then the selection.

    Returns (deleted, residual). The caller holds the transaction and the locks.
    """
    project = selection.project
    deleted, residual = {}, {}

    ev_sql, ev_params = selection.source_in("ev.source_observation_id")
    deleted["fact_evidence"] = _count(
        cursor, f"SELECT count(*) FROM fact_evidence ev WHERE ev.scope = %s AND {ev_sql}", [project, *ev_params])
    rc_sql, rc_params = selection.source_in("r.source_observation_id")
    deleted["entity_name_receipt"] = _count(
        cursor, f"SELECT count(*) FROM entity_name_receipt r WHERE r.scope = %s AND {rc_sql}", [project, *rc_params])

    _remove_sources_keyed(cursor, selection, locked, deleted, residual)
    _walk(cursor, selection, registry, deleted, residual)

    # Shared entities survive; the selection's spellings do not.
    cursor.execute(f"DELETE FROM entity_name_receipt r WHERE r.scope = %s AND {rc_sql} RETURNING r.entity_id",
                   [project, *rc_params])
    touched = sorted({str(row[0]) for row in cursor.fetchall()})
    if touched:
        _refresh_entities(cursor, project, touched)
    residual["entity_name_receipt"] = _count(
        cursor, f"SELECT count(*) FROM entity_name_receipt r WHERE r.scope = %s AND {rc_sql}", [project, *rc_params])

    # Evidence guard: nothing may keep pointing at a source that is about to go.
    cursor.execute(f"DELETE FROM fact_evidence ev WHERE ev.scope = %s AND {ev_sql}", [project, *ev_params])
    if cursor.rowcount:
        deleted["fact_evidence_orphaned"] = cursor.rowcount

    for key, table in (("record_retraction", "record_retraction"), ("curated_claim", "curated_claim")):
        t_sql, t_params = selection.source_in("t.source_observation_id")
        cursor.execute(_sql("DELETE FROM {table} t WHERE t.scope = %s AND {where}", table=table, where=t_sql),
                       [project, *t_params])
        deleted[key] = cursor.rowcount
        residual[key] = _count(cursor, _sql("SELECT count(*) FROM {table} t WHERE t.scope = %s AND {where}",
                                            table=table, where=t_sql), [project, *t_params])

    _remove_source_keyed(cursor, selection, locked, deleted, residual)
    _delete_observations(cursor, selection, deleted)

    for key, table, column in (("message", "turn_message m", "m.observation_id"),
                               ("fact_evidence", "fact_evidence ev", "ev.source_observation_id"),
                               ("observation", "observation o", "o.observation_id")):
        sql, params = selection.selected_or_locked(column, locked)
        residual[key] = _count(cursor, f"SELECT count(*) FROM {table} WHERE {sql}", params)
    return deleted, residual


def _delete_observations(cursor, selection, deleted):
    """Step 9: the observations last, counting what their database cascades take with them."""
    project = selection.project
    src_sql, src_params = selection.source_in("f.supersession_source_id")
    cascaded = f"SELECT f.fact_id FROM fact f WHERE f.scope = %s AND {src_sql}"
    c_params = [project, *src_params]
    deleted["fact"] = deleted.get("fact", 0) + _count(cursor, f"SELECT count(*) FROM ({cascaded}) c", c_params)
    deleted["fact_evidence"] += _count(
        cursor, f"SELECT count(*) FROM fact_evidence ev WHERE ev.fact_id IN ({cascaded})", c_params)
    deleted["feedback"] = deleted.get("feedback", 0) + _count(
        cursor, f"SELECT count(*) FROM memory_feedback fb WHERE fb.target_fact_id IN ({cascaded})", c_params)
    h_sql, h_params = selection.source_in("h.source_observation_id")
    deleted["fact_history"] = deleted.get("fact_history", 0) + _count(
        cursor, f"SELECT count(*) FROM fact_history h WHERE h.scope = %s AND ({h_sql} OR h.fact_id IN ({cascaded}))",
        [project, *h_params, *c_params])
    a_sql, a_params = selection.source_in("a.source_observation_id")
    deleted["agent_artifact"] = deleted.get("agent_artifact", 0) + _count(
        cursor, f"SELECT count(*) FROM agent_artifact a WHERE a.scope = %s AND {a_sql}", [project, *a_params])
    o_sql, o_params = selection.observation_filter("o")
    deleted["message"] = _count(
        cursor, f"SELECT count(*) FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id"
        f" WHERE {o_sql}", o_params)
    cursor.execute(f"DELETE FROM observation o WHERE {o_sql}", o_params)
    deleted["observation"] = cursor.rowcount


def _receipt(request_id, project, subject, ids, completed_at, deleted, residual):
    receipt = {
        "request_id": str(request_id),
        "scope": project,
        "data_subject_id": subject or "",
        "completed_at": format_ts(completed_at),
        "deleted": deleted,
        "residual": residual,
        "clean": all(v == 0 for v in residual.values()),
    }
    if ids:
        receipt["source_observation_ids"] = ids
    return receipt


def _ordered(counts):
    return dict(sorted(counts.items()))


def _erase_once(project, subject, ids, reason, principal, principal_kind):
    selection = Selection(project, subject=subject, ids=ids)
    with transaction.atomic(), connection.cursor() as cursor:
        registered = registered_subject(cursor, project, subject, lock=True) if subject is not None else None
        where, params = selection.observation_filter("o")
        cursor.execute(f"SELECT o.observation_id FROM observation o WHERE {where} ORDER BY o.observation_id"
                       " FOR UPDATE", params)
        locked = [str(row[0]) for row in cursor.fetchall()]
        registry = read_registry(cursor)
        selector = {"data_subject_id": subject} if subject is not None else {"source_observation_ids": ids}
        cursor.execute(
            "INSERT INTO erasure_request (request_id, scope, selector, reason, principal, principal_kind, requested_at)"
            " VALUES (gen_random_uuid(), %s, %s::jsonb, %s, %s, %s, clock_timestamp()) RETURNING request_id",
            [project, json.dumps(selector), reason, principal, principal_kind])
        request_id = cursor.fetchone()[0]

        deleted, residual = remove_selection(cursor, selection, registry, locked)

        if subject is not None:
            deleted["data_subject"] = 0
            if registered is not None:
                # Its trigger turns the subject's retry keys into tombstones.
                cursor.execute("DELETE FROM data_subject WHERE scope = %s AND subject_id = %s",
                               [project, registered])
                deleted["data_subject"] = cursor.rowcount
            residual["data_subject"] = 0 if registered_subject(cursor, project, subject, lock=False) is None else 1

        recompute_watermark(cursor, project)
        deleted, residual = _ordered(deleted), _ordered(residual)
        cursor.execute(
            "UPDATE erasure_request SET completed_at = clock_timestamp(), deleted = %s::jsonb, residual = %s::jsonb"
            " WHERE request_id = %s RETURNING completed_at",
            [json.dumps(deleted), json.dumps(residual), request_id])
        completed_at = cursor.fetchone()[0]
        magnitude = sum(v for k, v in deleted.items() if k != "fact_evidence_orphaned")
        transaction.on_commit(lambda: audit.record_best_effort(op="erase", principal=principal,
                                                               principal_kind=principal_kind, project=project,
                                                               magnitude=magnitude))
    receipt = _receipt(request_id, project, subject, ids, completed_at, deleted, residual)
    if not receipt["clean"]:
        logger.warning("erasure %s in %s left residual rows", request_id, project)
    return receipt


def erase(*, project, data_subject_id=None, source_observation_ids=None, reason="", principal, principal_kind):
    """Erase a data subject or a list of sources and return the receipt (governance.md §1.4).

    One READ COMMITTED transaction; the `erase` ledger row is written best effort after commit.
    """
    subject, ids = parse_selector(data_subject_id=data_subject_id, source_observation_ids=source_observation_ids,
                                  code="invalid_erasure")
    reason = reason or ""
    if not isinstance(reason, str) or has_nul(reason) or utf8_len(reason) > MAX_REASON_BYTES:
        raise Invalid("invalid_erasure", "reason is at most 1024 bytes")
    require_project(project)
    # Nothing was kept by a run that lost a lock conflict, so the whole erasure reruns.
    return run_retrying(lambda: _erase_once(project, subject, ids, reason, principal, principal_kind),
                        what="erasure", sqlstates=(DEADLOCK, SERIALIZATION))


def list_erasures(*, project, limit=100):
    """The project's erasure receipts, newest first (the selector's kind only, never its value)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT request_id, selector->'data_subject_id' IS NOT NULL, requested_at, completed_at, residual FROM erasure_request"
            " WHERE scope = %s ORDER BY requested_at DESC, request_id DESC LIMIT %s", [project, limit])
        rows = cursor.fetchall()
    items = []
    for request_id, by_subject, requested_at, completed_at, residual in rows:
        if isinstance(residual, str):
            residual = json.loads(residual)
        items.append({
            "request_id": str(request_id),
            "selector": "data_subject_id" if by_subject else "source_observation_ids",
            "requested_at": format_ts(requested_at),
            "completed_at": format_ts(completed_at),
            "clean": None if residual is None else all(v == 0 for v in residual.values()),
        })
    return items

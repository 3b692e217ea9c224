"""Memory reads: freshness and the inspection reads (recall.md §10): citations, messages, records and
entities, each in one REPEATABLE READ READ ONLY snapshot."""
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection, transaction

from core.encoding import format_float32, format_range, format_ts
from core.errors import Conflict, Invalid, NotFound

from .evidence import CONTEXT_WINDOW, legible


@dataclass(frozen=True)
class Freshness:
    scope: str
    stored: int | None
    formed: int | None
    parked: int
    rebuilding: dict | None = None  # present only while an extractor rebuild runs (formation/rebuild.py)

    def as_dict(self):
        out = {"scope": self.scope, "stored": self.stored, "formed": self.formed, "parked": self.parked}
        if self.rebuilding is not None:
            out["rebuilding"] = self.rebuilding
        return out


def freshness(*, project):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT w.log_offset, w.formed_offset,"
            " (SELECT count(*) FROM observation o WHERE o.scope = %s AND o.parked_at IS NOT NULL),"
            " j.job_id IS NOT NULL, j.reinterpreted_through, j.reinterpreting_through, j.sources_acknowledged,"
            " j.sources_skipped"
            " FROM (SELECT 1) one LEFT JOIN watermark w ON w.scope = %s"
            " LEFT JOIN formation_rebuild j ON j.scope = %s AND j.state = 'running'",
            [project, project, project],
        )
        stored, formed, parked, running, *job = cursor.fetchone()
    # Offsets and counts of a running extractor rebuild (formation/rebuild.py); absent otherwise.
    rebuilding = dict(zip(("reinterpreted_through", "reinterpreting_through", "sources_acknowledged",
                           "sources_skipped"), job)) if running else None
    return Freshness(scope=project, stored=stored, formed=formed, parked=parked, rebuilding=rebuilding)


# ---------------------------------------------------------------------------
# The inspection reads (recall.md §10, api.md §7.3–§7.6). Each runs in one REPEATABLE READ READ ONLY
# snapshot, so a page never mixes rows from before and after a concurrent write.

CITATION_DEFAULT_LIMIT = 8
CITATION_MAX_LIMIT = 32
CITATION_PAGE_BYTES = 262_144  # cumulative quote + context bytes on one page
PREVIEW_CHARS = 512
MESSAGE_DEFAULT_LIMIT = 4096


class CitationIntegrityError(RuntimeError):
    """Stored evidence no longer matches its message bytes: a 500, never a partial answer."""


@contextmanager
def read_snapshot():
    """A cursor in a REPEATABLE READ READ ONLY transaction.

    Inside a caller's transaction (a test's, or a composed read) that transaction is the snapshot:
    PostgreSQL only accepts SET TRANSACTION as a transaction's first statement.
    """
    if connection.in_atomic_block:
        with connection.cursor() as cursor:
            yield cursor
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield cursor


def _status_sql(alias="f"):
    # First matching rule wins (api.md §7.3): retraction row, then closed knowledge, then closed validity.
    return (
        f"CASE WHEN EXISTS (SELECT 1 FROM record_retraction r WHERE r.scope = {alias}.scope"
        f" AND r.target_fact_id = {alias}.fact_id) THEN 'retracted'"
        f" WHEN NOT upper_inf({alias}.known) THEN 'knowledge_closed'"
        f" WHEN NOT upper_inf({alias}.valid) THEN 'validity_closed' ELSE 'current' END"
    )


_LIVE_FACT = "(f.retention_until IS NULL OR f.retention_until > now())"


def _str_or_none(value):
    return None if value is None else str(value)


def _retraction(cursor, project, fact_id):
    """The retraction object of a fact, or None. One row per supporting message; they share an operation."""
    cursor.execute(
        "SELECT operation_id, principal_id, retracted_at, replacement_observation_id, replacement_fact_id"
        " FROM record_retraction WHERE scope = %s AND target_fact_id = %s ORDER BY retracted_at, id LIMIT 1",
        [project, fact_id],
    )
    row = cursor.fetchone()
    if row is None:
        return None
    operation_id, principal_id, retracted_at, replacement_observation, replacement_fact = row
    out = {"operation_id": str(operation_id), "principal_id": principal_id, "retracted_at": format_ts(retracted_at)}
    if replacement_observation is not None:
        out["replacement_source_observation_id"] = str(replacement_observation)
    if replacement_fact is not None:
        out["replacement_record_id"] = str(replacement_fact)
    return out


def resolve_citation(*, project, fact_id, limit=CITATION_DEFAULT_LIMIT, after=None):
    """A fact with one keyset page of its evidence, every quote re-verified against its message bytes.

    `after` is None or (source_observation_id, source_ordinal, byte_start). Raises NotFound for an
    unknown, foreign, expired or evidence-less fact, Invalid("citation_limit", status=422) when the
    first item alone exceeds the page cap, and CitationIntegrityError when a quote does not match.
    """
    with read_snapshot() as cursor:
        cursor.execute(
            "SELECT f.version, f.fact_id, f.superseded_by_id, f.supersession_source_id, f.subject_entity_id,"
            " f.object_entity_id, f.predicate, f.statement, f.confidence, f.source_role, f.recorded_at,"
            f" f.valid, f.known, {_status_sql()}"
            " FROM fact f WHERE f.scope = %s AND f.fact_id = %s AND " + _LIVE_FACT +
            " AND EXISTS (SELECT 1 FROM fact_evidence e WHERE e.scope = f.scope AND e.fact_id = f.fact_id)",
            [project, fact_id],
        )
        row = cursor.fetchone()
        if row is None:
            raise NotFound()
        (version, fid, superseded_by, supersession_source, subject_id, object_id, predicate, statement,
         confidence, source_role, recorded_at, valid, known, status) = row
        out = {"version": str(version)}
        retraction = _retraction(cursor, project, fact_id)
        if retraction is not None:
            out["retraction"] = retraction
        out["id"] = str(fid)
        if superseded_by is not None:
            out["superseded_by"] = str(superseded_by)
        if supersession_source is not None:
            out["supersession_source_observation_id"] = str(supersession_source)
        out.update({
            "scope": project,
            "subject_entity_id": _str_or_none(subject_id),
            "object_entity_id": _str_or_none(object_id),
            "predicate": predicate,
            "statement": statement,
            "confidence": format_float32(confidence),
            "source_role": source_role,
            "recorded_at": format_ts(recorded_at),
            "valid": format_range(valid),
            "known": format_range(known),
            "status": status,
        })
        keyset, params = "", [CONTEXT_WINDOW, CONTEXT_WINDOW, CONTEXT_WINDOW, CONTEXT_WINDOW, project, fact_id]
        if after is not None:
            keyset = " AND (e.source_observation_id, e.source_ordinal, e.byte_start) > (%s::uuid, %s, %s)"
            params += list(after)
        cursor.execute(
            "SELECT e.source_observation_id, e.source_ordinal, e.byte_start, e.byte_end, e.quote,"
            " e.extractor_version, e.authored_by, o.log_offset, m.role, m.occurred_at, octet_length(m.content),"
            " substring(convert_to(m.content, 'UTF8') FROM e.byte_start + 1 FOR e.byte_end - e.byte_start),"
            " substring(convert_to(m.content, 'UTF8') FROM greatest(0, e.byte_start - %s) + 1"
            "  FOR least(octet_length(m.content), e.byte_end + %s) - greatest(0, e.byte_start - %s)),"
            " greatest(0, e.byte_start - %s)"
            " FROM fact_evidence e"
            " LEFT JOIN observation o ON o.observation_id = e.source_observation_id AND o.scope = e.scope"
            " LEFT JOIN turn_message m ON m.observation_id = e.source_observation_id AND m.ordinal = e.source_ordinal"
            " WHERE e.scope = %s AND e.fact_id = %s" + keyset +
            " ORDER BY e.source_observation_id, e.source_ordinal, e.byte_start LIMIT %s",
            params + [limit + 1],
        )
        rows = cursor.fetchall()
    evidence, spent, stopped = [], 0, False
    for row in rows[:limit]:
        item, cost = _citation_evidence(row)
        if spent + cost > CITATION_PAGE_BYTES:
            if not evidence:
                raise Invalid("citation_limit", status=422)
            stopped = True
            break
        evidence.append(item)
        spent += cost
    out["evidence"] = evidence
    if stopped or len(rows) > limit:
        last = evidence[-1]
        out["next"] = {"source_observation_id": last["source_observation_id"],
                       "source_ordinal": last["source_ordinal"], "byte_start": last["byte_start"]}
    return out


def _citation_evidence(row):
    (observation_id, ordinal, byte_start, byte_end, quote, extractor_version, authored_by, log_offset, role,
     occurred_at, message_bytes, actual, window, window_start) = row
    quote_bytes = quote.encode("utf-8")
    if message_bytes is None or log_offset is None or actual is None or bytes(actual) != quote_bytes:
        raise CitationIntegrityError("citation evidence does not match its source message")
    context, context_start, complete = legible(bytes(window), window_start, byte_start, byte_end, message_bytes)
    context_bytes = len(context.encode("utf-8"))
    item = {}
    if authored_by is not None:
        item["authored_by"] = authored_by
    item.update({
        "source_observation_id": str(observation_id),
        "source_ordinal": ordinal,
        "log_offset": log_offset,
        "role": role,
        "occurred_at": format_ts(occurred_at),
        "quote": quote,
        "byte_start": byte_start,
        "byte_end": byte_end,
        "extractor_version": extractor_version,
        "context": context,
        "context_byte_start": context_start,
        "context_byte_end": context_start + context_bytes,
        "context_complete": complete,
    })
    return item, len(quote_bytes) + context_bytes


def get_message(*, project, chunk_id, byte_start=0, byte_limit=MESSAGE_DEFAULT_LIMIT, expected_digest=None):
    """A byte window of one stored message, never splitting a UTF-8 character.

    Raises NotFound, Conflict("source_changed") on a digest mismatch, and
    Invalid("invalid_message_window") when byte_start is past the end or inside a character.
    """
    with read_snapshot() as cursor:
        cursor.execute(
            "SELECT m.chunk_id, m.observation_id, m.ordinal, m.role, m.occurred_at, octet_length(m.content),"
            " encode(sha256(convert_to(m.content, 'UTF8')), 'hex'),"
            " substring(convert_to(m.content, 'UTF8') FROM %s + 1 FOR %s)"
            " FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id"
            " WHERE o.scope = %s AND m.chunk_id = %s",
            [byte_start, byte_limit, project, chunk_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise NotFound()
    chunk, source_id, ordinal, role, occurred_at, message_bytes, digest, window = row
    if expected_digest and expected_digest != digest:
        raise Conflict("source_changed")
    window = bytes(window or b"")
    # A byte of the form 10xxxxxx continues a character: the start would split it.
    if byte_start > message_bytes or (window and window[0] & 0xC0 == 0x80):
        raise Invalid("invalid_message_window")
    text = _decode_cut_tail(window)
    byte_end = byte_start + len(text.encode("utf-8"))
    out = {
        "chunk_id": str(chunk),
        "source_id": str(source_id),
        "ordinal": ordinal,
        "role": role,
        "occurred_at": format_ts(occurred_at),
        "content_digest": digest,
        "message_bytes": message_bytes,
        "byte_start": byte_start,
        "byte_end": byte_end,
        "text": text,
        "complete": byte_start == 0 and byte_end == message_bytes,
    }
    if byte_end < message_bytes:
        out["next_byte_start"] = byte_end
    return out


def _decode_cut_tail(data):
    """Decode bytes that start on a character boundary, dropping a character the window's end split."""
    for drop in range(4):
        try:
            return data[: len(data) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    raise CitationIntegrityError("stored message bytes are not UTF-8")


def list_records(*, project, data_subject_id=None, limit=20, after=None):
    """Facts in fact-id order after the `after` id; with a subject, only facts registered for it."""
    params = [project]
    where = ""
    if after is not None:
        where += " AND f.fact_id > %s"
        params.append(after)
    if data_subject_id is not None:
        # EXISTS, not a join: a fact registered by several of the subject's turns appears once.
        where += (" AND EXISTS (SELECT 1 FROM projection_dependency d WHERE d.scope = f.scope"
                  " AND d.projection_kind = 'fact' AND d.fact_ref = f.fact_id AND d.data_subject_id = %s)")
        params.append(data_subject_id)
    with read_snapshot() as cursor:
        cursor.execute(
            "SELECT f.version, f.fact_id, f.subject_entity_id, f.object_entity_id, f.predicate,"
            " left(f.statement, %s), octet_length(f.statement), char_length(f.statement) > %s,"
            f" f.source_role, f.recorded_at, {_status_sql()}"
            " FROM fact f WHERE f.scope = %s AND " + _LIVE_FACT + where +
            " ORDER BY f.fact_id LIMIT %s",
            [PREVIEW_CHARS, PREVIEW_CHARS] + params + [limit + 1],
        )
        rows = cursor.fetchall()
    records = [
        {
            "version": str(version),
            "id": str(fid),
            "subject_entity_id": _str_or_none(subject_id),
            "object_entity_id": _str_or_none(object_id),
            "predicate": predicate,
            "statement_preview": preview,
            "statement_bytes": statement_bytes,
            "preview_truncated": truncated,
            "source_role": source_role,
            "recorded_at": format_ts(recorded_at),
            "status": status,
        }
        for (version, fid, subject_id, object_id, predicate, preview, statement_bytes, truncated, source_role,
             recorded_at, status) in rows[:limit]
    ]
    out = {"records": records}
    if len(rows) > limit:
        out["next"] = {"id": records[-1]["id"]}
    return out


def record_history(*, project, fact_id, limit=20, before=None):
    """A fact's current intervals and its archived ones, newest first by (upper(known), history_id).

    `before` is None or (known_until datetime, history_id). Raises NotFound.
    """
    with read_snapshot() as cursor:
        cursor.execute(
            "SELECT f.version, f.fact_id, f.valid, f.known FROM fact f"
            " WHERE f.scope = %s AND f.fact_id = %s AND " + _LIVE_FACT,
            [project, fact_id],
        )
        row = cursor.fetchone()
        if row is None:
            raise NotFound()
        version, fid, valid, known = row
        retraction = _retraction(cursor, project, fact_id)
        params, keyset = [project, fact_id], ""
        if before is not None:
            keyset = " AND (upper(h.known), h.history_id) < (%s, %s::uuid)"
            params += list(before)
        cursor.execute(
            "SELECT h.history_id, h.valid, h.known, h.source_observation_id, upper(h.known) FROM fact_history h"
            " WHERE h.scope = %s AND h.fact_id = %s" + keyset +
            " ORDER BY upper(h.known) DESC, h.history_id DESC LIMIT %s",
            params + [limit + 1],
        )
        rows = cursor.fetchall()
    out = {"version": str(version)}
    if retraction is not None:
        out["retraction"] = retraction
    out["id"] = str(fid)
    out["current"] = {"valid": format_range(valid), "known": format_range(known)}
    out["previous"] = [
        {"history_id": str(history_id), "valid": format_range(h_valid), "known": format_range(h_known),
         "ended_by_observation_id": str(source)}
        for history_id, h_valid, h_known, source, _ in rows[:limit]
    ]
    if len(rows) > limit:
        last = rows[limit - 1]
        out["next"] = {"known_until": format_ts(last[4]), "history_id": str(last[0])}
    return out


def list_entities(*, project, limit=20, after=None):
    """Entities in entity-id order after the `after` id, with bounded name previews."""
    params, where = [project], ""
    if after is not None:
        where = " AND entity_id > %s"
        params.append(after)
    with read_snapshot() as cursor:
        cursor.execute(
            "SELECT entity_id, identity_kind, left(canonical_name, %s), octet_length(canonical_name),"
            " char_length(canonical_name) > %s, cardinality(aliases), first_seen_at"
            " FROM entity WHERE scope = %s" + where + " ORDER BY entity_id LIMIT %s",
            [PREVIEW_CHARS, PREVIEW_CHARS] + params + [limit + 1],
        )
        rows = cursor.fetchall()
    entities = [
        {"id": str(entity_id), "identity_kind": kind, "name_preview": preview, "name_bytes": name_bytes,
         "name_truncated": truncated, "alias_count": alias_count, "first_seen_at": format_ts(first_seen)}
        for entity_id, kind, preview, name_bytes, truncated, alias_count, first_seen in rows[:limit]
    ]
    out = {"entities": entities}
    if len(rows) > limit:
        out["next"] = {"id": entities[-1]["id"]}
    return out


def get_entity(*, project, entity_id):
    """One entity with its sorted aliases; speaker_subject_id only for a speaker entity. Raises NotFound."""
    with read_snapshot() as cursor:
        cursor.execute(
            "SELECT entity_id, identity_kind, canonical_name, aliases, speaker_subject_id, first_seen_at"
            " FROM entity WHERE scope = %s AND entity_id = %s",
            [project, entity_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise NotFound()
    eid, kind, canonical_name, aliases, speaker_subject_id, first_seen = row
    out = {"id": str(eid), "identity_kind": kind, "canonical_name": canonical_name, "aliases": sorted(aliases)}
    if kind == "speaker" and speaker_subject_id is not None:
        out["speaker_subject_id"] = speaker_subject_id
    out["first_seen_at"] = format_ts(first_seen)
    return out

"""The claim writer and the refusal writer (formation.md §7–§8): one transaction per claim.

`write_claim` runs inside whatever transaction its caller holds, so curated assertions (governance.md §7)
reuse it inside their batch; `assert_claim` and `reject_claim` are formation's own transactions.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from psycopg.types.range import Range

from . import ids
from .text import normalize

MAX_NAME_BYTES = 4096
MAX_ALIASES = 64


class ClaimRefused(Exception):
    """A store-side refusal; the claim's transaction rolls back and the refusal is written apart."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class SourceGone(Exception):
    """The source observation was erased while the claim was being written."""


@dataclass(frozen=True)
class Source:
    """The message a claim comes from."""

    project: str
    observation_id: str
    ordinal: int
    role: str
    data_subject_id: str | None
    occurred_at: datetime  # the message's time: valid_from of what it asserts
    extractor_version: str


@dataclass(frozen=True)
class Claim:
    predicate: str
    cardinality: str
    subject: str
    object: str
    statement: str
    confidence: float
    subject_type: str
    object_type: str
    quote: str
    byte_start: int
    byte_end: int


def lock_source(cursor, project, observation_id):
    """The source lock every formation writer takes; serializes with an erasure's FOR UPDATE."""
    cursor.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('memoir:claim-source:' || %s || ':' || %s, 0))",
        [project, str(observation_id)],
    )
    cursor.execute(
        "SELECT data_subject_id, retention_until, extractor_version FROM observation"
        " WHERE scope = %s AND observation_id = %s FOR KEY SHARE",
        [project, str(observation_id)],
    )
    row = cursor.fetchone()
    if row is None:
        raise SourceGone()
    return row


def register(cursor, source, kind, projection_id, *, data_subject_id, retention_until):
    cursor.execute(
        "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
        " data_subject_id, retention_until, pipeline_version, registered_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, 'v1', now()) ON CONFLICT DO NOTHING",
        [
            source.project,
            str(source.observation_id),
            kind,
            str(projection_id),
            data_subject_id,
            retention_until,
        ],
    )


def _bind_speaker(cursor, source, speaker_terms, claim):
    """Which ends are the speaker; refuses first-person claims not spoken by the principal."""
    subject_is_speaker = normalize(claim.subject) in speaker_terms
    object_is_speaker = normalize(claim.object) in speaker_terms
    if not (subject_is_speaker or object_is_speaker):
        return False, False
    if source.role != "user":
        raise ClaimRefused("not_spoken_by_principal")
    cursor.execute(
        "SELECT o.data_subject_id, m.role FROM observation o JOIN turn_message m ON m.observation_id = o.observation_id"
        " WHERE o.scope = %s AND o.observation_id = %s AND m.ordinal = %s FOR KEY SHARE",
        [source.project, str(source.observation_id), source.ordinal],
    )
    row = cursor.fetchone()
    if row is None or not row[0] or row[1] != "user":
        raise ClaimRefused("unresolvable_subject")
    return subject_is_speaker, object_is_speaker


def _end_key(name, is_speaker, source):
    if is_speaker:
        return ("speaker", source.data_subject_id)
    normalized = normalize(name)
    return ("named", normalized) if normalized else ("none", "")


def _speaker_entity(cursor, source, registration):
    cursor.execute(
        "INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
        " resolution_version, identity_kind, speaker_subject_id, first_seen_at)"
        " VALUES (gen_random_uuid(), %s, 'speaker', 'speaker', 'person', '{}', 'entity/speaker-v1', 'speaker', %s, now())"
        " ON CONFLICT (scope, speaker_subject_id) WHERE identity_kind = 'speaker'"
        " DO UPDATE SET resolution_version = entity.resolution_version RETURNING entity_id",
        [source.project, source.data_subject_id],
    )
    entity_id = cursor.fetchone()[0]
    register(cursor, source, "entity", entity_id, **registration)
    return entity_id


def _named_entity(cursor, source, name, entity_type, registration):
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ClaimRefused("entity_name_limit")
    normalized = normalize(name)
    if not normalized:
        return None
    cursor.execute(
        "INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
        " resolution_version, identity_kind, first_seen_at)"
        " VALUES (gen_random_uuid(), %s, %s, %s, %s, '{}', 'entity/v1', 'named', now())"
        " ON CONFLICT (scope, normalized_name) WHERE identity_kind = 'named'"
        " DO UPDATE SET resolution_version = entity.resolution_version"
        " RETURNING entity_id, canonical_name, aliases",
        [source.project, name, normalized, entity_type],
    )
    entity_id, canonical, aliases = cursor.fetchone()
    cursor.execute(
        "INSERT INTO entity_name_receipt (scope, source_observation_id, entity_id, name, name_hash, normalized_name)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        [
            source.project,
            str(source.observation_id),
            entity_id,
            name,
            hashlib.sha256(name.encode()).digest(),
            normalized,
        ],
    )
    if name != canonical and name not in aliases:
        if len(aliases) >= MAX_ALIASES:
            raise ClaimRefused("entity_name_limit")
        # The upsert above holds the row lock, so this read-modify-write cannot lose an alias.
        cursor.execute(
            "UPDATE entity SET aliases = (SELECT array_agg(a ORDER BY a) FROM unnest(aliases || %s::text)"
            " a) WHERE entity_id = %s",
            [name, entity_id],
        )
    register(cursor, source, "entity", entity_id, **registration)
    return entity_id


def _learned_at(cursor, source, subject_id, predicate, valid_from, single):
    if not single:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]
    # Keep every range non-empty and never reversed, whatever order claims arrive in.
    cursor.execute(
        "SELECT greatest(clock_timestamp(),"
        " (SELECT max(lower(known)) + interval '1 microsecond' FROM fact WHERE scope = %s AND subject_entity_id = %s"
        "  AND predicate = %s AND upper_inf(valid) AND upper_inf(known) AND lower(valid) < %s),"
        " (SELECT max(upper(known)) FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
        "  AND NOT upper_inf(known) AND valid && tstzrange(%s, NULL)))",
        [
            source.project,
            subject_id,
            predicate,
            valid_from,
            source.project,
            subject_id,
            predicate,
            valid_from,
        ],
    )
    return cursor.fetchone()[0]


def _supersede(cursor, source, new_fact_id, subject_id, predicate, valid_from, learned_at, registration):
    cursor.execute(
        "SELECT fact_id, valid, known FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
        " AND upper_inf(valid) AND upper_inf(known) AND lower(valid) < %s FOR UPDATE",
        [source.project, subject_id, predicate, valid_from],
    )
    for old_id, old_valid, old_known in cursor.fetchall():
        cursor.execute(
            "INSERT INTO fact_history (history_id, scope, fact_id, valid, known, source_observation_id)"
            " VALUES (gen_random_uuid(), %s, %s, %s, tstzrange(%s, %s), %s) RETURNING history_id",
            [source.project, old_id, old_valid, old_known.lower, learned_at, str(source.observation_id)],
        )
        history_id = cursor.fetchone()[0]
        # The history row belongs to every source of the old fact, and to this one.
        cursor.execute(
            "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
            " data_subject_id, retention_until, pipeline_version, registered_at)"
            " SELECT scope, source_observation_id, 'fact_history', %s, data_subject_id, retention_until, 'v1', now()"
            " FROM projection_dependency WHERE projection_kind = 'fact' AND fact_ref = %s ON CONFLICT DO NOTHING",
            [str(history_id), old_id],
        )
        register(cursor, source, "fact_history", history_id, **registration)
        cursor.execute(
            "UPDATE fact SET valid = tstzrange(lower(valid), %s), known = tstzrange(%s, NULL),"
            " superseded_by_id = %s, supersession_source_id = %s WHERE fact_id = %s",
            [valid_from, learned_at, str(new_fact_id), str(source.observation_id), old_id],
        )


def write_claim(cursor, *, source, claim, speaker_terms, authored_by=None, valid_from=None, known_from=None):
    """Write one admitted claim inside the caller's transaction. Returns the fact id, or None when the
    claim was withdrawn by a retraction. Raises ClaimRefused or SourceGone."""
    subject_id_text, retention_until, pin = lock_source(cursor, source.project, source.observation_id)
    registration = {"data_subject_id": subject_id_text, "retention_until": retention_until}
    subject_is_speaker, object_is_speaker = _bind_speaker(cursor, source, speaker_terms, claim)
    if pin is not None and pin != source.extractor_version:
        raise SourceGone()
    subject_end = _end_key(claim.subject, subject_is_speaker, source)
    object_end = _end_key(claim.object, object_is_speaker, source)
    signature = ids.claim_signature(claim.predicate, subject_end, object_end)
    cursor.execute(
        "SELECT 1 FROM record_retraction WHERE scope = %s AND source_observation_id = %s"
        " AND source_ordinal = %s AND claim_signature = %s",
        [source.project, str(source.observation_id), source.ordinal, signature],
    )
    if cursor.fetchone():
        return None
    new_fact_id = ids.fact_id(source.project, source.observation_id, source.ordinal, signature)
    cursor.execute("SELECT 1 FROM fact WHERE fact_id = %s", [str(new_fact_id)])
    if cursor.fetchone():
        return new_fact_id

    def resolve(name, is_speaker, entity_type):
        if is_speaker:
            return _speaker_entity(cursor, source, registration)
        return _named_entity(cursor, source, name, entity_type, registration)

    subject_entity = resolve(
        claim.subject, subject_is_speaker, "person" if subject_is_speaker else claim.subject_type
    )
    object_entity = resolve(claim.object, object_is_speaker, claim.object_type)
    valid_from = valid_from or source.occurred_at
    single = claim.cardinality == "one" and subject_entity is not None
    learned_at = known_from or _learned_at(
        cursor, source, subject_entity, claim.predicate, valid_from, single
    )
    if single:
        _supersede(
            cursor, source, new_fact_id, subject_entity, claim.predicate, valid_from, learned_at, registration
        )
    try:
        cursor.execute(
            "INSERT INTO fact (fact_id, scope, subject_entity_id, object_entity_id, predicate, cardinality,"
            " statement, valid, known, confidence, source_role, data_subject_id, recorded_at, retention_until,"
            " version) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, gen_random_uuid())",
            [
                str(new_fact_id),
                source.project,
                subject_entity,
                object_entity,
                claim.predicate,
                claim.cardinality,
                claim.statement,
                Range(valid_from, None, "[)"),
                Range(learned_at, None, "[)"),
                claim.confidence,
                source.role,
                source.data_subject_id,
                learned_at,
                retention_until,
            ],
        )
    except IntegrityError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == "23P01":
            raise ClaimRefused("conflicting_value") from None
        raise
    cursor.execute(
        "INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
        " byte_end, extractor_version, authored_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [
            source.project,
            str(new_fact_id),
            str(source.observation_id),
            source.ordinal,
            claim.quote,
            claim.byte_start,
            claim.byte_end,
            source.extractor_version,
            authored_by,
        ],
    )
    register(cursor, source, "fact", new_fact_id, **registration)
    return new_fact_id


def assert_claim(*, source, claim, speaker_terms):
    """Formation's transaction for one admitted claim. Returns ("fact", id) / ("retracted", None) /
    ("refused", reason) / ("gone", None)."""
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                fact = write_claim(cursor, source=source, claim=claim, speaker_terms=speaker_terms)
        return ("fact", fact) if fact is not None else ("retracted", None)
    except ClaimRefused as refusal:
        return ("refused", refusal.reason)
    except SourceGone:
        return ("gone", None)


def reject_claim(*, source, predicate, subject, object, statement, quote, reason):
    """Record one refusal with the proposer's own words, registered for erasure (formation.md §8)."""
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                subject_id, retention_until, pin = lock_source(cursor, source.project, source.observation_id)
                if pin is not None and pin != source.extractor_version:
                    return None
                claim_id = ids.rejected_claim_id(
                    source.project,
                    source.observation_id,
                    source.ordinal,
                    predicate,
                    statement,
                    quote,
                    reason,
                    source.extractor_version,
                )
                cursor.execute(
                    "INSERT INTO rejected_claim (rejected_claim_id, scope, source_observation_id, source_ordinal,"
                    " predicate, subject, object, statement, quote, reason, extractor_version, data_subject_id,"
                    " recorded_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now())"
                    " ON CONFLICT (rejected_claim_id) DO NOTHING",
                    [
                        str(claim_id),
                        source.project,
                        str(source.observation_id),
                        source.ordinal,
                        predicate,
                        subject,
                        object,
                        statement,
                        quote,
                        reason,
                        source.extractor_version,
                        subject_id,
                    ],
                )
                register(
                    cursor,
                    source,
                    "rejected_claim",
                    claim_id,
                    data_subject_id=subject_id,
                    retention_until=retention_until,
                )
        return claim_id
    except SourceGone:
        return None

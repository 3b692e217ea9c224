"""The claim writer and the refusal writer (formation.md §7–§8): one transaction per claim.

`write_claim` runs inside whatever transaction its caller holds, so curated assertions (governance.md §7)
reuse it inside their batch; `assert_claim` and `reject_claim` are formation's own transactions.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction

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
    """The source lock every formation writer takes; serializes with an erasure's FOR UPDATE.

    The advisory lock and the row's FOR KEY SHARE are one round trip. Returns
    (data_subject_id, retention_until, extractor_version); raises SourceGone when the row was erased."""
    cursor.execute(
        "SELECT o.data_subject_id, o.retention_until, o.extractor_version"
        " FROM (SELECT pg_advisory_xact_lock(hashtextextended('memoir:claim-source:' || %s || ':' || %s, 0))) l,"
        " observation o WHERE o.scope = %s AND o.observation_id = %s FOR KEY SHARE OF o",
        [project, str(observation_id), project, str(observation_id)])
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


def _bind_speaker(source, speaker_terms, claim, locked_subject):
    """Which ends are the speaker; refuses first-person claims not spoken by the principal.

    `locked_subject` is the observation's data_subject_id as re-read under the source lock; the message
    role cannot change (turn_message refuses UPDATE), so the role formation read is the stored one."""
    subject_is_speaker = normalize(claim.subject) in speaker_terms
    object_is_speaker = normalize(claim.object) in speaker_terms
    if not (subject_is_speaker or object_is_speaker):
        return False, False
    if source.role != "user":
        raise ClaimRefused("not_spoken_by_principal")
    if not locked_subject:
        raise ClaimRefused("unresolvable_subject")
    return subject_is_speaker, object_is_speaker


def _end_key(name, is_speaker, source):
    if is_speaker:
        return ("speaker", source.data_subject_id)
    normalized = normalize(name)
    return ("named", normalized) if normalized else ("none", "")


_REGISTER_ENTITY = (
    " INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
    " data_subject_id, retention_until, pipeline_version, registered_at)"
    " SELECT %s, %s, 'entity', e.entity_id::text, %s, %s, 'v1', now() FROM e ON CONFLICT DO NOTHING")


def _speaker_entity(cursor, source, registration):
    cursor.execute(
        "WITH e AS (INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
        " resolution_version, identity_kind, speaker_subject_id, first_seen_at)"
        " VALUES (gen_random_uuid(), %s, 'speaker', 'speaker', 'person', '{}', 'entity/speaker-v1', 'speaker', %s,"
        " now()) ON CONFLICT (scope, speaker_subject_id) WHERE identity_kind = 'speaker'"
        " DO UPDATE SET resolution_version = entity.resolution_version RETURNING entity_id),"
        " r AS (" + _REGISTER_ENTITY + ") SELECT entity_id FROM e",
        [source.project, source.data_subject_id, source.project, str(source.observation_id),
         registration["data_subject_id"], registration["retention_until"]])
    return cursor.fetchone()[0]


def _named_entity(cursor, source, name, entity_type, registration):
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ClaimRefused("entity_name_limit")
    normalized = normalize(name)
    if not normalized:
        return None
    # One round trip: the upsert (whose no-op update holds the row lock until commit), the name receipt
    # and the registration.
    cursor.execute(
        "WITH e AS (INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
        " resolution_version, identity_kind, first_seen_at)"
        " VALUES (gen_random_uuid(), %s, %s, %s, %s, '{}', 'entity/v1', 'named', now())"
        " ON CONFLICT (scope, normalized_name) WHERE identity_kind = 'named'"
        " DO UPDATE SET resolution_version = entity.resolution_version"
        " RETURNING entity_id, canonical_name, aliases),"
        " n AS (INSERT INTO entity_name_receipt (scope, source_observation_id, entity_id, name, name_hash,"
        " normalized_name) SELECT %s, %s, e.entity_id, %s, %s, %s FROM e ON CONFLICT DO NOTHING),"
        " r AS (" + _REGISTER_ENTITY + ") SELECT entity_id, canonical_name, aliases FROM e",
        [source.project, name, normalized, entity_type,
         source.project, str(source.observation_id), name, hashlib.sha256(name.encode()).digest(), normalized,
         source.project, str(source.observation_id), registration["data_subject_id"],
         registration["retention_until"]])
    entity_id, canonical, aliases = cursor.fetchone()
    if name != canonical and name not in aliases:
        if len(aliases) >= MAX_ALIASES:
            raise ClaimRefused("entity_name_limit")
        # The upsert above holds the row lock, so this read-modify-write cannot lose an alias.
        cursor.execute("UPDATE entity SET aliases = (SELECT array_agg(a ORDER BY a) FROM unnest(aliases || %s::text)"
                       " a) WHERE entity_id = %s", [name, entity_id])
    return entity_id


def _supersede(cursor, source, new_fact_id, subject_id, predicate, valid_from, known_from, registration):
    """Close the slot's current values that start before `valid_from` (formation.md §7.2 steps 7–8).

    Locks them first, then takes knowledge time after every lock, so ranges are never empty or reversed.
    Returns the knowledge time of the new fact."""
    cursor.execute(
        "SELECT fact_id FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
        " AND upper_inf(valid) AND upper_inf(known) AND lower(valid) < %s FOR UPDATE",
        [source.project, subject_id, predicate, valid_from],
    )
    old_ids = [row[0] for row in cursor.fetchall()]
    if known_from is None:
        cursor.execute(
            "SELECT greatest(clock_timestamp(),"
            " (SELECT max(lower(known)) + interval '1 microsecond' FROM fact WHERE scope = %s"
            "  AND subject_entity_id = %s AND predicate = %s AND upper_inf(valid) AND upper_inf(known)"
            "  AND lower(valid) < %s),"
            " (SELECT max(upper(known)) FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
            "  AND NOT upper_inf(known) AND valid && tstzrange(%s, NULL)))",
            [source.project, subject_id, predicate, valid_from, source.project, subject_id, predicate, valid_from],
        )
        known_from = cursor.fetchone()[0]
    for old_id in old_ids:
        # One round trip per closed value: archive its intervals, register the archive under every source of
        # the old fact and under this one, then close it (its id stays; the trigger changes its version).
        cursor.execute(
            "WITH h AS (INSERT INTO fact_history (history_id, scope, fact_id, valid, known, source_observation_id)"
            "  SELECT gen_random_uuid(), scope, fact_id, valid, tstzrange(lower(known), %s), %s FROM fact"
            "  WHERE fact_id = %s RETURNING history_id),"
            " inherited AS (INSERT INTO projection_dependency (scope, source_observation_id, projection_kind,"
            "  projection_id, data_subject_id, retention_until, pipeline_version, registered_at)"
            "  SELECT d.scope, d.source_observation_id, 'fact_history', h.history_id::text, d.data_subject_id,"
            "  d.retention_until, 'v1', now() FROM projection_dependency d, h"
            "  WHERE d.projection_kind = 'fact' AND d.fact_ref = %s ON CONFLICT DO NOTHING),"
            " own AS (INSERT INTO projection_dependency (scope, source_observation_id, projection_kind,"
            "  projection_id, data_subject_id, retention_until, pipeline_version, registered_at)"
            "  SELECT %s, %s, 'fact_history', h.history_id::text, %s, %s, 'v1', now() FROM h ON CONFLICT DO NOTHING)"
            " UPDATE fact SET valid = tstzrange(lower(valid), %s), known = tstzrange(%s, NULL),"
            " superseded_by_id = %s, supersession_source_id = %s WHERE fact_id = %s",
            [known_from, str(source.observation_id), old_id, old_id,
             source.project, str(source.observation_id), registration["data_subject_id"],
             registration["retention_until"],
             valid_from, known_from, str(new_fact_id), str(source.observation_id), old_id],
        )
    return known_from


_INSERT_FACT = (
    # One round trip: the fact, its evidence (the span trigger re-checks the bytes) and its registration.
    "WITH t AS (SELECT coalesce(%s::timestamptz, clock_timestamp()) AS learned),"
    " f AS (INSERT INTO fact (fact_id, scope, subject_entity_id, object_entity_id, predicate, cardinality, statement,"
    "  valid, known, confidence, source_role, data_subject_id, recorded_at, retention_until, version)"
    "  SELECT %s, %s, %s, %s, %s, %s, %s, tstzrange(%s, NULL), tstzrange(t.learned, NULL), %s, %s, %s, t.learned,"
    "  %s, gen_random_uuid() FROM t RETURNING fact_id),"
    " ev AS (INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
    "  byte_end, extractor_version, authored_by) SELECT %s, f.fact_id, %s, %s, %s, %s, %s, %s, %s FROM f),"
    " r AS (INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
    "  data_subject_id, retention_until, pipeline_version, registered_at)"
    "  SELECT %s, %s, 'fact', f.fact_id::text, %s, %s, 'v1', now() FROM f ON CONFLICT DO NOTHING)"
    " SELECT fact_id FROM f"
)


def write_claim(cursor, *, source, claim, speaker_terms, authored_by=None, valid_from=None, known_from=None):
    """Write one admitted claim inside the caller's transaction. Returns the fact id, or None when the
    claim was withdrawn by a retraction. Raises ClaimRefused or SourceGone."""
    subject_id_text, retention_until, pin = lock_source(cursor, source.project, source.observation_id)
    registration = {"data_subject_id": subject_id_text, "retention_until": retention_until}
    subject_is_speaker, object_is_speaker = _bind_speaker(source, speaker_terms, claim, subject_id_text)
    if pin is not None and pin != source.extractor_version:
        raise SourceGone()
    subject_end = _end_key(claim.subject, subject_is_speaker, source)
    object_end = _end_key(claim.object, object_is_speaker, source)
    signature = ids.claim_signature(claim.predicate, subject_end, object_end)
    new_fact_id = ids.fact_id(source.project, source.observation_id, source.ordinal, signature)
    cursor.execute(
        "SELECT EXISTS (SELECT 1 FROM record_retraction WHERE scope = %s AND source_observation_id = %s"
        " AND source_ordinal = %s AND claim_signature = %s), EXISTS (SELECT 1 FROM fact WHERE fact_id = %s)",
        [source.project, str(source.observation_id), source.ordinal, signature, str(new_fact_id)],
    )
    withdrawn, recorded = cursor.fetchone()
    if withdrawn:
        return None  # a retracted claim never comes back when its message is re-formed
    if recorded:
        return new_fact_id  # the claim is already recorded: a retried turn re-uses it

    def resolve(name, is_speaker, entity_type):
        if is_speaker:
            return _speaker_entity(cursor, source, registration)
        return _named_entity(cursor, source, name, entity_type, registration)

    subject_entity = resolve(claim.subject, subject_is_speaker, "person" if subject_is_speaker else claim.subject_type)
    object_entity = resolve(claim.object, object_is_speaker, claim.object_type)
    valid_from = valid_from or source.occurred_at
    learned_at = known_from
    if claim.cardinality == "one" and subject_entity is not None:
        learned_at = _supersede(cursor, source, new_fact_id, subject_entity, claim.predicate, valid_from,
                                known_from, registration)
    try:
        cursor.execute(_INSERT_FACT, [
            learned_at,
            str(new_fact_id), source.project, subject_entity, object_entity, claim.predicate, claim.cardinality,
            claim.statement, valid_from, claim.confidence, source.role, source.data_subject_id, retention_until,
            source.project, str(source.observation_id), source.ordinal, claim.quote, claim.byte_start,
            claim.byte_end, source.extractor_version, authored_by,
            source.project, str(source.observation_id), subject_id_text, retention_until,
        ])
    except IntegrityError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == "23P01":
            raise ClaimRefused("conflicting_value") from None
        raise
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

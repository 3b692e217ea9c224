"""The claim writer and the refusal writer (formation.md §7–§8): one transaction per claim.

`write_claim` runs inside whatever transaction its caller holds, so curated assertions (governance.md §7)
reuse it inside their batch; `assert_claim` and `reject_claim` are formation's own transactions.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction

from core.locks import advisory_xact_lock
from core.retry import sqlstate
from core.text import normalize

from . import ids

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
    # From the message's time words (rules/v2): None = the message's occurred_at, and open.
    valid_from: datetime | None = None
    valid_until: datetime | None = None


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


def _bind_speaker(source, speaker_terms, claim):
    """Which ends are the speaker; refuses first-person claims not spoken by the principal.

    The message role cannot change (turn_message refuses UPDATE); the subject is re-read under the source
    lock by the caller, which refuses an empty one as unresolvable_subject."""
    subject_is_speaker = normalize(claim.subject) in speaker_terms
    object_is_speaker = normalize(claim.object) in speaker_terms
    if (subject_is_speaker or object_is_speaker) and source.role != "user":
        raise ClaimRefused("not_spoken_by_principal")
    return subject_is_speaker, object_is_speaker


def _end_key(name, is_speaker, source):
    if is_speaker:
        return ("speaker", source.data_subject_id)
    normalized = normalize(name)
    return ("named", normalized) if normalized else ("none", "")


def _entity_cte(n, end, source, registration):
    """SQL and parameters for resolving one end inside a combined statement: the upsert (whose no-op update
    holds the entity row lock until commit, ordering writers within one subject), the name receipt for a
    named end, and the entity's registration under this source."""
    kind, name, entity_type = end
    register = (f" r{n} AS (INSERT INTO projection_dependency (scope, source_observation_id, projection_kind,"
                " projection_id, data_subject_id, retention_until, pipeline_version, registered_at)"
                f" SELECT %s, %s, 'entity', e{n}.entity_id::text, %s, %s, 'v1', now() FROM e{n} ON CONFLICT DO NOTHING)")
    register_params = [source.project, str(source.observation_id), registration["data_subject_id"],
                       registration["retention_until"]]
    if kind == "speaker":
        sql = (f"e{n} AS (INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
               " resolution_version, identity_kind, speaker_subject_id, first_seen_at)"
               " VALUES (gen_random_uuid(), %s, 'speaker', 'speaker', 'person', '{}', 'entity/speaker-v1', 'speaker',"
               " %s, now()) ON CONFLICT (scope, speaker_subject_id) WHERE identity_kind = 'speaker'"
               " DO UPDATE SET resolution_version = entity.resolution_version"
               " RETURNING entity_id, canonical_name, aliases),")
        return sql + register, [source.project, source.data_subject_id, *register_params]
    normalized = normalize(name)
    sql = (f"e{n} AS (INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
           " resolution_version, identity_kind, first_seen_at)"
           " VALUES (gen_random_uuid(), %s, %s, %s, %s, '{}', 'entity/v1', 'named', now())"
           " ON CONFLICT (scope, normalized_name) WHERE identity_kind = 'named'"
           " DO UPDATE SET resolution_version = entity.resolution_version"
           " RETURNING entity_id, canonical_name, aliases),"
           f" n{n} AS (INSERT INTO entity_name_receipt (scope, source_observation_id, entity_id, name, name_hash,"
           f" normalized_name) SELECT %s, %s, e{n}.entity_id, %s, %s, %s FROM e{n} ON CONFLICT DO NOTHING),")
    params = [source.project, name, normalized, entity_type,
              source.project, str(source.observation_id), name, hashlib.sha256(name.encode()).digest(), normalized]
    return sql + register, params + register_params


def _resolve_ends(cursor, source, ends, registration):
    """Resolve the claim's ends (each ("speaker"|"named", name, type) or None) in one round trip.

    Returns the entity ids in order. Two named ends with one normalized name go one at a time, since a
    single statement cannot upsert the same row twice."""
    for end in ends:
        if end is not None and end[0] == "named" and len(end[1].encode("utf-8")) > MAX_NAME_BYTES:
            raise ClaimRefused("entity_name_limit")
    live = [(i, end) for i, end in enumerate(ends) if end is not None]
    same_name = (len(live) == 2 and live[0][1][0] == live[1][1][0] == "named"
                 and normalize(live[0][1][1]) == normalize(live[1][1][1]))
    batches = [[item] for item in live] if same_name else ([live] if live else [])
    ids = [None] * len(ends)
    for batch in batches:
        ctes, params, selects = [], [], []
        for i, end in batch:
            sql, cte_params = _entity_cte(i, end, source, registration)
            ctes.append(sql)
            params += cte_params
            selects.append(f"(SELECT entity_id FROM e{i}), (SELECT canonical_name FROM e{i}),"
                           f" (SELECT aliases FROM e{i})")
        cursor.execute("WITH " + ", ".join(ctes) + " SELECT " + ", ".join(selects), params)
        row = cursor.fetchone()
        for position, (i, end) in enumerate(batch):
            entity_id, canonical, aliases = row[3 * position: 3 * position + 3]
            ids[i] = entity_id
            if end[0] == "named":
                _add_alias(cursor, entity_id, end[1], canonical, aliases)
    return ids


def _add_alias(cursor, entity_id, name, canonical, aliases):
    """A new spelling joins the sorted aliases; the upsert holds the row lock, so none is lost."""
    if name == canonical or name in aliases:
        return
    if len(aliases) >= MAX_ALIASES:
        raise ClaimRefused("entity_name_limit")
    cursor.execute("UPDATE entity SET aliases = (SELECT array_agg(a ORDER BY a) FROM unnest(aliases || %s::text) a)"
                   " WHERE entity_id = %s", [name, entity_id])


def _supersede(cursor, source, new_fact_id, subject_id, predicate, valid_from, known_from, registration,
               object_id=None):
    """Close the slot's current values that start before `valid_from` (formation.md §7.2 steps 7–8).

    Locks them first, then takes knowledge time after every lock, so ranges are never empty or reversed.
    The slot is the source's data subject's: another person's value for a shared entity is not touched.
    With `object_id` only the values naming that object close, and with no `new_fact_id` nothing replaces
    them (an ending, "I lost my job as a banker"). Returns (the knowledge time taken, the ids closed)."""
    slot_subject = source.data_subject_id or ""
    cursor.execute(
        "SELECT fact_id FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
        " AND coalesce(data_subject_id, '') = %s"
        " AND upper_inf(valid) AND upper_inf(known) AND lower(valid) < %s"
        + (" AND object_entity_id = %s" if object_id else "") + " FOR UPDATE",
        [source.project, subject_id, predicate, slot_subject, valid_from, *([object_id] if object_id else [])],
    )
    old_ids = [row[0] for row in cursor.fetchall()]
    if known_from is None:
        cursor.execute(
            "SELECT greatest(clock_timestamp(),"
            " (SELECT max(lower(known)) + interval '1 microsecond' FROM fact WHERE scope = %s"
            "  AND subject_entity_id = %s AND predicate = %s AND coalesce(data_subject_id, '') = %s"
            "  AND upper_inf(valid) AND upper_inf(known) AND lower(valid) < %s),"
            # `valid` overlaps [valid_from, ∞) exactly when it is open or ends after valid_from; written so
            # that the slot's btree index serves it.
            " (SELECT max(upper(known)) FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
            "  AND coalesce(data_subject_id, '') = %s"
            "  AND NOT upper_inf(known) AND (upper_inf(valid) OR upper(valid) > %s)))",
            [source.project, subject_id, predicate, slot_subject, valid_from,
             source.project, subject_id, predicate, slot_subject, valid_from],
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
             valid_from, known_from, new_fact_id and str(new_fact_id), str(source.observation_id), old_id],
        )
    return known_from, old_ids


def _end_current(cursor, source, claim, subject_id, object_id, registration):
    """An ending claim: the speaker's current value(s) of the slot end at `claim.valid_until`, with history
    kept. Returns the id of a value it ended; nothing current to end is a refusal (`not_current`)."""
    cursor.execute(
        "SELECT fact_id FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
        " AND coalesce(data_subject_id, '') = %s AND supersession_source_id = %s AND superseded_by_id IS NULL"
        " AND upper(valid) = %s" + (" AND object_entity_id = %s" if object_id else "") + " LIMIT 1",
        [source.project, subject_id, claim.predicate, source.data_subject_id or "", str(source.observation_id),
         claim.valid_until, *([object_id] if object_id else [])])
    row = cursor.fetchone()
    if row is not None:
        return row[0]  # a retried turn: this message already ended it
    if object_id is None and claim.cardinality != "one":
        raise ClaimRefused("not_current")  # "I quit" names no one value of a many-valued slot
    _, ended = _supersede(cursor, source, None, subject_id, claim.predicate, claim.valid_until, None, registration,
                          object_id=object_id)
    if not ended:
        raise ClaimRefused("not_current")
    return ended[0]


def _slot_taken(cursor, source, subject_id, predicate, valid_from, known_from, valid_until=None):
    """Would a value [valid_from, valid_until) known from `known_from` overlap one the slot still holds (the
    test of fact_single_cardinality_excl, made before the insert)?"""
    cursor.execute(
        "SELECT EXISTS (SELECT 1 FROM fact WHERE scope = %s AND subject_entity_id = %s AND predicate = %s"
        " AND cardinality = 'one' AND coalesce(data_subject_id, '') = %s"
        " AND valid && tstzrange(%s::timestamptz, %s::timestamptz)"
        " AND known && tstzrange(%s::timestamptz, NULL))",
        [source.project, subject_id, predicate, source.data_subject_id or "", valid_from, valid_until, known_from])
    return cursor.fetchone()[0]


_INSERT_FACT = (
    # One round trip: the fact, its evidence (the span trigger re-checks the bytes) and its registration.
    "WITH t AS (SELECT coalesce(%s::timestamptz, clock_timestamp()) AS learned),"
    " f AS (INSERT INTO fact (fact_id, scope, subject_entity_id, object_entity_id, predicate, cardinality, statement,"
    "  valid, known, confidence, source_role, data_subject_id, recorded_at, retention_until, version)"
    "  SELECT %s, %s, %s, %s, %s, %s, %s, tstzrange(%s, %s::timestamptz), tstzrange(t.learned, NULL), %s, %s, %s, t.learned,"
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
    # The ends (and so the claim's signature and derived id) depend only on the words, the role and the
    # source's subject, which cannot change; the checks that read the database share the lock's round trip.
    subject_is_speaker, object_is_speaker = _bind_speaker(source, speaker_terms, claim)
    subject_end = _end_key(claim.subject, subject_is_speaker, source)
    object_end = _end_key(claim.object, object_is_speaker, source)
    signature = ids.claim_signature(claim.predicate, subject_end, object_end)
    new_fact_id = ids.fact_id(source.project, source.observation_id, source.ordinal, signature)
    cursor.execute(
        "SELECT o.data_subject_id, o.retention_until, o.extractor_version,"
        " EXISTS (SELECT 1 FROM record_retraction rr WHERE rr.scope = o.scope AND rr.source_observation_id"
        "  = o.observation_id AND rr.source_ordinal = %s AND rr.claim_signature = %s),"
        " EXISTS (SELECT 1 FROM fact f WHERE f.fact_id = %s)"
        " FROM (SELECT pg_advisory_xact_lock(hashtextextended('memoir:claim-source:' || %s || ':' || %s, 0))) l,"
        " observation o WHERE o.scope = %s AND o.observation_id = %s FOR KEY SHARE OF o",
        [source.ordinal, signature, str(new_fact_id), source.project, str(source.observation_id), source.project,
         str(source.observation_id)])
    row = cursor.fetchone()
    if row is None:
        raise SourceGone()
    subject_id_text, retention_until, pin, withdrawn, recorded = row
    if (subject_is_speaker or object_is_speaker) and not subject_id_text:
        raise ClaimRefused("unresolvable_subject")  # the subject as re-read under the source lock
    if pin is not None and pin != source.extractor_version:
        raise SourceGone()
    if withdrawn:
        return None  # a retracted claim never comes back when its message is re-formed
    if recorded:
        return new_fact_id  # the claim is already recorded: a retried turn re-uses it
    registration = {"data_subject_id": subject_id_text, "retention_until": retention_until}

    def end(name, is_speaker, entity_type):
        if is_speaker:
            return ("speaker", name, "person")
        return ("named", name, entity_type) if normalize(name) else None  # a blank end stays unresolved

    subject_entity, object_entity = _resolve_ends(
        cursor, source, [end(claim.subject, subject_is_speaker, claim.subject_type),
                         end(claim.object, object_is_speaker, claim.object_type)], registration)
    if claim.valid_until is not None and claim.valid_from is None and valid_from is None:
        if subject_entity is None:
            raise ClaimRefused("not_current")
        return _end_current(cursor, source, claim, subject_entity, object_entity, registration)
    valid_from = valid_from or claim.valid_from or source.occurred_at
    learned_at = known_from
    if claim.cardinality == "one" and subject_entity is not None:
        # Serialize writers of one single-valued slot, so the conflict below is decided before the write.
        advisory_xact_lock(cursor, "fact-slot", source.project, subject_entity, claim.predicate,
                           source.data_subject_id or "")
        # A state stated as over supersedes nothing; one that overlaps a value the slot holds is refused below.
        if claim.valid_until is None:
            learned_at, _ = _supersede(cursor, source, new_fact_id, subject_entity, claim.predicate, valid_from,
                                       known_from, registration)
        if _slot_taken(cursor, source, subject_entity, claim.predicate, valid_from, learned_at, claim.valid_until):
            # Never let fact_single_cardinality_excl refuse it: a failing insert puts its key in the server log.
            raise ClaimRefused("conflicting_value")
    try:
        cursor.execute(_INSERT_FACT, [
            learned_at,
            str(new_fact_id), source.project, subject_entity, object_entity, claim.predicate, claim.cardinality,
            claim.statement, valid_from, claim.valid_until, claim.confidence, source.role, source.data_subject_id, retention_until,
            source.project, str(source.observation_id), source.ordinal, claim.quote, claim.byte_start,
            claim.byte_end, source.extractor_version, authored_by,
            source.project, str(source.observation_id), subject_id_text, retention_until,
        ])
    except IntegrityError as exc:
        if sqlstate(exc) == "23P01":
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


def claim_fact_id(*, source, claim, speaker_terms):
    """The id `write_claim` would give this claim, or None when the writer would refuse it for its speaker
    binding. Lets a rebuild tell the facts a new reading keeps from those it loses before writing any."""
    try:
        subject_is_speaker, object_is_speaker = _bind_speaker(source, speaker_terms, claim)
    except ClaimRefused:
        return None
    if (subject_is_speaker or object_is_speaker) and not source.data_subject_id:
        return None
    signature = ids.claim_signature(claim.predicate, _end_key(claim.subject, subject_is_speaker, source),
                                    _end_key(claim.object, object_is_speaker, source))
    return ids.fact_id(source.project, source.observation_id, source.ordinal, signature)

"""Curated record mutations (governance.md §7): assert, correct and retract. Each batch is one
transaction, all or nothing, and writes its own ledger row inside it.

Curated observations share the offset counter with turns and go through formation's claim writer,
so a curated fact is stored exactly like a formed one apart from its extractor version and author.
"""
import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import UTC

from django.db import connection, transaction

from core import audit
from core.errors import Conflict, DomainError, Invalid, NotFound
from core.locks import advisory_xact_lock
from core.text import normalize
from formation import ids
from formation import vocabulary as vocab
from formation.claims import Claim, ClaimRefused, Source, SourceGone, write_claim
from formation.gates import DEFAULT_SUBJECT_TYPE
from memory.services import claim_offset, key_digest, recompute_watermark

MAX_BATCH = 20
MAX_EVIDENCE_SOURCES = 128
CURATED_VERSION = "curated/v1"
# The spelling a correction of a speaker-subject record asserts: it binds to the same speaker entity.
SPEAKER_SUBJECT = "I"
ASSERT_KEY_PREFIX = b"assert:"


def _invalid(message):
    return Invalid("invalid_record_mutation", message)


def _record_conflict(message="the record changed or is no longer current"):
    return Conflict("record_conflict", message)


def _mutation_limit():
    return DomainError("record_mutation_limit", "the batch names too many evidence sources", status=413)


def _iso(value):
    return value.astimezone(UTC).isoformat() if value is not None else None


# ---------------------------------------------------------------------------
# Shared pieces: the curated observation and the claim writer call.


def _append_curated(cursor, *, caller, statement, data_subject_id):
    """A born-formed curated observation with one user message holding the statement (formation.md §1)."""
    log_offset = claim_offset(cursor, caller.project)
    observation_id = str(uuid.uuid4())
    retention = f"{caller.retention_days} days" if caller.retention_days else None
    # Server time, never client time; formed at birth so it takes no backlog reservation.
    cursor.execute(
        "INSERT INTO observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
        " data_subject_id, retention_until, formed_at, formation_attempts, extractor_version)"
        " VALUES (%s, %s, %s, 'curated', clock_timestamp(), 'user', %s, now() + %s::interval, now(), 0, %s)"
        " RETURNING occurred_at",
        [observation_id, caller.project, log_offset, data_subject_id, retention, CURATED_VERSION],
    )
    occurred_at = cursor.fetchone()[0]
    cursor.execute(
        "INSERT INTO turn_message (observation_id, ordinal, role, content, group_ordinal, occurred_at, chunk_id)"
        " VALUES (%s, 0, 'user', %s, 0, %s, gen_random_uuid())",
        [observation_id, statement, occurred_at],
    )
    return Source(project=caller.project, observation_id=observation_id, ordinal=0, role="user",
                  data_subject_id=data_subject_id, occurred_at=occurred_at, extractor_version=CURATED_VERSION)


def _curated_claim(spec, *, subject, object, statement, speaker_terms):
    """The whole statement is the evidence quote (bytes 0..len); nobody estimated a confidence."""
    return Claim(
        predicate=spec.name, cardinality=spec.cardinality, subject=subject, object=object, statement=statement,
        confidence=0.0,
        subject_type="person" if normalize(subject) in speaker_terms else DEFAULT_SUBJECT_TYPE,
        object_type=spec.object_kind, quote=statement, byte_start=0, byte_end=len(statement.encode("utf-8")),
    )


def _write(cursor, *, caller, source, claim, speaker_terms, valid_from, known_from=None):
    try:
        fact_id = write_claim(cursor, source=source, claim=claim, speaker_terms=speaker_terms,
                              authored_by=caller.credential_id, valid_from=valid_from, known_from=known_from)
    except ClaimRefused as refusal:
        # The transaction may be aborted here (23P01); raising rolls the whole batch back.
        if refusal.reason == "conflicting_value":
            raise _record_conflict("a single-valued relation already holds a value for that time") from None
        raise _invalid("the claim cannot be stored") from None
    except SourceGone:
        raise _record_conflict() from None
    if fact_id is None:  # a fresh observation carries no retraction; anything else is a conflict
        raise _record_conflict()
    cursor.execute("SELECT version, subject_entity_id FROM fact WHERE fact_id = %s", [str(fact_id)])
    version, subject_entity = cursor.fetchone()
    return str(fact_id), str(version), subject_entity


def _insert_curated_claim(cursor, *, caller, source, fact_id, claim):
    cursor.execute(
        "INSERT INTO curated_claim (source_observation_id, scope, fact_id, principal_id, claim)"
        " VALUES (%s, %s, %s, %s, %s::jsonb)",
        [source.observation_id, caller.project, fact_id, caller.credential_id,
         json.dumps(claim, ensure_ascii=False)],
    )


# ---------------------------------------------------------------------------
# Assert.


def assertion_fingerprint(item):
    """What a replay must repeat exactly (api.md §5.2)."""
    shape = {
        "version": "assert/1",
        "subject": item["subject"],
        "predicate": item["predicate"],
        "object": item["object"],
        "statement": item["statement"],
        "data_subject_id": item.get("data_subject_id") or "",
        "valid_from": _iso(item.get("valid_from")) or "",
    }
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).digest()


def _check_assertions(items, v):
    """Step 1 for every item before anything is written: any failure refuses the whole batch."""
    if not 1 <= len(items) <= MAX_BATCH:
        raise _invalid("a batch holds 1 to 20 records")
    keys = [item["idempotency_key"] for item in items]
    if len(set(keys)) != len(keys):
        raise _invalid("idempotency keys must be unique within the batch")
    specs = []
    for item in items:
        spec = v.by_name.get(item["predicate"])
        if spec is None:
            raise _invalid("the predicate is not in the vocabulary")
        subject = normalize(item["subject"])
        if not subject or subject in v.unresolvable:
            raise _invalid("the subject cannot be resolved")
        speaker_end = subject in v.speaker_terms or normalize(item["object"]) in v.speaker_terms
        if speaker_end and not item.get("data_subject_id"):
            raise _invalid("a first-person record needs a data_subject_id")
        specs.append(spec)
    return specs


def _assert_replay(cursor, project, digest, fingerprint):
    """The original receipt for a replay, None for a new key; 409 for a changed item or an erased source."""
    advisory_xact_lock(cursor, "observe-retry", project, digest)  # assertion keys share observe's table
    cursor.execute(
        "SELECT r.observation_id, r.request_digest, c.fact_id, f.version FROM observation_retry r"
        " LEFT JOIN curated_claim c ON c.source_observation_id = r.observation_id"
        " LEFT JOIN fact f ON f.scope = r.scope AND f.fact_id = c.fact_id"
        " WHERE r.scope = %s AND r.key_digest = %s FOR UPDATE OF r",
        [project, digest],
    )
    row = cursor.fetchone()
    if row is None:
        return None
    observation_id, stored, fact_id, version = row
    # A tombstone (erased source), a different item, or a record that no longer exists (purged).
    if observation_id is None or bytes(stored) != fingerprint or version is None:
        raise Conflict("idempotency_conflict", "this idempotency key was used for a different record")
    return {"id": str(fact_id), "version": str(version), "source_observation_id": str(observation_id),
            "replayed": True}


def _assert_one(cursor, *, caller, item, spec, v):
    digest = key_digest(item["idempotency_key"], prefix=ASSERT_KEY_PREFIX)
    fingerprint = assertion_fingerprint(item)
    replay = _assert_replay(cursor, caller.project, digest, fingerprint)
    if replay is not None:
        return replay
    subject_id = item.get("data_subject_id") or None
    source = _append_curated(cursor, caller=caller, statement=item["statement"], data_subject_id=subject_id)
    claim = _curated_claim(spec, subject=item["subject"], object=item["object"], statement=item["statement"],
                           speaker_terms=v.speaker_terms)
    fact_id, version, _ = _write(cursor, caller=caller, source=source, claim=claim, speaker_terms=v.speaker_terms,
                                 valid_from=item.get("valid_from") or source.occurred_at)
    _insert_curated_claim(cursor, caller=caller, source=source, fact_id=fact_id, claim={
        "subject": item["subject"], "predicate": item["predicate"], "object": item["object"],
        "statement": item["statement"], "data_subject_id": subject_id, "valid_from": _iso(item.get("valid_from")),
    })
    cursor.execute(
        "INSERT INTO observation_retry (scope, key_digest, request_digest, observation_id) VALUES (%s, %s, %s, %s)",
        [caller.project, digest, fingerprint, source.observation_id],
    )
    return {"id": fact_id, "version": version, "source_observation_id": source.observation_id, "replayed": False}


def assert_records(*, caller, items):
    """Assert 1–20 curated records. Items: idempotency_key (canonical UUID), subject, predicate, object,
    statement, optional data_subject_id and valid_from. Returns {id, version, source_observation_id,
    replayed} per item, in request order."""
    v = vocab.load()
    specs = _check_assertions(items, v)
    with transaction.atomic(), connection.cursor() as cursor:
        out = [_assert_one(cursor, caller=caller, item=item, spec=spec, v=v) for item, spec in zip(items, specs)]
        recompute_watermark(cursor, caller.project)
        audit.record(op="record.assert", principal=caller.credential_id, principal_kind="credential",
                     project=caller.project, magnitude=len(items))
    return out


# ---------------------------------------------------------------------------
# Retract.


@dataclass
class _Target:
    """One locked record and what a retraction or correction needs to know about it."""

    fact_id: str
    version: str
    current: bool
    subject_entity: object
    predicate: str
    data_subject_id: str | None
    subject_kind: str | None
    subject_canonical: str | None
    signature: bytes
    sources: list


def _end_key(kind, speaker_subject_id, normalized_name):
    """The end keys the claim writer used, read back from the stored entity."""
    if kind is None:
        return ("none", "")
    if kind == "speaker":
        return ("speaker", speaker_subject_id)
    return ("named", normalized_name)


def _lock_targets(cursor, project, fact_ids, *, lock_subjects=False):
    """Take the sorted claim-source locks for every evidence source, then the facts FOR UPDATE.
    A correction also locks the subject entities first, in the claim writer's order (entity, then
    slot facts), so it cannot deadlock with formation superseding in the same slot."""
    cursor.execute(
        "SELECT DISTINCT source_observation_id, source_ordinal FROM fact_evidence"
        " WHERE scope = %s AND fact_id = ANY(%s::uuid[])",
        [project, fact_ids],
    )
    if len(cursor.fetchall()) > MAX_EVIDENCE_SOURCES:
        raise _mutation_limit()
    cursor.execute(
        "SELECT DISTINCT source_observation_id::text FROM fact_evidence"
        " WHERE scope = %s AND fact_id = ANY(%s::uuid[]) ORDER BY 1",
        [project, fact_ids],
    )
    observations = [row[0] for row in cursor.fetchall()]
    for observation_id in observations:
        advisory_xact_lock(cursor, "claim-source", project, observation_id)
    # The row locks serialize with an erasure's FOR UPDATE, as every formation writer's do.
    cursor.execute(
        "SELECT 1 FROM observation WHERE scope = %s AND observation_id = ANY(%s::uuid[])"
        " ORDER BY observation_id FOR KEY SHARE",
        [project, observations],
    )
    if lock_subjects:
        # subject_entity_id never changes on a fact, so reading it before the fact lock is stable.
        cursor.execute(
            "SELECT 1 FROM entity WHERE scope = %s AND entity_id IN (SELECT subject_entity_id FROM fact"
            " WHERE scope = %s AND fact_id = ANY(%s::uuid[])) ORDER BY entity_id FOR NO KEY UPDATE",
            [project, project, fact_ids],
        )
    cursor.execute(
        "SELECT f.fact_id::text, f.version::text, upper_inf(f.valid) AND upper_inf(f.known), f.subject_entity_id,"
        " f.predicate, f.data_subject_id, s.identity_kind, s.speaker_subject_id, s.normalized_name,"
        " s.canonical_name, o.identity_kind, o.speaker_subject_id, o.normalized_name"
        " FROM fact f LEFT JOIN entity s ON s.entity_id = f.subject_entity_id"
        " LEFT JOIN entity o ON o.entity_id = f.object_entity_id"
        " WHERE f.scope = %s AND f.fact_id = ANY(%s::uuid[]) ORDER BY f.fact_id FOR UPDATE OF f",
        [project, fact_ids],
    )
    targets = {}
    for row in cursor.fetchall():
        (fact_id, version, current, subject_entity, predicate, data_subject_id, s_kind, s_speaker, s_name,
         s_canonical, o_kind, o_speaker, o_name) = row
        signature = ids.claim_signature(predicate, _end_key(s_kind, s_speaker, s_name),
                                        _end_key(o_kind, o_speaker, o_name))
        targets[fact_id] = _Target(fact_id, version, current, subject_entity, predicate, data_subject_id, s_kind,
                                   s_canonical, signature, [])
    cursor.execute(
        "SELECT fact_id::text, source_observation_id::text, source_ordinal FROM fact_evidence"
        " WHERE scope = %s AND fact_id = ANY(%s::uuid[]) ORDER BY 1, 2, 3",
        [project, fact_ids],
    )
    for fact_id, observation_id, ordinal in cursor.fetchall():
        if (observation_id, ordinal) not in targets[fact_id].sources:
            targets[fact_id].sources.append((observation_id, ordinal))
    return targets


def _retract_within(cursor, *, caller, items, require_subject=False):
    """Retract inside the caller's transaction; no ledger row. Items: {id, expected_version} (canonical
    UUIDs). Returns one dict per item with the new version and the knowledge end (t_end)."""
    if not 1 <= len(items) <= MAX_BATCH:
        raise _invalid("a batch holds 1 to 20 records")
    fact_ids = [item["id"] for item in items]
    if len(set(fact_ids)) != len(fact_ids):
        raise _invalid("record ids must be distinct within the batch")
    targets = _lock_targets(cursor, caller.project, fact_ids, lock_subjects=require_subject)
    for item in items:
        target = targets.get(item["id"])
        if target is None:
            raise NotFound("not_found", "no such record")
    for item in items:
        target = targets[item["id"]]
        if not target.current or target.version != item["expected_version"]:
            raise _record_conflict()
        if require_subject and target.subject_entity is None:
            raise _invalid("the record has no resolved subject")
    operation_id = str(uuid.uuid4())
    out = []
    for item in items:
        target = targets[item["id"]]
        # Knowledge ends now, or 1 µs after it began if the clock lags a forced start: never empty.
        cursor.execute(
            "UPDATE fact SET known = tstzrange(lower(known),"
            " greatest(clock_timestamp(), lower(known) + interval '1 microsecond'))"
            " WHERE scope = %s AND fact_id = %s RETURNING version::text, upper(known)",
            [caller.project, target.fact_id],
        )
        version, t_end = cursor.fetchone()
        for observation_id, ordinal in target.sources:
            cursor.execute(
                "INSERT INTO record_retraction (scope, target_fact_id, source_observation_id, source_ordinal,"
                " claim_signature, operation_id, target_version, principal_id, retracted_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [caller.project, target.fact_id, observation_id, ordinal, target.signature, operation_id,
                 target.version, caller.credential_id, t_end],
            )
        out.append({"id": target.fact_id, "version": version, "operation_id": operation_id,
                    "principal_id": caller.credential_id, "retracted_at": t_end, "target": target})
    return out


def _public_retraction(result):
    return {key: value for key, value in result.items() if key != "target"}


def retract_records(*, caller, items):
    """Withdraw 1–20 current records (governance.md §7.2). Items: {id, expected_version}."""
    with transaction.atomic(), connection.cursor() as cursor:
        out = _retract_within(cursor, caller=caller, items=items)
        audit.record(op="record.retract", principal=caller.credential_id, principal_kind="credential",
                     project=caller.project, magnitude=len(items))
    return [_public_retraction(result) for result in out]


# ---------------------------------------------------------------------------
# Correct.


def _correct_within(cursor, *, caller, items):
    """Correct inside the caller's transaction; no ledger row. Items: {id, expected_version, object,
    statement, optional valid_from}."""
    v = vocab.load()
    withdrawn = _retract_within(cursor, caller=caller, require_subject=True,
                                items=[{"id": i["id"], "expected_version": i["expected_version"]} for i in items])
    out = []
    for item, result in zip(items, withdrawn):
        target, t_end = result["target"], result["retracted_at"]
        subject = SPEAKER_SUBJECT if target.subject_kind == "speaker" else target.subject_canonical
        source = _append_curated(cursor, caller=caller, statement=item["statement"],
                                 data_subject_id=target.data_subject_id)
        claim = _curated_claim(v.by_name[target.predicate], subject=subject, object=item["object"],
                               statement=item["statement"], speaker_terms=v.speaker_terms)
        valid_from = item.get("valid_from") or t_end
        # The replacement becomes known exactly when the original stopped being known.
        fact_id, version, subject_entity = _write(cursor, caller=caller, source=source, claim=claim,
                                                  speaker_terms=v.speaker_terms, valid_from=valid_from,
                                                  known_from=t_end)
        if subject_entity != target.subject_entity:
            raise _record_conflict("the record's subject can no longer be resolved")
        cursor.execute(
            "UPDATE record_retraction SET replacement_observation_id = %s, replacement_fact_id = %s"
            " WHERE scope = %s AND operation_id = %s AND target_fact_id = %s",
            [source.observation_id, fact_id, caller.project, result["operation_id"], target.fact_id],
        )
        _insert_curated_claim(cursor, caller=caller, source=source, fact_id=fact_id, claim={
            "subject": subject, "predicate": target.predicate, "object": item["object"],
            "statement": item["statement"], "data_subject_id": target.data_subject_id,
            "valid_from": _iso(valid_from),
        })
        out.append({"original_id": target.fact_id, "id": fact_id, "version": version,
                    "source_observation_id": source.observation_id})
    recompute_watermark(cursor, caller.project)
    return out


def correct_records(*, caller, items):
    """Replace the object of 1–20 current records (governance.md §7.3)."""
    with transaction.atomic(), connection.cursor() as cursor:
        out = _correct_within(cursor, caller=caller, items=items)
        audit.record(op="record.correct", principal=caller.credential_id, principal_kind="credential",
                     project=caller.project, magnitude=len(items))
    return out


def retract_within(cursor, *, caller, items):
    """For feedback promotion: a retraction inside the promotion's transaction (no ledger row)."""
    return [_public_retraction(result) for result in _retract_within(cursor, caller=caller, items=items)]


def correct_within(cursor, *, caller, items):
    """For feedback promotion: a correction inside the promotion's transaction (no ledger row)."""
    return _correct_within(cursor, caller=caller, items=items)


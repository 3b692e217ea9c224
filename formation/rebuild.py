"""Extractor rebuild (issue 12): re-form a project's stored turns under another extractor version, one
source at a time, resumable from a durable cursor and fenced by a lease. Design notes: docs/decisions.md.

Per source: the proposer runs first (no transaction open), then the gates, then ONE transaction replaces the
source's regenerated reading (facts, evidence, refusals, pin) with the new one. Human records win, replaced
facts stay as history (knowledge closed, never deleted), and an erased source gets nothing written.
"""
import functools
import importlib
import logging
import re
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, IntegrityError, close_old_connections, connection, transaction

from core import audit
from core.closed_sets import FIXED_EXTRACTOR_VERSIONS, MODEL_EXTRACTOR_VERSION_RE
from core.errors import Conflict, Invalid, NotFound, Unavailable
from core.text import normalize
from memory.entity_purge import purge_within

from . import ids
from . import vocabulary as vocab
from .claims import Claim, ClaimRefused, Source, claim_fact_id, write_claim
from .driver import drain_unlock, formation_commits, try_drain_lock
from .extractor import model_config_from_settings
from .gates import Admitted, judge
from .model_client import ModelProposer
from .proposals import Message, ProposerError

logger = logging.getLogger(__name__)

CURATED_VERSION = "curated/v1"
# The rules proposers a rebuild can target, by version; a module that is not installed is not a target.
RULES_TARGETS = {
    "rules/v1": ("formation.rules", "RulesProposer"),
    "rules/v2": ("formation.rules_v2", "RulesV2Proposer"),
}
MODEL_TARGET = "model"  # the configured model, whatever its version hash is
BATCH = 64  # sources read per cursor query
# Published by name, like formation.kick: the task module imports this one, so this one may not import it.
SLICE_TASK = "formation.tasks.rebuild_slice"
CLEAN_UP_BATCH = 32  # orphaned entities purged per transaction (one ledger row each)
MAX_SOURCE_ATTEMPTS = 3  # proposer failures at one source before the job skips it
READ_AHEAD = 4  # sources proposed concurrently ahead of the writer


class LeaseLost(Exception):
    """Another worker holds the job now (this one's lease expired) or it was cancelled: stop, write nothing."""


def _invalid(message):
    return Invalid("invalid_rebuild", message)


# ---------------------------------------------------------------------------
# Targets: which extractor versions this process can run.

_proposers = {}
_unbuildable_warned = set()  # job ids whose unbuildable target this process has reported


def _model_proposer():
    config = model_config_from_settings(settings)
    if config is None:
        return None
    v = vocab.load()
    return ModelProposer(config, vocabulary=v.predicates, unresolvable=sorted(v.unresolvable))


def proposer_for(version):
    """A proposer whose version is exactly `version` ("model": the configured model, whatever its version),
    or None when this process cannot run it."""
    if version in _proposers:
        return _proposers[version]
    proposer = None
    if version in RULES_TARGETS:
        module_name, class_name = RULES_TARGETS[version]
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            module = None
        if module is not None and version in FIXED_EXTRACTOR_VERSIONS:
            proposer = getattr(module, class_name)()
    elif version == MODEL_TARGET or _is_model_version(version):
        proposer = _model_proposer()
    if proposer is None or (version != MODEL_TARGET and proposer.version != version):
        return None
    _proposers[proposer.version] = proposer
    return proposer


def _is_model_version(version):
    return re.fullmatch(MODEL_EXTRACTOR_VERSION_RE, version or "") is not None


def resolve_target(name):
    """The proposer a rebuild to `name` would run ("rules/v1", "rules/v2", "model" or "extract/v2:<hash>")."""
    name = (name or "").strip()
    if name == CURATED_VERSION or not (name in RULES_TARGETS or name == MODEL_TARGET or _is_model_version(name)):
        raise _invalid("the target is not an extractor version a rebuild can run")
    proposer = proposer_for(name)
    if proposer is None:
        raise _invalid("this server cannot run that extractor version (not installed or not configured)")
    return proposer


def project_extractor(project):
    """The extractor version a rebuild chose for this project: the running job's target, else the newest
    completed job's; None when no rebuild ever changed it (the configured extractor forms its turns)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT target_version FROM formation_rebuild WHERE scope = %s AND state IN ('running', 'completed')"
            " ORDER BY state = 'running' DESC, finished_at DESC NULLS FIRST LIMIT 1", [project])
        row = cursor.fetchone()
    return row[0] if row else None


def project_proposer(project, default):
    """The proposer the driver forms this project's new turns with (`default` unless a rebuild chose one)."""
    version = project_extractor(project)
    if version is None or version == default.version:
        return default
    proposer = proposer_for(version)
    if proposer is None:
        logger.warning("the project's rebuilt extractor cannot be built here; forming with the configured one")
        return default
    return proposer


# ---------------------------------------------------------------------------
# Reading one source: proposals (outside any transaction), then the gates.


@dataclass
class Planned:
    """One proposal after the gates: a claim to write (with the id it would get) or a refusal."""

    source: Source
    proposal: object
    claim: Claim | None = None
    fact_id: str | None = None
    reason: str | None = None


@dataclass
class Reading:
    observation_id: str
    log_offset: int
    planned: list = field(default_factory=list)

    def expected(self):
        return {p.fact_id: p.claim.predicate for p in self.planned if p.fact_id is not None}


def _messages(observation_ids):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.observation_id::text, m.ordinal, m.role, m.content, m.occurred_at, o.data_subject_id"
            " FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id"
            " WHERE m.observation_id = ANY(%s::uuid[]) ORDER BY m.observation_id, m.ordinal",
            [list(observation_ids)])
        out = {}
        for oid, *row in cursor.fetchall():
            out.setdefault(oid, []).append(row)
    return out


def read_source(project, observation_id, log_offset, messages, proposer, v):
    """Propose and judge every message of one turn. Mirrors driver.form_turn's per-message steps; raises
    ProposerError. Pure apart from the proposer call: nothing is written."""
    reading = Reading(str(observation_id), log_offset)
    for ordinal, role, content, occurred_at, subject in messages:
        proposals = proposer.propose(Message(role=role, content=content, occurred_at=occurred_at), v.predicates)
        source = Source(project=project, observation_id=str(observation_id), ordinal=ordinal, role=role,
                        data_subject_id=subject, occurred_at=occurred_at, extractor_version=proposer.version)
        admitted_keys = set()
        for proposal in proposals:
            verdict = judge(proposal, content=content, vocabulary=v.by_name, unresolvable=v.unresolvable,
                            admitted=admitted_keys)
            if not isinstance(verdict, Admitted):
                reading.planned.append(Planned(source, proposal, reason=verdict.reason))
                continue
            claim = Claim(
                predicate=verdict.predicate.name, cardinality=verdict.predicate.cardinality,
                subject=proposal.subject, object=proposal.object, statement=proposal.statement,
                confidence=verdict.confidence, subject_type=verdict.subject_type, object_type=verdict.object_type,
                quote=verdict.quote, byte_start=verdict.byte_start, byte_end=verdict.byte_end,
                valid_from=proposal.valid_from, valid_until=proposal.valid_until)
            fact_id = claim_fact_id(source=source, claim=claim, speaker_terms=v.speaker_terms)
            reading.planned.append(Planned(source, proposal, claim, str(fact_id) if fact_id else None))
    return reading


def _old_reading(cursor, project, observation_id):
    """The source's regenerated facts still known now: {fact_id: predicate}. Curated evidence is never
    part of a turn's reading (human records live on their own observations)."""
    cursor.execute(
        "SELECT f.fact_id::text, f.predicate FROM fact_evidence x JOIN fact f ON f.fact_id = x.fact_id"
        " WHERE x.scope = %s AND x.source_observation_id = %s AND x.authored_by IS NULL"
        " AND x.extractor_version <> %s AND upper_inf(f.known)",
        [project, observation_id, CURATED_VERSION])
    return dict(cursor.fetchall())


# ---------------------------------------------------------------------------
# Writing one source's new reading: one transaction.


@dataclass
class SourceOutcome:
    state: str  # "acknowledged", "skipped", "gone"
    gained: Counter = field(default_factory=Counter)
    lost: Counter = field(default_factory=Counter)


def _fence(cursor, job_id, owner, lease_seconds):
    """Hold the job row for this transaction, and only while this worker's lease is live."""
    cursor.execute(
        "UPDATE formation_rebuild SET lease_until = now() + make_interval(secs => %s)"
        " WHERE job_id = %s AND state = 'running' AND lease_owner = %s AND lease_until > now()"
        " RETURNING target_version",
        [float(lease_seconds), job_id, owner])
    row = cursor.fetchone()
    if row is None:
        raise LeaseLost()
    return row[0]


def _close_lost(cursor, project, observation_id, lost_ids):
    """Close the knowledge of facts the new reading does not make, and splice each out of its slot's
    chain: the value it had closed takes back its validity (archived first, like any supersession)."""
    if not lost_ids:
        return
    cursor.execute(
        "UPDATE fact SET known = tstzrange(lower(known), greatest(clock_timestamp(), lower(known)"
        " + interval '1 microsecond')) WHERE scope = %s AND fact_id = ANY(%s::uuid[])"
        " RETURNING fact_id::text, upper(known), upper(valid), upper_inf(valid), superseded_by_id,"
        " supersession_source_id, lower(valid)",
        [project, list(lost_ids)])
    closed = sorted(cursor.fetchall(), key=lambda row: row[6])
    for fact_id, t_end, valid_until, open_ended, successor, successor_source, _ in closed:
        cursor.execute("SELECT fact_id::text FROM fact WHERE superseded_by_id = %s AND upper_inf(known)"
                       " ORDER BY fact_id FOR UPDATE", [fact_id])
        for (previous,) in cursor.fetchall():
            cursor.execute(
                "WITH t AS (SELECT greatest(%s::timestamptz, lower(known) + interval '1 microsecond') AS at"
                "  FROM fact WHERE fact_id = %s),"
                " h AS (INSERT INTO fact_history (history_id, scope, fact_id, valid, known, source_observation_id)"
                "  SELECT gen_random_uuid(), f.scope, f.fact_id, f.valid, tstzrange(lower(f.known), t.at), %s::uuid"
                "  FROM fact f, t WHERE f.fact_id = %s RETURNING history_id),"
                " inherited AS (INSERT INTO projection_dependency (scope, source_observation_id, projection_kind,"
                "  projection_id, data_subject_id, retention_until, pipeline_version, registered_at)"
                "  SELECT d.scope, d.source_observation_id, 'fact_history', h.history_id::text, d.data_subject_id,"
                "  d.retention_until, 'v1', now() FROM projection_dependency d, h"
                "  WHERE d.projection_kind = 'fact' AND d.fact_ref = %s ON CONFLICT DO NOTHING),"
                " own AS (INSERT INTO projection_dependency (scope, source_observation_id, projection_kind,"
                "  projection_id, data_subject_id, retention_until, pipeline_version, registered_at)"
                "  SELECT o.scope, o.observation_id, 'fact_history', h.history_id::text, o.data_subject_id,"
                "  o.retention_until, 'v1', now() FROM observation o, h WHERE o.observation_id = %s"
                "  ON CONFLICT DO NOTHING)"
                " UPDATE fact SET valid = tstzrange(lower(valid), %s), known = tstzrange(t.at, NULL),"
                " superseded_by_id = %s, supersession_source_id = %s FROM t WHERE fact.fact_id = %s",
                [t_end, previous, observation_id, previous, previous, observation_id,
                 None if open_ended else valid_until, successor, successor_source, previous])


def _curated_holds_slot(cursor, source, claim, speaker_terms):
    """A current human record in the single-valued slot this claim would supersede: the human wins."""
    speaker = normalize(claim.subject) in speaker_terms
    cursor.execute(
        "SELECT 1 FROM fact f JOIN entity e ON e.entity_id = f.subject_entity_id"
        " WHERE f.scope = %s AND f.predicate = %s AND coalesce(f.data_subject_id, '') = %s"
        " AND upper_inf(f.valid) AND upper_inf(f.known) AND e.identity_kind = %s"
        " AND coalesce(e.speaker_subject_id, e.normalized_name) = %s"
        " AND EXISTS (SELECT 1 FROM fact_evidence x WHERE x.fact_id = f.fact_id AND x.extractor_version = %s)"
        " LIMIT 1",
        [source.project, claim.predicate, source.data_subject_id or "", "speaker" if speaker else "named",
         (source.data_subject_id or "") if speaker else normalize(claim.subject), CURATED_VERSION])
    return cursor.fetchone() is not None


def _write_reading(cursor, reading, kept, existing, speaker_terms, outcome):
    for item in reading.planned:
        source = item.source
        if item.claim is None:
            _refuse(cursor, item, item.reason)
            continue
        claim = item.claim
        if item.fact_id in kept:
            # The same fact, current and never retracted (a retraction closes knowledge): only its evidence
            # changes to the new extractor's, so the claim writer has nothing to decide.
            _insert_evidence(cursor, source, claim, item.fact_id)
            continue
        new = item.fact_id not in existing
        if new and claim.cardinality == "one" and _curated_holds_slot(cursor, source, claim, speaker_terms):
            _refuse(cursor, item, "conflicting_value")
            continue
        try:
            with transaction.atomic():
                fact_id = write_claim(cursor, source=source, claim=claim, speaker_terms=speaker_terms)
        except ClaimRefused as refusal:
            _refuse(cursor, item, refusal.reason)
            continue
        if fact_id is None:
            continue  # a person retracted this claim: it never comes back
        fact_id = str(fact_id)
        if fact_id not in existing:
            existing.add(fact_id)
            outcome.gained[claim.predicate] += 1


def _insert_evidence(cursor, source, claim, fact_id):
    cursor.execute(
        "INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
        " byte_end, extractor_version, authored_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, NULL)"
        " ON CONFLICT DO NOTHING",
        [source.project, fact_id, source.observation_id, source.ordinal, claim.quote, claim.byte_start,
         claim.byte_end, source.extractor_version])


def _refuse(cursor, item, reason):
    """One refusal with the proposer's own words, registered for erasure, in one round trip (the caller holds
    the source lock and has moved the pin)."""
    p, source = item.proposal, item.source
    claim_id = str(ids.rejected_claim_id(source.project, source.observation_id, source.ordinal, p.predicate,
                                         p.statement, p.quote, reason, source.extractor_version))
    cursor.execute(
        "WITH r AS (INSERT INTO rejected_claim (rejected_claim_id, scope, source_observation_id, source_ordinal,"
        "  predicate, subject, object, statement, quote, reason, extractor_version, data_subject_id, recorded_at)"
        "  SELECT %s::uuid, o.scope, o.observation_id, %s::integer, %s::text, %s::text, %s::text, %s::text,"
        "  %s::text, %s::text, %s::text, o.data_subject_id, now()"
        "  FROM observation o WHERE o.observation_id = %s ON CONFLICT (rejected_claim_id) DO NOTHING"
        "  RETURNING rejected_claim_id)"
        " INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
        " data_subject_id, retention_until, pipeline_version, registered_at)"
        " SELECT o.scope, o.observation_id, 'rejected_claim', r.rejected_claim_id::text, o.data_subject_id,"
        " o.retention_until, 'v1', now() FROM r, observation o WHERE o.observation_id = %s ON CONFLICT DO NOTHING",
        [claim_id, source.ordinal, p.predicate, p.subject, p.object, p.statement, p.quote, reason,
         source.extractor_version, source.observation_id, source.observation_id])


def replace_reading(*, project, job_id, owner, reading, speaker_terms, lease_seconds, cursor_to=None,
                    skipped_before=0):
    """The one transaction for one source. `cursor_to` moves the job's cursor to this source's offset (None
    for a straggler past the job's range); `skipped_before` counts sources passed over on the way here."""
    outcome = SourceOutcome("acknowledged")
    with transaction.atomic(), connection.cursor() as cursor:
        # One round trip: the fence (the job row, while this lease is live), then the claim-source lock every
        # formation writer takes, then the row's key share (an erasure's FOR UPDATE queues behind it).
        cursor.execute(
            "WITH j AS (UPDATE formation_rebuild SET lease_until = now() + make_interval(secs => %s)"
            "  WHERE job_id = %s AND state = 'running' AND lease_owner = %s AND lease_until > now()"
            "  RETURNING target_version)"
            " SELECT j.target_version, s.extractor_version, s.formed FROM j LEFT JOIN LATERAL ("
            "  SELECT o.extractor_version, o.formed_at IS NOT NULL AS formed FROM"
            "  (SELECT pg_advisory_xact_lock(hashtextextended('memoir:claim-source:' || %s || ':' || %s, 0))) l,"
            "  observation o WHERE o.scope = %s AND o.observation_id = %s FOR KEY SHARE OF o) s ON true",
            [float(lease_seconds), job_id, owner, project, reading.observation_id, project, reading.observation_id])
        row = cursor.fetchone()
        if row is None:
            raise LeaseLost()
        target, pin, formed = row
        if formed is None:
            outcome.state = "gone"  # erased before the job reached it: in neither count, nothing written
        elif pin == target or not formed:
            outcome.state = "skipped"
        else:
            _replace(cursor, project, reading, target, speaker_terms, outcome)
        _advance(cursor, job_id, outcome, cursor_to=cursor_to, skipped_before=skipped_before)
    return outcome


def _replace(cursor, project, reading, target, speaker_terms, outcome):
    expected = reading.expected()
    # The old reading (after the lock, so a retraction that just committed is seen) and which of the new
    # reading's fact ids already exist, in one round trip.
    cursor.execute(
        "SELECT f.fact_id::text, f.predicate, true FROM fact_evidence x JOIN fact f ON f.fact_id = x.fact_id"
        " WHERE x.scope = %s AND x.source_observation_id = %s AND x.authored_by IS NULL"
        " AND x.extractor_version <> %s AND upper_inf(f.known)"
        " UNION ALL SELECT fact_id::text, predicate, false FROM fact WHERE fact_id = ANY(%s::uuid[])",
        [project, reading.observation_id, CURATED_VERSION, list(expected)])
    old, existing = {}, set()
    for fact_id, predicate, is_old in cursor.fetchall():
        if is_old:
            old[fact_id] = predicate
        else:
            existing.add(fact_id)
    lost = set(old) - set(expected)
    kept = set(old) & set(expected)
    _close_lost(cursor, project, reading.observation_id, lost)
    outcome.lost.update(old[fact_id] for fact_id in lost)
    # Kept facts lose the old extractor's evidence (the new one's is written below); refusals are diagnostics
    # of a reading, not history, so the old extractor's go with it; then the pin moves (the trigger lets it
    # only for the running job's target).
    cursor.execute(
        "WITH e AS (DELETE FROM fact_evidence WHERE scope = %s AND source_observation_id = %s"
        "  AND fact_id = ANY(%s::uuid[]) AND authored_by IS NULL),"
        " r AS (DELETE FROM rejected_claim WHERE scope = %s AND source_observation_id = %s)"
        " UPDATE observation SET extractor_version = %s WHERE scope = %s AND observation_id = %s",
        [project, reading.observation_id, list(kept), project, reading.observation_id, target, project,
         reading.observation_id])
    _write_reading(cursor, reading, kept, existing, speaker_terms, outcome)


def _advance(cursor, job_id, outcome, *, cursor_to, skipped_before=0):
    acknowledged = int(outcome.state == "acknowledged")
    skipped = skipped_before + int(outcome.state == "skipped")
    cursor.execute(
        "UPDATE formation_rebuild SET reinterpreted_through = coalesce(%s, reinterpreted_through),"
        " sources_acknowledged = sources_acknowledged + %s, sources_skipped = sources_skipped + %s,"
        " facts_gained = facts_gained + %s, facts_lost = facts_lost + %s, source_attempts = 0"
        " WHERE job_id = %s",
        [cursor_to, acknowledged, skipped, sum(outcome.gained.values()), sum(outcome.lost.values()), job_id])


# ---------------------------------------------------------------------------
# Services: start, cancel; the status selectors.


def _job_dict(row):
    keys = ("job_id", "project", "target_version", "state", "clean_up", "reinterpreting_through",
            "reinterpreted_through", "sources_acknowledged", "sources_skipped", "facts_gained", "facts_lost",
            "entities_purged", "facts_purged", "started_by", "started_at", "finished_at", "lease_until")
    out = dict(zip(keys, row))
    out["job_id"] = str(out["job_id"])
    return out


_JOB_COLUMNS = ("job_id, scope, target_version, state, clean_up, reinterpreting_through, reinterpreted_through,"
                " sources_acknowledged, sources_skipped, facts_gained, facts_lost, entities_purged, facts_purged,"
                " started_by, started_at, finished_at, lease_until")


def latest_job(*, project):
    """The project's newest rebuild job as a dict, or None."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_JOB_COLUMNS} FROM formation_rebuild WHERE scope = %s"
                       " ORDER BY started_at DESC, job_id LIMIT 1", [project])
        row = cursor.fetchone()
    return _job_dict(row) if row else None


def jobs(*, limit=50):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_JOB_COLUMNS} FROM formation_rebuild ORDER BY started_at DESC LIMIT %s", [limit])
        return [_job_dict(row) for row in cursor.fetchall()]


def _project_exists(cursor, project):
    cursor.execute("SELECT 1 FROM project WHERE name = %s FOR KEY SHARE", [project])
    if cursor.fetchone() is None:
        raise NotFound("not_found", "no such project")


def start(*, project, target, principal, principal_kind="operator", dry_run=False, clean_up=True, kick=None):
    """Start a rebuild of `project` to `target`, or (dry_run) report what it would change and write nothing
    but the ledger row. Returns the job dict, or the preview dict for a dry run."""
    proposer = resolve_target(target)
    if dry_run:
        with connection.cursor() as cursor:
            _project_exists(cursor, project)
        report = preview(project=project, proposer=proposer)
        audit.record(op="formation.rebuild", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=report["sources"])
        return report
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            _project_exists(cursor, project)
            cursor.execute(
                "INSERT INTO formation_rebuild (job_id, scope, target_version, state, clean_up,"
                " reinterpreting_through, sources_acknowledged, sources_skipped, facts_gained, facts_lost,"
                " entities_purged, facts_purged, source_attempts, started_by, started_at)"
                " SELECT %s::uuid, %s::text, %s::text, 'running', %s::boolean, coalesce((SELECT max(log_offset)"
                "  FROM observation WHERE scope = %s), -1), 0, 0, 0, 0, 0, 0, 0, %s::text, now()",
                [str(uuid.uuid4()), project, proposer.version, bool(clean_up), project, principal])
            audit.record(op="formation.rebuild.start", principal=principal, principal_kind=principal_kind,
                         project=project, magnitude=1)
            if kick is not None:
                transaction.on_commit(lambda: kick(project), robust=True)
    except IntegrityError as exc:
        if "formation_rebuild_one_running" in str(exc.__cause__ or exc):
            raise Conflict("rebuild_running", "a rebuild is already running for this project") from None
        raise
    return latest_job(project=project)


def cancel(*, project, principal, principal_kind="operator"):
    """Stop the running job. Waits for the source transaction in flight (it holds the job row), so every
    source carries exactly one reading afterwards: the old one or the new one."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE formation_rebuild SET state = 'cancelled', finished_at = now(), lease_owner = NULL,"
                       " lease_until = NULL WHERE scope = %s AND state = 'running' RETURNING job_id", [project])
        if cursor.fetchone() is None:
            raise NotFound("not_found", "no rebuild is running for this project")
        audit.record(op="formation.rebuild.cancel", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)
    return latest_job(project=project)


# ---------------------------------------------------------------------------
# Dry run.


def _eligible(cursor, project, after, *, upto=None, limit=BATCH):
    cursor.execute(
        "SELECT observation_id::text, log_offset, kind, formed_at IS NOT NULL, parked_at IS NOT NULL,"
        " extractor_version FROM observation WHERE scope = %s AND log_offset > %s"
        " AND (%s::bigint IS NULL OR log_offset <= %s::bigint) ORDER BY log_offset LIMIT %s",
        [project, after, upto, upto, limit])
    return cursor.fetchall()


def preview(*, project, proposer):
    """How many facts each predicate would gain and lose if every formed turn were re-formed by `proposer`
    now. Reads only. Store-side refusals (a conflicting value) are not predicted."""
    v = vocab.load()
    gained, lost = Counter(), Counter()
    sources, after = 0, -1
    while True:
        with connection.cursor() as cursor:
            rows = _eligible(cursor, project, after)
        if not rows:
            break
        after = rows[-1][1]
        work = [r for r in rows if r[2] == "turn" and r[3] and r[5] != proposer.version]
        messages = _messages([r[0] for r in work])
        for oid, offset, *_ in work:
            try:
                reading = read_source(project, oid, offset, messages.get(oid, []), proposer, v)
            except ProposerError as exc:
                raise Unavailable("extractor_unavailable", "the target extractor failed during the dry run") from exc
            with connection.cursor() as cursor:
                old = _old_reading(cursor, project, oid)
                expected = reading.expected()
                new_ids = set(expected) - set(old)
                # A fact the new reading makes that already exists (retracted, or closed earlier) is no gain.
                cursor.execute("SELECT fact_id::text FROM fact WHERE fact_id = ANY(%s::uuid[])", [list(new_ids)])
                new_ids -= {row[0] for row in cursor.fetchall()}
            gained.update(expected[fact_id] for fact_id in new_ids)
            lost.update(p for fact_id, p in old.items() if fact_id not in expected)
            sources += 1
    predicates = {p: {"gain": gained[p], "lose": lost[p]} for p in sorted(set(gained) | set(lost))}
    return {"project": project, "target_version": proposer.version, "dry_run": True, "sources": sources,
            "facts_gained": sum(gained.values()), "facts_lost": sum(lost.values()),
            "predicates": predicates}


# ---------------------------------------------------------------------------
# The worker: one slice of a job (Celery runs it; PostgreSQL holds the state).


@dataclass
class SliceResult:
    state: str  # "idle" (no job or leased elsewhere), "more", "waiting", "unbuildable", "completed", "lost"
    sources: int = 0


def _claim_lease(project, owner, lease_seconds):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE formation_rebuild SET lease_owner = %s, lease_until = now() + make_interval(secs => %s)"
            " WHERE scope = %s AND state = 'running' AND (lease_owner IS NULL OR lease_until <= now())"
            " RETURNING job_id::text, target_version, reinterpreting_through, reinterpreted_through, clean_up,"
            " source_attempts",
            [owner, float(lease_seconds), project])
        return cursor.fetchone()


def _release_lease(job_id, owner):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE formation_rebuild SET lease_owner = NULL, lease_until = NULL"
                       " WHERE job_id = %s AND lease_owner = %s AND state = 'running'", [job_id, owner])


def _note_failure(job_id, owner, lease_seconds, offset, skip):
    """Count a proposer failure at the next source; after MAX_SOURCE_ATTEMPTS the job passes it over."""
    with transaction.atomic(), connection.cursor() as cursor:
        _fence(cursor, job_id, owner, lease_seconds)
        if skip:
            _advance(cursor, job_id, SourceOutcome("skipped"), cursor_to=offset)
        else:
            cursor.execute("UPDATE formation_rebuild SET source_attempts = source_attempts + 1 WHERE job_id = %s",
                           [job_id])


def run_slice(project, *, budget=None, lease_seconds=None):
    """Work on the project's running job for about `budget` seconds under a fresh lease. Returns SliceResult."""
    budget = settings.MEMOIR_REBUILD_SLICE if budget is None else budget
    lease_seconds = settings.MEMOIR_REBUILD_LEASE if lease_seconds is None else lease_seconds
    owner = str(uuid.uuid4())
    claimed = _claim_lease(project, owner, lease_seconds)
    if claimed is None:
        return SliceResult("idle")
    job_id, target, through, done_through, clean_up, attempts = claimed
    proposer = proposer_for(target)
    if proposer is None:
        _release_lease(job_id, owner)
        # Said once per job and process: the sweep retries every few seconds, and make run must stay quiet.
        if job_id not in _unbuildable_warned:
            _unbuildable_warned.add(job_id)
            logger.warning("rebuild target cannot be built in this worker; the job waits for one that can")
        # Not "waiting": the slice must not re-queue itself every second; the beat sweep tries again later.
        return SliceResult("unbuildable")
    v = vocab.load()
    started = time.monotonic()
    result = SliceResult("more")
    cursor_at = -1 if done_through is None else done_through
    # Like formation's own commits (driver.formation_commits): a crash loses only the newest source
    # transactions, in order, each with its cursor move, so the job simply redoes them.
    formation_commits(durable=False)
    try:
        while True:  # at least one source per slice, however small the budget
            with connection.cursor() as cursor:
                rows = _eligible(cursor, project, cursor_at, upto=through)
            if not rows:
                result.state = _finish(project, job_id, owner, target, through, clean_up, proposer, v,
                                       lease_seconds, result)
                return result
            step = _walk(project, job_id, owner, rows, target, proposer, v, lease_seconds, attempts, started,
                         budget, result)
            attempts = 0
            if step is None:
                return result
            cursor_at = step
            if time.monotonic() - started >= budget:
                return result
    except LeaseLost:
        result.state = "lost"
        return result
    finally:
        formation_commits(durable=True)
        if result.state in ("more", "waiting"):
            try:
                _release_lease(job_id, owner)
            except DatabaseError:
                logger.warning("could not release a rebuild lease; it expires on its own")
        if result.sources:
            audit.record_best_effort(op="formation.rebuild", principal=audit.SYSTEM_PRINCIPAL,
                                     principal_kind="system", project=project, magnitude=result.sources)


def _walk(project, job_id, owner, rows, target, proposer, v, lease_seconds, attempts, started, budget, result):
    """Process one batch of rows in log order. Returns the offset reached, or None to end the slice."""
    skipped_before, passed_to = 0, None
    pending = [r for r in rows if r[2] == "turn" and r[3] and not r[4] and r[5] != target]
    messages = _messages([r[0] for r in pending])
    readings = _ReadAhead(project, pending, messages, proposer, v)
    for oid, offset, kind, formed, parked, pin in rows:
        if kind != "turn":
            passed_to = offset  # curated records and artifacts are not readings of an extractor
            continue
        if not formed and not parked:
            _flush(job_id, owner, lease_seconds, passed_to, skipped_before)
            result.state = "waiting"  # the driver has not formed it yet; it forms it under the target
            return None
        if parked or pin == target:
            skipped_before += 1
            passed_to = offset
            continue
        if result.sources and time.monotonic() - started >= budget:
            _flush(job_id, owner, lease_seconds, passed_to, skipped_before)
            return None
        try:
            reading = readings.get(oid)
        except ProposerError:
            _flush(job_id, owner, lease_seconds, passed_to, skipped_before)
            _note_failure(job_id, owner, lease_seconds, offset, skip=attempts + 1 >= MAX_SOURCE_ATTEMPTS)
            result.state = "waiting"
            return None
        replace_reading(project=project, job_id=job_id, owner=owner, reading=reading,
                        speaker_terms=v.speaker_terms, lease_seconds=lease_seconds, cursor_to=offset,
                        skipped_before=skipped_before)
        skipped_before, passed_to = 0, None
        result.sources += 1
    _flush(job_id, owner, lease_seconds, passed_to, skipped_before)
    return rows[-1][1]


class _ReadAhead:
    """Readings of the next few sources, proposed concurrently while the earlier ones are written: a model
    call is mostly waiting. Few at a time (READ_AHEAD), so a slice that stops early wastes little."""

    def __init__(self, project, pending, messages, proposer, v):
        self.project, self.pending, self.messages, self.proposer, self.v = project, pending, messages, proposer, v
        self.position = {row[0]: i for i, row in enumerate(pending)}
        self.futures = {}

    def _read(self, row):
        return read_source(self.project, row[0], row[1], self.messages.get(row[0], []), self.proposer, self.v)

    def get(self, observation_id):
        if observation_id not in self.futures:
            start = self.position[observation_id]
            for row in self.pending[start:start + READ_AHEAD]:
                if row[0] not in self.futures:
                    self.futures[row[0]] = _pool().submit(self._read, row)
        return self.futures.pop(observation_id).result()


@functools.cache
def _pool():
    """The read-ahead pool, made on first use: a process that never rebuilds never holds one (its threads start with
    the first task)."""
    return ThreadPoolExecutor(max_workers=READ_AHEAD, thread_name_prefix="rebuild-read")


def _flush(job_id, owner, lease_seconds, passed_to, skipped):
    if passed_to is None and not skipped:
        return
    with transaction.atomic(), connection.cursor() as cursor:
        _fence(cursor, job_id, owner, lease_seconds)
        _advance(cursor, job_id, SourceOutcome("none"), cursor_to=passed_to, skipped_before=skipped)


def _finish(project, job_id, owner, target, through, clean_up, proposer, v, lease_seconds, result):
    """The range is done. With the driver's lock held (so no drain forms a turn meanwhile), re-form any turn a
    drain that began before the job formed under the old extractor, clean up, and complete the job."""
    if not try_drain_lock(project):
        return "waiting"
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT observation_id::text, log_offset, formed_at IS NOT NULL, extractor_version FROM observation"
                " WHERE scope = %s AND kind = 'turn' AND log_offset > %s AND parked_at IS NULL"
                " AND extractor_version IS DISTINCT FROM %s ORDER BY log_offset",
                [project, through, target])
            stragglers = cursor.fetchall()
        if any(not formed and pin is not None for _, _, formed, pin in stragglers):
            return "waiting"  # a drain that began before the switch is still on it (or it waits for a retry)
        formed_ones = [(oid, offset) for oid, offset, formed, _ in stragglers if formed]
        messages = _messages([oid for oid, _ in formed_ones])
        for oid, offset in formed_ones:
            try:
                reading = read_source(project, oid, offset, messages.get(oid, []), proposer, v)
            except ProposerError:
                return "waiting"
            replace_reading(project=project, job_id=job_id, owner=owner, reading=reading,
                            speaker_terms=v.speaker_terms, lease_seconds=lease_seconds)
            result.sources += 1
        if clean_up:
            _clean_up(project, job_id, owner, lease_seconds)
        with transaction.atomic(), connection.cursor() as cursor:
            _fence(cursor, job_id, owner, lease_seconds)
            cursor.execute("UPDATE formation_rebuild SET state = 'completed', finished_at = now(),"
                           " reinterpreted_through = reinterpreting_through, lease_owner = NULL,"
                           " lease_until = NULL WHERE job_id = %s AND reinterpreting_through >= 0", [job_id])
            if cursor.rowcount == 0:  # an empty project: nothing to reinterpret
                cursor.execute("UPDATE formation_rebuild SET state = 'completed', finished_at = now(),"
                               " lease_owner = NULL, lease_until = NULL WHERE job_id = %s", [job_id])
            audit.record(op="formation.rebuild", principal=audit.SYSTEM_PRINCIPAL, principal_kind="system",
                         project=project, magnitude=0)
        return "completed"
    finally:
        drain_unlock(project)


# ---------------------------------------------------------------------------
# The junk clean-up: named entities the rebuild left with nothing a reader or a person relies on.

_ORPHANS = (
    "SELECT e.entity_id::text FROM entity e WHERE e.scope = %s AND e.identity_kind = 'named'"
    " AND EXISTS (SELECT 1 FROM fact f WHERE f.scope = e.scope"
    "  AND (f.subject_entity_id = e.entity_id OR f.object_entity_id = e.entity_id))"
    " AND NOT EXISTS (SELECT 1 FROM fact f WHERE f.scope = e.scope"
    "  AND (f.subject_entity_id = e.entity_id OR f.object_entity_id = e.entity_id)"
    "  AND (upper_inf(f.known)"
    "   OR EXISTS (SELECT 1 FROM fact_evidence x WHERE x.fact_id = f.fact_id"
    "              AND (x.authored_by IS NOT NULL OR x.extractor_version = 'curated/v1'))"
    "   OR EXISTS (SELECT 1 FROM memory_feedback m WHERE m.target_fact_id = f.fact_id)"
    "   OR EXISTS (SELECT 1 FROM record_retraction r WHERE r.target_fact_id = f.fact_id)))"
)


def _clean_up(project, job_id, owner, lease_seconds):
    """Purge named entities every fact of which a rebuild closed (no current fact, no human record, no
    feedback, no retraction names them): the `to`s and `mix of excited`s rules/v1 made. Their closed facts
    go with them; each batch is one transaction with one `entity.purge` ledger row (system principal)."""
    with connection.cursor() as cursor:
        cursor.execute(_ORPHANS + " ORDER BY e.entity_id", [project])
        candidates = [row[0] for row in cursor.fetchall()]
    for i in range(0, len(candidates), CLEAN_UP_BATCH):
        batch = candidates[i:i + CLEAN_UP_BATCH]
        with transaction.atomic(), connection.cursor() as cursor:
            _fence(cursor, job_id, owner, lease_seconds)
            cursor.execute("SELECT entity_id::text FROM entity WHERE scope = %s AND entity_id = ANY(%s::uuid[])"
                           " ORDER BY entity_id FOR UPDATE", [project, batch])
            # Re-checked under the entity locks: a writer that named one meanwhile keeps it.
            cursor.execute(_ORPHANS + " AND e.entity_id = ANY(%s::uuid[])", [project, batch])
            still = [row[0] for row in cursor.fetchall()]
            entities = facts = removed = 0
            for entity_id in still:
                counts = purge_within(cursor, project=project, entity_id=entity_id)
                entities += counts["entity"]
                facts += counts["fact"]
                removed += sum(counts.values())
            cursor.execute("UPDATE formation_rebuild SET entities_purged = entities_purged + %s,"
                           " facts_purged = facts_purged + %s WHERE job_id = %s", [entities, facts, job_id])
            if removed:
                audit.record(op="entity.purge", principal=audit.SYSTEM_PRINCIPAL, principal_kind="system",
                             project=project, magnitude=removed)


# ---------------------------------------------------------------------------
# Celery glue: the sweep finds jobs without a live lease; the task body runs one slice.


def projects_to_resume():
    with connection.cursor() as cursor:
        cursor.execute("SELECT scope FROM formation_rebuild WHERE state = 'running'"
                       " AND (lease_owner IS NULL OR lease_until <= now())")
        return [row[0] for row in cursor.fetchall()]


def sweep(kick):
    projects = projects_to_resume()
    for project in projects:
        kick(project)
    return projects


def slice_task_body(project):
    close_old_connections()
    try:
        return run_slice(project)
    finally:
        close_old_connections()


def kick_rebuild(project, *, countdown=None):
    """Publish one slice for `project`; never raises (the sweep resumes a job whose kick was lost)."""
    try:
        current_app.send_task(SLICE_TASK, args=[project], countdown=countdown, retry=False)
        return True
    except Exception as exc:  # noqa: BLE001 - the job is durable; the sweep will find it
        logger.warning("rebuild kick not delivered (%s); the sweep will resume the job", type(exc).__name__)
        return False

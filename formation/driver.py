"""The formation driver (formation.md §2): the database is the queue.

claim → form → record outcome, one drain per project at a time, no transaction open during a model call.
"""
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction

from core import audit
from core.errors import NotFound
from core.locks import session_unlock, try_session_lock
from core.retry import sqlstate
from memory.services import recompute_watermark

from . import vocabulary as vocab
from .claims import Claim, Source, assert_claim, reject_claim
from .extractor import build_proposer
from .gates import Admitted, judge
from .proposals import Message, ProposerError

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 6
MAX_ERROR_CHARS = 2000


@dataclass
class DrainStats:
    turns_formed: int = 0
    turns_failed: int = 0
    turns_parked: int = 0
    facts: int = 0
    refusals: int = 0
    locked_out: bool = False
    out_of_time: bool = False
    outcomes: list = field(default_factory=list)


class TurnFailure(Exception):
    """This attempt failed; the turn stays unformed and is retried after its backoff."""


_proposer_cache = {}


def current_proposer():
    """The configured proposer, built once per process (a bad configuration fails loudly here)."""
    if "proposer" not in _proposer_cache:
        v = vocab.load()
        _proposer_cache["proposer"] = build_proposer(vocabulary=v.predicates, unresolvable=sorted(v.unresolvable))
    return _proposer_cache["proposer"]


def _heartbeat(column, *, failure=False):
    with connection.cursor() as cursor:
        extra = ", failures = failures + 1" if failure else ""
        passes = ", passes = passes + 1" if column == "last_pass_at" else ""
        cursor.execute(f"UPDATE formation_heartbeat SET {column} = now(){extra}{passes} WHERE id = 1")


def projects_with_backlog():
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT scope FROM observation"
                       " WHERE kind = 'turn' AND formed_at IS NULL AND parked_at IS NULL")
        return [row[0] for row in cursor.fetchall()]


def sweep(kick):
    """One pass of the periodic sweep: note the heartbeat and kick a drain for every project with work."""
    _heartbeat("last_pass_at")
    projects = projects_with_backlog()
    for project in projects:
        kick(project)
    return projects


def claim(project, *, version, skip=()):
    """Claim the oldest eligible turn, counting the attempt now (formation.md §2.3), and pin the extractor
    in the same statement (formation.md §10): a first attempt takes `version` unless the turn already holds
    readings from another extractor. Returns (observation_id, log_offset, attempts, pinned version) or None.

    `skip` holds turns that already failed in this drain: one drain makes at most one attempt per turn,
    so a zero backoff cannot spin a failing turn straight into parking."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "WITH c AS (UPDATE observation o SET formation_attempts = formation_attempts + 1, formation_failed_at = now(),"
            " extractor_version = CASE WHEN o.extractor_version IS NOT NULL THEN o.extractor_version"
            "  WHEN EXISTS (SELECT 1 FROM fact_evidence e WHERE e.source_observation_id = o.observation_id"
            "               AND e.extractor_version <> %s)"
            "    OR EXISTS (SELECT 1 FROM rejected_claim r WHERE r.source_observation_id = o.observation_id"
            "               AND r.extractor_version <> %s) THEN NULL ELSE %s END"
            " WHERE observation_id = ("
            "  SELECT observation_id FROM observation"
            "  WHERE scope = %s AND kind = 'turn' AND formed_at IS NULL AND parked_at IS NULL"
            "   AND (formation_failed_at IS NULL OR formation_failed_at <= now()"
            "        - make_interval(secs => %s) * power(2, least(formation_attempts - 1, 6)))"
            "   AND observation_id <> ALL(%s::uuid[])"
            "  ORDER BY log_offset FOR UPDATE SKIP LOCKED LIMIT 1)"
            " RETURNING observation_id, log_offset, formation_attempts, extractor_version, data_subject_id)"
            # The messages ride along, so forming the turn needs no read of its own.
            " SELECT c.observation_id, c.log_offset, c.formation_attempts, c.extractor_version, m.ordinal, m.role,"
            " m.content, m.occurred_at, c.data_subject_id FROM c"
            " LEFT JOIN turn_message m ON m.observation_id = c.observation_id ORDER BY m.ordinal",
            [version, version, version, project, float(settings.MEMOIR_FORMATION_BACKOFF),
             [str(s) for s in skip]],
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    observation_id, log_offset, attempts, pinned = rows[0][:4]
    messages = [row[4:] for row in rows if row[4] is not None]
    return observation_id, log_offset, attempts, pinned, messages


def _messages(observation_id):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.ordinal, m.role, m.content, m.occurred_at, o.data_subject_id FROM turn_message m"
            " JOIN observation o ON o.observation_id = m.observation_id"
            " WHERE m.observation_id = %s ORDER BY m.ordinal", [str(observation_id)])
        return cursor.fetchall()


def form_turn(project, observation_id, proposer, *, deadline=None, stats=None, messages=None):
    """Propose, judge and store every message of one (claimed and pinned) turn. Raises TurnFailure.

    `messages` are (ordinal, role, content, occurred_at, data_subject_id) rows; read here when not given."""
    stats = stats if stats is not None else DrainStats()
    v = vocab.load()
    if messages is None:
        messages = _messages(observation_id)
    for ordinal, role, content, occurred_at, subject in messages:
        if deadline is not None and time.monotonic() > deadline:
            raise TurnFailure("formation exceeded its turn budget")
        try:
            proposals = proposer.propose(Message(role=role, content=content, occurred_at=occurred_at), v.predicates)
        except ProposerError as exc:
            raise TurnFailure(str(exc)) from None
        source = Source(project=project, observation_id=str(observation_id), ordinal=ordinal, role=role,
                        data_subject_id=subject, occurred_at=occurred_at, extractor_version=proposer.version)
        admitted_keys = set()
        for proposal in proposals:
            verdict = judge(proposal, content=content, vocabulary=v.by_name, unresolvable=v.unresolvable,
                            admitted=admitted_keys)
            reason = getattr(verdict, "reason", None)
            if isinstance(verdict, Admitted):
                claim_ = Claim(
                    predicate=verdict.predicate.name, cardinality=verdict.predicate.cardinality,
                    subject=proposal.subject, object=proposal.object, statement=proposal.statement,
                    confidence=verdict.confidence, subject_type=verdict.subject_type,
                    object_type=verdict.object_type, quote=verdict.quote, byte_start=verdict.byte_start,
                    byte_end=verdict.byte_end, valid_from=proposal.valid_from, valid_until=proposal.valid_until)
                outcome, value = assert_claim(source=source, claim=claim_, speaker_terms=v.speaker_terms)
                if outcome == "gone":
                    return False
                if outcome == "fact":
                    stats.facts += 1
                    continue
                if outcome != "refused":
                    continue
                reason = value
            reject_claim(source=source, predicate=proposal.predicate, subject=proposal.subject,
                         object=proposal.object, statement=proposal.statement, quote=proposal.quote, reason=reason)
            stats.refusals += 1
    return True


def mark_formed(project, observation_id):
    """Set formed_at once and recompute the watermark, in one transaction and one round trip."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT memoir_mark_formed(%s, %s)", [project, str(observation_id)])


def record_failure(project, observation_id, error, *, park_now=False):
    """Note a failed attempt; park after MAX_ATTEMPTS (or at once). Returns True when parked."""
    error = (error or "formation failed")[:MAX_ERROR_CHARS]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE observation SET formation_failed_at = now(), formation_error = %s"
            " WHERE observation_id = %s AND formed_at IS NULL AND parked_at IS NULL RETURNING formation_attempts",
            [error, str(observation_id)])
        row = cursor.fetchone()
        if row is None:
            return False
        if park_now or row[0] >= MAX_ATTEMPTS:
            cursor.execute("UPDATE observation SET parked_at = now() WHERE observation_id = %s",
                           [str(observation_id)])
            recompute_watermark(cursor, project)
            return True
    return False


def unpark(*, project, observation_id, principal, principal_kind="operator", kick=None):
    """Put a parked turn back in the queue, in one transaction with its ledger row (formation.md §2.5)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE observation SET parked_at = NULL, formation_attempts = 0, formation_failed_at = NULL,"
            " formation_error = NULL WHERE scope = %s AND observation_id = %s AND parked_at IS NOT NULL",
            [project, str(observation_id)])
        if cursor.rowcount == 0:
            raise NotFound("not_found", "that turn is not parked")
        recompute_watermark(cursor, project)
        audit.record(op="formation.unpark", principal=principal, principal_kind=principal_kind,
                     project=project, magnitude=1)
        if kick is not None:
            transaction.on_commit(lambda: kick(project), robust=True)


def formation_commits(*, durable):
    """Formation's commits need not wait for the WAL flush: everything it writes is derived from stored turns
    with derived ids, and a crash can only lose the newest commits in order (a turn whose facts were lost also
    loses its later formed mark), so the turn is simply formed again. Observe never does this."""
    with connection.cursor() as cursor:
        cursor.execute("RESET synchronous_commit" if durable else "SET synchronous_commit = off")


def try_drain_lock(project):
    """The per-project session lock of a drain; the extractor rebuild takes it too, so no drain forms meanwhile."""
    with connection.cursor() as cursor:
        return try_session_lock(cursor, "formation", project)


def drain_unlock(project):
    with connection.cursor() as cursor:
        session_unlock(cursor, "formation", project)


def drain(project, *, proposer=None, run_budget=None, turn_budget=None):
    """Form turns of one project until none can be claimed. Returns DrainStats."""
    stats = DrainStats()
    run_budget = settings.MEMOIR_FORMATION_RUN_BUDGET if run_budget is None else run_budget
    turn_budget = settings.MEMOIR_FORMATION_TURN_BUDGET if turn_budget is None else turn_budget
    if not try_drain_lock(project):
        stats.locked_out = True
        return stats
    if proposer is None:
        # Under the lock, so an extractor rebuild finishing (it takes this lock) sees no drain on the old one.
        from .rebuild import project_proposer  # rebuild imports this module

        proposer = project_proposer(project, current_proposer())
    formation_commits(durable=False)
    started = time.monotonic()
    failed = set()
    try:
        while True:
            if time.monotonic() - started > run_budget:
                stats.out_of_time = True
                break
            claimed = claim(project, version=proposer.version, skip=failed)
            if claimed is None:
                break
            observation_id, log_offset, attempts, pinned, messages = claimed
            if attempts > MAX_ATTEMPTS:
                # The previous attempt never reported back (a crash loop): park instead of retrying forever.
                record_failure(project, observation_id, f"formation did not complete after {MAX_ATTEMPTS} attempts",
                               park_now=True)
                stats.turns_parked += 1
                continue
            if pinned != proposer.version and _rebuild_switched(project, pinned):
                # Pinned before a rebuild switched the project's extractor: form it under its pin; the rebuild
                # re-forms it under the target afterwards.
                if not _form_one(project, observation_id, _pinned_proposer(pinned), time.monotonic() + turn_budget,
                                 stats, messages):
                    failed.add(observation_id)
                continue
            if pinned != proposer.version:
                # Nothing about a pin mismatch is transient, so the turn parks at once (formation.md §2.5).
                record_failure(project, observation_id, f"the turn is pinned to {pinned or 'another extractor'};"
                               f" the running extractor is {proposer.version}", park_now=True)
                stats.turns_parked += 1
                continue
            if not _form_one(project, observation_id, proposer, time.monotonic() + turn_budget, stats, messages):
                failed.add(observation_id)
    finally:
        formation_commits(durable=True)
        drain_unlock(project)
        if stats.turns_formed:
            _heartbeat("last_progress_at")
    return stats


def _rebuild_switched(project, pinned):
    """True when a rebuild changed this project's extractor and the turn's older pin can still be run here."""
    from .rebuild import project_extractor  # rebuild imports this module

    return pinned is not None and project_extractor(project) is not None and _pinned_proposer(pinned) is not None


def _pinned_proposer(pinned):
    from .rebuild import proposer_for  # rebuild imports this module

    return proposer_for(pinned)


def _form_one(project, observation_id, proposer, deadline, stats, messages):
    try:
        formed = form_turn(project, observation_id, proposer, deadline=deadline, stats=stats, messages=messages)
    except (TurnFailure, DatabaseError) as exc:
        # A database error's text can quote row values, so only its class and SQLSTATE are kept.
        text = str(exc) if isinstance(exc, TurnFailure) else _describe_database_error(exc)
        parked = record_failure(project, observation_id, text)
        stats.turns_failed += 1
        stats.turns_parked += int(parked)
        _heartbeat("last_failure_at", failure=True)
        return False
    if formed:
        mark_formed(project, observation_id)
        stats.turns_formed += 1
    return True


def _describe_database_error(exc):
    state = sqlstate(exc)
    return f"database error {type(exc).__name__}" + (f" (SQLSTATE {state})" if state else "")


def drain_task_body(project):
    """What the Celery task runs: one connection for the whole run, closed only at the ends."""
    close_old_connections()
    try:
        return drain(project)
    finally:
        close_old_connections()

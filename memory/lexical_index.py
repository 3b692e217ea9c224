"""The lexical follower: writes each stored turn's passage source (tsvector) and lexeme counts from the log, behind
the append path, and reads the turns it has not reached yet (the tail search covers). docs/decisions.md, "Lexical
follower"."""
import logging
import threading
import time

from django.db import connection, transaction

from core.locks import session_unlock, try_session_lock
from core.retry import DEADLOCK, run_retrying

from .passage_schema import TS_CONFIG

logger = logging.getLogger(__name__)

# Observations one indexing statement takes: about 40 ms of tsvectors and GIN entries for one-message turns.
BATCH_OBSERVATIONS = 500
# Messages after `indexed_through` that search reads directly, parsing them per request (a few ms); beyond these
# the passages answer says `catching_up` and covers only a prefix of the log.
TAIL_MESSAGES = 512
TAIL_BYTES = 262_144  # and at most this much text (one largest turn), so a run of large messages stays cheap
# When the log runs this far past the cursor, the observe that notices indexes one batch itself after its commit
# (outside the append lock): with no worker, or a dead one, search never falls further behind than its tail.
HELP_LAG = 256
HELP_EVERY = 1.0  # seconds between one process's lag checks for a project
FOREIGN_KEY_VIOLATION = "23503"  # a message erased while the follower read it: erasure wins, the batch reruns
FOLLOW_LOCK = "lexical-follow"

# One statement: the span of the log after `indexed_through` (never past the committed log end, so every offset
# in it is committed), the sources of its turns, their count deltas, each speaker's latest turn (passage_speaker) and
# the advanced cursor. A source's message and a speaker's observation are deferred foreign keys: if erasure deleted
# either meanwhile, the commit fails and nothing is kept.
_INDEX_SQL = f"""
WITH st AS (
  SELECT coalesce((SELECT indexed_through FROM passage_lexical_state WHERE scope = %(p)s), -1) AS done,
         (SELECT log_offset FROM watermark WHERE scope = %(p)s) AS stored),
span AS (
  SELECT o.observation_id, o.log_offset, o.kind, o.data_subject_id FROM observation o, st
  WHERE o.scope = %(p)s AND o.log_offset > st.done AND o.log_offset <= st.stored
  ORDER BY o.log_offset LIMIT %(batch)s),
added AS (
  INSERT INTO passage_source (chunk_id, scope, source_id, ordinal, role, log_offset, occurred_at, data_subject_id,
                              content_digest, message_bytes, lexemes)
  SELECT m.chunk_id, %(p)s, m.observation_id, m.ordinal, m.role, s.log_offset, m.occurred_at, s.data_subject_id,
         sha256(convert_to(m.content, 'UTF8')), octet_length(convert_to(m.content, 'UTF8')),
         to_tsvector('{TS_CONFIG}'::regconfig, m.content)
  FROM span s JOIN turn_message m ON m.observation_id = s.observation_id WHERE s.kind = 'turn'
  ON CONFLICT (chunk_id) DO NOTHING
  RETURNING lexemes),
counted AS (
  INSERT INTO passage_lexeme_count (scope, lexeme_key, documents)
  SELECT %(p)s, memoir_lexeme_key(l), count(*)::int
  FROM added a CROSS JOIN LATERAL unnest(tsvector_to_array(a.lexemes)) l GROUP BY 2),
spoke AS (
  INSERT INTO passage_speaker AS k (scope, data_subject_id, source_id, log_offset)
  SELECT DISTINCT ON (s.data_subject_id) %(p)s, s.data_subject_id, s.observation_id, s.log_offset FROM span s
  WHERE s.kind = 'turn' AND s.data_subject_id IS NOT NULL ORDER BY s.data_subject_id, s.log_offset DESC
  ON CONFLICT (scope, data_subject_id) DO UPDATE SET source_id = EXCLUDED.source_id, log_offset = EXCLUDED.log_offset
  WHERE k.log_offset < EXCLUDED.log_offset),
moved AS (
  INSERT INTO passage_lexical_state AS s (scope, indexed_through, updated_at)
  SELECT %(p)s, max(log_offset), now() FROM span HAVING count(*) > 0
  ON CONFLICT (scope) DO UPDATE SET indexed_through = greatest(s.indexed_through, EXCLUDED.indexed_through),
    updated_at = now()
  RETURNING indexed_through)
SELECT (SELECT count(*) FROM added), (SELECT indexed_through FROM moved), (SELECT stored FROM st)
"""


def index_batch(*, project, batch=BATCH_OBSERVATIONS):
    """Index the next `batch` observations of the project's log in one transaction: (sources written, whether the
    follower has reached the log's end)."""
    def work():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_INDEX_SQL, {"p": project, "batch": batch})
            added, through, stored = cursor.fetchone()
        return added, through is None or stored is None or through >= stored

    return run_retrying(work, what="lexical index", sqlstates=(DEADLOCK, FOREIGN_KEY_VIOLATION))


def follow(project, *, budget=30.0):
    """Index the project's log up to its end (one follower per project at a time). Returns the number of sources
    written, or None when another follower holds the project."""
    with connection.cursor() as cursor:
        if not try_session_lock(cursor, FOLLOW_LOCK, project):
            return None
    written = 0
    deadline = time.monotonic() + budget
    try:
        while True:
            added, done = index_batch(project=project)
            written += added
            if done or time.monotonic() >= deadline:
                break
    finally:
        with connection.cursor() as cursor:
            session_unlock(cursor, FOLLOW_LOCK, project)
    return written


_last_check = {}
_last_check_lock = threading.Lock()


def help_if_behind(project):
    """After an observe commits: if the follower is HELP_LAG offsets behind, index one batch here (skipped while
    another follower holds the project). Checks at most every HELP_EVERY seconds per project per process, so an
    observe normally pays nothing. Returns the number of sources written."""
    now = time.monotonic()
    with _last_check_lock:
        if now - _last_check.get(project, -1e9) < HELP_EVERY:
            return 0
        _last_check[project] = now
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT w.log_offset - coalesce(s.indexed_through, -1) FROM watermark w"
                           " LEFT JOIN passage_lexical_state s ON s.scope = w.scope WHERE w.scope = %s", [project])
            row = cursor.fetchone()
        if row is None or row[0] < HELP_LAG:
            return 0
        return follow(project, budget=0) or 0
    except Exception:  # noqa: BLE001 - the turn is committed; the worker or the next observe indexes it
        logger.exception("indexing behind observe failed; the follower will catch up")
        return 0


def projects_behind():
    """Projects whose stored log runs past what the follower has indexed."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT w.scope FROM watermark w LEFT JOIN passage_lexical_state s ON s.scope = w.scope"
                       " WHERE coalesce(s.indexed_through, -1) < w.log_offset ORDER BY 1")
        return [row[0] for row in cursor.fetchall()]


def read_tail(cursor, *, project, indexed_through, last_offset):
    """The turns after `indexed_through`, whole, at most TAIL_MESSAGES messages and TAIL_BYTES of text of them,
    parsed here as their sources would be: ([(chunk_id, log_offset, ordinal, role, data_subject_id, lexemes as a
    set, occurred_at)], the offset through which the tail reaches)."""
    # One message more than the tail holds says whether the log goes on past it, and where; a message past the
    # byte budget is never parsed.
    cursor.execute(
        f"SELECT t.log_offset, t.chunk_id::text, t.ordinal, t.role, t.data_subject_id, t.running, m.occurred_at,"
        f" CASE WHEN t.running <= %s THEN tsvector_to_array(to_tsvector('{TS_CONFIG}'::regconfig, m.content)) END"
        " FROM (SELECT o.log_offset, o.data_subject_id, m.chunk_id, m.ordinal, m.role,"
        "  sum(octet_length(m.content)) OVER (ORDER BY o.log_offset, m.ordinal) AS running"
        "  FROM observation o JOIN turn_message m ON m.observation_id = o.observation_id"
        "  WHERE o.scope = %s AND o.kind = 'turn' AND o.log_offset > %s AND o.log_offset <= %s"
        "  ORDER BY o.log_offset, m.ordinal LIMIT %s) t"
        " JOIN turn_message m ON m.chunk_id = t.chunk_id ORDER BY t.log_offset, t.ordinal",
        [TAIL_BYTES, project, indexed_through, last_offset, TAIL_MESSAGES + 1])
    rows = cursor.fetchall()
    reach = last_offset
    for index, (offset, _, _, _, _, running, _, _) in enumerate(rows):
        if index == TAIL_MESSAGES or running > TAIL_BYTES:
            reach = offset - 1  # the turn the bound cut into is left whole to the follower
            break
    tail = [(chunk, offset, ordinal, role, subject, frozenset(lexemes), occurred_at)
            for offset, chunk, ordinal, role, subject, _, occurred_at, lexemes in rows if offset <= reach]
    return tail, reach

"""Ledger seals and their verification (governance.md §4.3): chained SHA-256 digests over audit_entry.

Sealing runs in the SQL function memoir_audit_seal_now(); verification recomputes with the same
memoir_audit_entries_digest() so both read the identical text.
"""
import hashlib
import logging

from django.db import connection, transaction

from core import audit
from core.encoding import format_ts

logger = logging.getLogger(__name__)

ZERO_DIGEST = bytes(32)
_BATCH = 500


def _seal_dict(row):
    seal_id, from_entry, to_entry, entry_count, entries_digest, previous_digest, digest, sealed_at = row
    return {
        "seal_id": seal_id,
        "from_entry": from_entry,
        "to_entry": to_entry,
        "entry_count": entry_count,
        "entries_digest": bytes(entries_digest).hex(),
        "previous_digest": bytes(previous_digest).hex(),
        "digest": bytes(digest).hex(),
        "sealed_at": format_ts(sealed_at),
    }


def seal(*, principal, principal_kind):
    """Seal the entries written since the last seal (at most 100,000). Returns the seal, or None."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT seal_id, from_entry, to_entry, entry_count, entries_digest, previous_digest, digest,"
                       " sealed_at FROM memoir_audit_seal_now()")
        row = cursor.fetchone()
    sealed = _seal_dict(row) if row else None
    if sealed:
        # The head digest goes to the log too, so it can be kept somewhere the database cannot reach.
        logger.info("audit seal %s covers entries %s..%s, head %s", sealed["seal_id"], sealed["from_entry"],
                    sealed["to_entry"], sealed["digest"])
    audit.record_best_effort(op="audit.seal", principal=principal, principal_kind=principal_kind, project="",
                             magnitude=sealed["entry_count"] if sealed else 0)
    return sealed


def _first_failure(cursor):
    """Walk every seal in order and name the first broken one, or return ""."""
    previous_to, previous_digest, last_id = None, ZERO_DIGEST, 0
    while True:
        cursor.execute(
            "SELECT s.seal_id, s.from_entry, s.to_entry, s.entry_count, s.entries_digest, s.previous_digest, s.digest,"
            " (SELECT count(*) FROM audit_entry e WHERE e.entry_id BETWEEN s.from_entry AND s.to_entry),"
            " memoir_audit_entries_digest(s.from_entry, s.to_entry)"
            " FROM audit_seal s WHERE s.seal_id > %s ORDER BY s.seal_id LIMIT %s", [last_id, _BATCH])
        rows = cursor.fetchall()
        if not rows:
            return ""
        for seal_id, from_entry, to_entry, count, entries, prev, digest, counted, recomputed in rows:
            entries, prev, digest, recomputed = bytes(entries), bytes(prev), bytes(digest), bytes(recomputed)
            if previous_to is not None and from_entry != previous_to + 1:
                return f"seal {seal_id}: gap before entry {from_entry}"
            if counted != count:
                return f"seal {seal_id}: entries removed or added"
            if recomputed != entries:
                return f"seal {seal_id}: altered entry"
            if prev != previous_digest:
                return f"seal {seal_id}: re-linked chain"
            if hashlib.sha256(prev + recomputed).digest() != digest:
                return f"seal {seal_id}: digest mismatch"
            previous_to, previous_digest, last_id = to_entry, digest, seal_id


_REPORTED = 1000  # ids and gaps named per verification; the counts are always whole


def _outside(cursor, last_to):
    """Rows at or below the last seal's end that no seal covers: written around the chain, never sealed."""
    cursor.execute(
        "SELECT e.entry_id FROM audit_entry e WHERE e.entry_id <= %s AND NOT EXISTS (SELECT 1 FROM audit_seal s"
        " WHERE e.entry_id BETWEEN s.from_entry AND s.to_entry) ORDER BY e.entry_id LIMIT %s", [last_to, _REPORTED])
    return [row[0] for row in cursor.fetchall()]


def _gaps(cursor):
    """Ranges of ids the sequence handed out with no row now: [first, last] pairs, from id 1.

    A rolled-back transaction or a server crash also skips ids, so a gap is reported, not a failure by itself;
    a gap inside a sealed range is already a failure ("entries removed or added")."""
    cursor.execute(
        "SELECT coalesce(previous, 0) + 1, entry_id - 1 FROM (SELECT entry_id, lag(entry_id) OVER (ORDER BY entry_id)"
        " AS previous FROM audit_entry) ids WHERE entry_id > coalesce(previous, 0) + 1 ORDER BY entry_id LIMIT %s",
        [_REPORTED])
    return [[low, high] for low, high in cursor.fetchall()]


def head():
    """The chain's head for keeping outside the database: {seal_id, to_entry, head} ("" / None when unsealed)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT seal_id, to_entry, digest FROM audit_seal ORDER BY seal_id DESC LIMIT 1")
        row = cursor.fetchone()
    if row is None:
        return {"seal_id": None, "to_entry": None, "head": ""}
    return {"seal_id": row[0], "to_entry": row[1], "head": bytes(row[2]).hex()}


def verify(*, principal, principal_kind, expect_head=None):
    """Check the whole seal chain: {valid, seals, entries, unsealed, head, failure, outside, gaps}.

    `outside` names rows no seal covers below the head (invalid); `gaps` names missing ids (reported).
    `expect_head`, a digest kept outside the database, must still be a seal of the chain: a deleted last seal or
    a chain recomputed from a tampered entry onwards no longer holds it."""
    nested = connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        if not nested:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cursor.execute("SELECT count(*), coalesce(sum(entry_count), 0) FROM audit_seal")
        seals, entries = cursor.fetchone()
        cursor.execute("SELECT to_entry, digest FROM audit_seal ORDER BY seal_id DESC LIMIT 1")
        last = cursor.fetchone()
        if last is None:
            cursor.execute("SELECT count(*) FROM audit_entry")
        else:
            cursor.execute("SELECT count(*) FROM audit_entry WHERE entry_id > %s", [last[0]])
        unsealed = cursor.fetchone()[0]
        failure = _first_failure(cursor)
        outside = _outside(cursor, last[0]) if last is not None else []
        gaps = _gaps(cursor)
        expected_found = None
        if expect_head is not None:
            cursor.execute("SELECT seal_id FROM audit_seal WHERE digest = decode(%s::text, 'hex')",
                           [expect_head.lower()])
            expected_found = cursor.fetchone()
    if not failure and outside:
        failure = f"entry {outside[0]}: outside every sealed range"
    if not failure and expect_head is not None and expected_found is None:
        failure = "the expected head is no longer a seal of the chain"
    result = {
        "valid": failure == "",
        "seals": seals,
        "entries": int(entries),
        "unsealed": unsealed,
        "head": bytes(last[1]).hex() if last else "",
        "failure": failure,
        "outside": outside,
        "gaps": gaps,
    }
    audit.record_best_effort(op="audit.verify", principal=principal, principal_kind=principal_kind,
                             project="", magnitude=seals)
    return result

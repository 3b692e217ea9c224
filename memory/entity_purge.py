"""Removing one named entity with the facts that mention it, inside the caller's transaction (data-model.md).

The storage half of an entity purge: governance.purge adds the rights workflow (preview, confirmation, the
ledger row) and formation.rebuild's junk clean-up calls purge_within; both need the same rows removed, and
memory owns those tables, so the SQL lives here."""
from core.errors import Invalid, NotFound

KINDS = ("fact", "fact_evidence", "fact_history", "feedback", "entity_name_receipt", "entity")

# Rows still referring to the entity, per kind; all zero after a confirmed purge.
_RESIDUAL_SQL = {
    "fact": "SELECT count(*) FROM fact f WHERE f.scope = %(p)s AND (f.subject_entity_id = %(e)s"
            " OR f.object_entity_id = %(e)s)",
    "fact_evidence": "SELECT count(*) FROM fact_evidence x JOIN fact f ON f.fact_id = x.fact_id"
                     " WHERE f.scope = %(p)s AND (f.subject_entity_id = %(e)s OR f.object_entity_id = %(e)s)",
    "fact_history": "SELECT count(*) FROM fact_history x JOIN fact f ON f.fact_id = x.fact_id"
                    " WHERE f.scope = %(p)s AND (f.subject_entity_id = %(e)s OR f.object_entity_id = %(e)s)",
    "feedback": "SELECT count(*) FROM memory_feedback x JOIN fact f ON f.fact_id = x.target_fact_id"
                " WHERE f.scope = %(p)s AND (f.subject_entity_id = %(e)s OR f.object_entity_id = %(e)s)",
    "entity_name_receipt": "SELECT count(*) FROM entity_name_receipt WHERE scope = %(p)s AND entity_id = %(e)s",
    "entity": "SELECT count(*) FROM entity WHERE scope = %(p)s AND entity_id = %(e)s",
}


def _count(cursor, sql, params):
    cursor.execute(sql, params)
    return cursor.fetchone()[0]


def purge_locked(cursor, *, project, entity_id):
    """Lock, remove and recount one named entity of `project`; the full report (removed, residual, counts)."""
    cursor.execute("SELECT canonical_name, identity_kind FROM entity WHERE scope = %s AND entity_id = %s"
                   " FOR UPDATE", [project, entity_id])
    row = cursor.fetchone()
    if row is None:
        raise NotFound("not_found", "no such entity")
    canonical_name, identity_kind = row
    if identity_kind != "named":
        raise Invalid("invalid_record_mutation", "only named entities can be purged")
    cursor.execute("SELECT fact_id::text, data_subject_id FROM fact WHERE scope = %s"
                   " AND (subject_entity_id = %s OR object_entity_id = %s) ORDER BY fact_id FOR UPDATE",
                   [project, entity_id, entity_id])
    facts = cursor.fetchall()
    fact_ids = [fact_id for fact_id, _ in facts]
    p = {"p": project, "e": entity_id, "f": fact_ids}
    contributing = _count(cursor, (
        "SELECT count(DISTINCT data_subject_id) FROM projection_dependency WHERE scope = %(p)s"
        " AND data_subject_id IS NOT NULL AND ((projection_kind = 'fact' AND fact_ref = ANY(%(f)s::uuid[]))"
        " OR (projection_kind = 'entity' AND entity_ref = %(e)s))"), p)
    kept = _count(cursor, "SELECT count(DISTINCT source_observation_id) FROM fact_evidence"
                          " WHERE scope = %(p)s AND fact_id = ANY(%(f)s::uuid[])", p)
    removed = {
        # Evidence and history go with their facts (database cascades), so they are counted first.
        "fact_evidence": _count(cursor, "SELECT count(*) FROM fact_evidence WHERE scope = %(p)s"
                                        " AND fact_id = ANY(%(f)s::uuid[])", p),
        "fact_history": _count(cursor, "SELECT count(*) FROM fact_history WHERE scope = %(p)s"
                                       " AND fact_id = ANY(%(f)s::uuid[])", p),
    }
    cursor.execute("DELETE FROM memory_feedback WHERE scope = %(p)s AND target_fact_id = ANY(%(f)s::uuid[])", p)
    removed["feedback"] = cursor.rowcount
    # A fact superseded by one of these keeps its closed validity; superseded_by goes NULL (DB SET NULL).
    cursor.execute("DELETE FROM fact WHERE scope = %(p)s AND fact_id = ANY(%(f)s::uuid[])", p)
    removed["fact"] = cursor.rowcount
    cursor.execute("DELETE FROM entity_name_receipt WHERE scope = %(p)s AND entity_id = %(e)s", p)
    removed["entity_name_receipt"] = cursor.rowcount
    cursor.execute("DELETE FROM entity WHERE scope = %(p)s AND entity_id = %(e)s", p)
    removed["entity"] = cursor.rowcount
    residual = {kind: _count(cursor, _RESIDUAL_SQL[kind], p) for kind in KINDS}
    cursor.execute("SELECT clock_timestamp()")
    completed_at = cursor.fetchone()[0]
    return {
        "entity_id": entity_id, "canonical_name": canonical_name,
        "removed": {kind: removed[kind] for kind in KINDS}, "residual": residual,
        "contributing_subjects": contributing,
        "claims_from_unattributed_turns": sum(1 for _, subject in facts if subject is None),
        "source_turns_kept": kept, "completed_at": completed_at,
    }


def purge_within(cursor, *, project, entity_id):
    """Purge one named entity inside the caller's transaction, with no ledger row of its own (the rebuild's
    junk clean-up ledgers its batches). Returns the removed counts per kind."""
    return purge_locked(cursor, project=project, entity_id=entity_id)["removed"]

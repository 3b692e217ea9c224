"""Entity purge (governance.md §9): remove a named entity the extractor should not have made, with the
facts that mention it, while keeping the words. A dry run is the same transaction, rolled back."""
from django.db import connection, transaction

from core import audit
from memory.entity_purge import purge_locked


def purge_entity(*, caller, entity_id, reason, confirm):
    """Purge (confirm is True) or preview (anything else) one named entity of the caller's project.
    A confirmed purge writes its ledger row atomically; a preview writes a best-effort row of 0."""
    confirmed = confirm is True
    with transaction.atomic(), connection.cursor() as cursor:
        result = purge_locked(cursor, project=caller.project, entity_id=entity_id)
        if confirmed:
            audit.record(op="entity.purge", principal=caller.credential_id, principal_kind="credential",
                         project=caller.project,
                         magnitude=sum(result["removed"].values()))
        else:
            transaction.set_rollback(True)
    if not confirmed:
        audit.record_best_effort(op="entity.purge", principal=caller.credential_id,
                                 principal_kind="credential", project=caller.project, magnitude=0)
    result["reason"] = reason
    result["previewed"] = not confirmed
    return result

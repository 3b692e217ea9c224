"""The statements whose planning costs more than their run are prepared on Django's own connection (settings:
MEMOIR_DB_PREPARED_STATEMENTS): the passage hydration and the top passage's continuation, recall's named-speaker
lookup, anchors and walk; no other statement is. Django's default (prepare_threshold None) had silently ignored their `prepare=True`."""
import pytest
from django.db import connection

from formation.driver import drain
from formation.rules_v2 import RulesV2Proposer
from memory import passages

from ..recall.conftest import observe_turn, recall_ok

pytestmark = pytest.mark.django_db
CAROLINE = "subject-caroline"
# A phrase each prepared statement holds and no other statement does.
PREPARED_KINDS = {
    "hydration": "= ps.content_digest",
    "continuation": "n.data_subject_id = t.data_subject_id",  # either read: sources alone, or with the tail
    "walk": "WITH RECURSIVE walk",
    "anchors": "e.identity_kind = 'named'",
    "named speakers": "'' AS word",
}


def prepared():
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
        return {row[0] for row in cursor.fetchall()}


def kinds(statements):
    return sorted({kind for statement in statements for kind, mark in PREPARED_KINDS.items() if mark in statement})


def test_hydration_and_recall_statements_run_prepared_and_nothing_else(project, auth):
    before = prepared()  # this connection may carry earlier tests' statements
    observe_turn(project, "I'm Caroline, by the way. I live in Boston.", subject=CAROLINE)
    observe_turn(project, "We adopted a beagle called Biscuit last spring.", subject=CAROLINE)
    drain(project, proposer=RulesV2Proposer())

    found = passages.search(project=project, question="What dog did Caroline adopt?")
    assert "We adopted a beagle called Biscuit last spring." in [hit.content for hit in found.hits]
    bundle = recall_ok(auth, question="Where does Caroline live?")
    assert [fact["object"] for fact in bundle["facts"] if fact["predicate"] == "lives_in"] == ["Boston"]
    statements = prepared()
    assert kinds(statements) == sorted(PREPARED_KINDS)
    new = statements - before
    assert all(kinds([statement]) for statement in new), new  # the observe, formation and ledger writes are not

    # Once per connection: the same questions again prepare nothing more.
    passages.search(project=project, question="What dog did Caroline adopt?")
    recall_ok(auth, question="Where does Caroline live?")
    assert prepared() == statements

"""The digest re-check: a vector or lexical source whose message changed is never returned (tampering needs
the owner role, so this test runs in `owner_db` instead of the runtime role's rolled-back transaction)."""
from django.db import connection

from governance import services
from memory import generations, passages
from tests.conftest import unique_name
from tests.passages.test_lexeme_counts import counts, true_counts
from tests.passages.test_passages import build_all
from tests.recall.conftest import observe_turn


def test_a_changed_message_is_never_returned(owner_db, fake, endpoint_embedder):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    receipt = observe_turn(project, "The secret plan is kayaking.")
    build_all(project, endpoint_embedder)
    assert passages.search(project=project, question="kayaking plan").hits
    with connection.cursor() as cursor:
        # Messages are immutable by trigger; only the owner, with its triggers off, can simulate a changed row.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred checks pending on the table we alter
        cursor.execute("ALTER TABLE turn_message DISABLE TRIGGER USER")
        cursor.execute("UPDATE turn_message SET content = 'Something else entirely.' WHERE observation_id = %s",
                       [receipt.id])
        cursor.execute("ALTER TABLE turn_message ENABLE TRIGGER USER")
    assert passages.search(project=project, question="kayaking plan").hits == []
    assert passages.search(project=project, question="something else").hits == []
    removed = generations.repair(project=project, generation_id=passages.active_generation(project).generation_id,
                                 principal="cli", principal_kind="operator")
    assert removed == 1
    generations.follow(project, budget=30)
    assert [h.content for h in passages.search(project=project, question="something else").hits] == [
        "Something else entirely."]


def test_the_repair_rederivation_moves_the_counts(owner_db, fake, endpoint_embedder):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    receipt = observe_turn(project, "Lanterns glow.")
    build_all(project, endpoint_embedder)
    with connection.cursor() as cursor:
        # As in test_digest_recheck: only the owner, with the immutability trigger off, can change a message.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE turn_message DISABLE TRIGGER USER")
        cursor.execute("UPDATE turn_message SET content = 'Candles glow.' WHERE observation_id = %s", [receipt.id])
        cursor.execute("ALTER TABLE turn_message ENABLE TRIGGER USER")
    generations.repair(project=project, generation_id=passages.active_generation(project).generation_id,
                       principal="cli", principal_kind="operator")
    words = ["lantern", "candl", "glow"]
    assert counts(project, words) == {"lantern": 0, "candl": 1, "glow": 1} == true_counts(project, words)


def test_changed_messages_never_leave_the_answer_short(owner_db):
    project = unique_name()
    services.create_project(name=project, principal="cli")
    receipts = [observe_turn(project, f"The quokka note number {n}.") for n in range(12)]
    newest = [str(r.id) for r in receipts[-8:]]  # ranked first: equal scores, newest first
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE turn_message DISABLE TRIGGER USER")
        cursor.execute("UPDATE turn_message SET content = 'Changed.' WHERE observation_id = ANY(%s::uuid[])", [newest])
        cursor.execute("ALTER TABLE turn_message ENABLE TRIGGER USER")
    # The first stretch re-read (limit + spare) is all changed messages; the next stretch fills the answer.
    found = passages.search(project=project, question="quokka", limit=3)
    assert [h.content for h in found.hits] == [f"The quokka note number {n}." for n in (3, 2, 1)]

"""The top passage's continuation: in a search ranked over one person's own messages, the message they sent next
(within passages.CONTINUATION_WINDOW, of the roles asked for) follows the top one."""
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from memory import lexical_index, passages
from tests.passages.test_passages import build_all
from tests.recall.conftest import observe_turn, recall_ok

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 1, 18, 0, tzinfo=UTC)
QUESTION = "Who performed at the concert for the birthday of my daughter?"
TOP = "We celebrated the birthday of my daughter with a concert last night."
ANSWER = "It was Matt Patterson, so talented!"
# Each shares words with the question, so without the rule every one ranks above ANSWER (which shares none).
NEARER = ["The concert tickets were cheap.", "My daughter loves a concert.", "A birthday cake for my daughter.",
          "The birthday was loud.", "Concert season starts soon."]


def _conversation(project, *, answer_after=timedelta(seconds=2), answer_role="user", indexed="all"):
    """ann's topic message, bob's question, ann's answer, then ann's other messages, an hour apart. `indexed`: what
    the lexical follower has reached ("all", "top": ann's topic message alone, "none")."""
    observe_turn(project, TOP, subject="ann", occurred_at=START)
    if indexed == "top":
        lexical_index.follow(project)
    observe_turn(project, "Oh nice, who played?", subject="bob", occurred_at=START + timedelta(seconds=1))
    observe_turn(project, ANSWER, subject="ann", role=answer_role, occurred_at=START + answer_after)
    for n, text in enumerate(NEARER, start=1):
        observe_turn(project, text, subject="ann", occurred_at=START + timedelta(hours=n))
    if indexed == "all":
        lexical_index.follow(project)


def _contents(found):
    return [h.content for h in found.hits]


def test_the_persons_next_message_follows_the_top_passage(project, auth, fake, endpoint_embedder):
    _conversation(project)
    build_all(project, endpoint_embedder)
    found = passages.search(project=project, question=QUESTION, data_subject_id="ann")
    assert found.semantic and _contents(found)[:2] == [TOP, ANSWER]
    assert len(_contents(found)) == len(set(_contents(found))) == 2 + len(NEARER)
    # Its similarity is still its own cosine with the question, not the top passage's.
    assert found.hits[1].similarity < found.hits[0].similarity
    # A smaller limit keeps it (lexical-only searches: test_only_a_message_of_the_roles_asked_for_follows).
    fewer = passages.search(project=project, question=QUESTION, data_subject_id="ann", limit=3)
    assert _contents(fewer)[:2] == [TOP, ANSWER]
    # Recall's passages with the subject are the same search.
    bundle = recall_ok(auth, question=QUESTION, data_subject_id="ann")
    assert [p["quote"] for p in bundle["passages"]][:2] == [TOP, ANSWER]


def test_without_a_subject_the_ranking_is_unchanged(project):
    _conversation(project)
    found = passages.search(project=project, question=QUESTION)
    assert _contents(found)[0] == TOP and ANSWER not in _contents(found)


def test_a_later_message_is_no_continuation(project):
    _conversation(project, answer_after=timedelta(hours=1, minutes=30))
    found = passages.search(project=project, question=QUESTION, data_subject_id="ann")
    assert _contents(found)[0] == TOP and ANSWER not in _contents(found)


def test_only_a_message_of_the_roles_asked_for_follows(project):
    _conversation(project, answer_role="assistant")
    found = passages.search(project=project, question=QUESTION, data_subject_id="ann", roles=["user"])
    assert ANSWER not in _contents(found)
    anyone = passages.search(project=project, question=QUESTION, data_subject_id="ann")
    assert _contents(anyone)[:2] == [TOP, ANSWER]


def test_another_persons_next_message_never_follows(project):
    observe_turn(project, TOP, subject="ann", occurred_at=START)
    observe_turn(project, "It was Matt Patterson, I was there too!", subject="bob", occurred_at=START)
    lexical_index.follow(project)
    found = passages.search(project=project, question=QUESTION, data_subject_id="ann")
    assert _contents(found) == [TOP]


def test_the_continuation_is_read_through_the_subject_order_index(project):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + passages._CONTINUATION, {"project": project, "roles": None,
                                                             "chunk": "00000000-0000-0000-0000-000000000000"})
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "passage_source_subject_order_idx" in plan, plan


@pytest.mark.parametrize("indexed", ["none", "top"])
def test_a_continuation_the_follower_has_not_reached_yet_follows_too(project, indexed):
    """Right after the turns are stored (the tail search reads), the same rule holds."""
    _conversation(project, indexed=indexed)
    assert _indexed_through(project) == (0 if indexed == "top" else -1)
    found = passages.search(project=project, question=QUESTION, data_subject_id="ann")
    assert _contents(found)[:2] == [TOP, ANSWER]


@pytest.mark.parametrize("indexed", ["none", "top"])
def test_only_a_message_of_the_roles_asked_for_follows_before_the_follower_reaches_it(project, indexed):
    _conversation(project, answer_role="assistant", indexed=indexed)
    found = passages.search(project=project, question=QUESTION, data_subject_id="ann", roles=["user"])
    assert _contents(found)[0] == TOP and ANSWER not in _contents(found)
    anyone = passages.search(project=project, question=QUESTION, data_subject_id="ann")
    assert _contents(anyone)[:2] == [TOP, ANSWER]


@pytest.mark.parametrize("indexed", ["none", "top"])
def test_a_later_message_the_follower_has_not_reached_is_no_continuation(project, indexed):
    _conversation(project, answer_after=timedelta(hours=1, minutes=30), indexed=indexed)
    found = passages.search(project=project, question=QUESTION, data_subject_id="ann")
    assert _contents(found)[0] == TOP and ANSWER not in _contents(found)


def _indexed_through(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce((SELECT indexed_through FROM passage_lexical_state WHERE scope = %s), -1)",
                       [project])
        return cursor.fetchone()[0]

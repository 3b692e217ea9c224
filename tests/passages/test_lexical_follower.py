"""The lexical follower: observe writes no passage source, the follower writes sources and counts from the log
behind it, search reads the turns it has not reached (a bounded tail, then `catching_up`), observe indexes a batch
itself when no worker keeps up, and erasure wins a race with it (two connections)."""
import json
import threading
import time

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from governance.erasure import erase
from memory import lexical_index, passages, services
from tests.conftest import make_project
from tests.recall.conftest import observe_turn
from tests.support.db import one
from tests.support.processes import database_url


def _sources(project):
    return one("SELECT count(*) FROM passage_source WHERE scope = %s", [project])[0]


def _counted(project, word):
    return one("SELECT coalesce(sum(documents), 0) FROM passage_lexeme_count WHERE scope = %s"
                " AND lexeme_key = memoir_lexeme_key(%s)", [project, word])[0]


def _indexed_through(project):
    return one("SELECT coalesce((SELECT indexed_through FROM passage_lexical_state WHERE scope = %s), -1)",
                [project])[0]


@pytest.mark.django_db
def test_observe_leaves_indexing_to_the_follower_which_writes_sources_and_counts(project):
    for n in range(3):
        observe_turn(project, f"The heron number {n} nests by the weir.", subject="ann")
    assert _sources(project) == 0 and _counted(project, "heron") == 0 and _indexed_through(project) == -1
    tail = passages.search(project=project, question="where does the heron nest?")
    assert len(tail.hits) == 3 and tail.build_state == "lexical_only" and tail.through_offset == 2
    assert lexical_index.follow(project) == 3
    assert _sources(project) == 3 and _counted(project, "heron") == 3 and _indexed_through(project) == 2
    assert lexical_index.follow(project) == 0  # caught up: nothing written twice
    assert _counted(project, "heron") == 3
    indexed = passages.search(project=project, question="where does the heron nest?")
    assert [(h.chunk_id, h.similarity) for h in indexed.hits] == [(h.chunk_id, h.similarity) for h in tail.hits]
    assert project not in lexical_index.projects_behind()
    observe_turn(project, "Another heron arrived.")
    assert project in lexical_index.projects_behind()


@pytest.mark.django_db
def test_the_tail_ranks_like_the_index(project):
    texts = ["We talked about the weather.", "The weather was fine and the picnic was fun.",
             "My sister adopted a greyhound called Pixel.", "Weather again, weather always."]
    for text in texts[:2]:
        observe_turn(project, text)
    lexical_index.follow(project)
    for text in texts[2:]:
        observe_turn(project, text)  # half indexed, half in the tail
    question = "What dog did my sister adopt during the weather?"
    mixed = [(h.content, h.similarity) for h in passages.search(project=project, question=question).hits]
    lexical_index.follow(project)
    indexed = [(h.content, h.similarity) for h in passages.search(project=project, question=question).hits]
    assert mixed == indexed and mixed[0][0] == texts[2]


@pytest.mark.django_db
def test_a_tail_longer_than_the_bound_says_catching_up(project, monkeypatch):
    monkeypatch.setattr(lexical_index, "TAIL_MESSAGES", 3)
    for n in range(5):
        observe_turn(project, f"Turn {n} mentions the word marker{n}.")
    early = passages.search(project=project, question="marker1")
    assert [h.content for h in early.hits] == ["Turn 1 mentions the word marker1."]
    assert early.build_state == "catching_up" and early.covered_through_offset == 2 and early.through_offset == 4
    late = passages.search(project=project, question="marker4")
    assert late.hits == [] and late.build_state == "catching_up"
    lexical_index.follow(project)
    after = passages.search(project=project, question="marker4")
    assert [h.content for h in after.hits] == ["Turn 4 mentions the word marker4."]
    assert after.build_state == "lexical_only" and after.covered_through_offset is None


@pytest.mark.django_db
def test_the_tail_never_cuts_a_turn_in_two(project, monkeypatch):
    monkeypatch.setattr(lexical_index, "TAIL_MESSAGES", 3)
    observe_turn(project, "First alpaca.")
    observe_turn(project, "Second alpaca.")
    services.observe(project=project, messages=[{"role": "user", "content": "Third alpaca, part one.", "group_ordinal": 0},
                                                {"role": "assistant", "content": "Third alpaca, part two.",
                                                 "group_ordinal": 1}])
    found = passages.search(project=project, question="alpaca", limit=10)
    assert sorted(h.content for h in found.hits) == ["First alpaca.", "Second alpaca."]
    assert found.build_state == "catching_up" and found.covered_through_offset == 1
    lexical_index.follow(project)
    assert len(passages.search(project=project, question="alpaca", limit=10).hits) == 4


@pytest.mark.django_db
def test_the_tail_parses_no_more_than_its_byte_budget(project, monkeypatch):
    monkeypatch.setattr(lexical_index, "TAIL_BYTES", 40)
    observe_turn(project, "A short note about ospreys.")  # 27 bytes
    observe_turn(project, "A second, longer note about ospreys here.")  # 41 bytes: past the budget with the first
    found = passages.search(project=project, question="ospreys", limit=10)
    assert [h.content for h in found.hits] == ["A short note about ospreys."]
    assert found.build_state == "catching_up" and found.covered_through_offset == 0
    lexical_index.follow(project)
    assert len(passages.search(project=project, question="ospreys", limit=10).hits) == 2


def test_erasure_while_the_follower_indexes_the_subject_keeps_nothing(committed):
    project, _, _ = make_project(committed)
    with committed():
        observe_turn(project, "Bob's note about the orchard.", subject="bob")
        lexical_index.follow(project)
        for n in range(3):
            observe_turn(project, f"Ann's private note {n} about Quokkaville.", subject="ann")
        observe_turn(project, "Bob's second note about the orchard.", subject="bob")
        # A second connection holds the follower's cursor row: its statement has written the sources and waits to
        # advance the cursor, uncommitted, while the erasure runs and commits.
        blocker = psycopg.connect(database_url(settings.DATABASES["default"]["NAME"]), autocommit=False)
        blocker.execute("SELECT 1 FROM passage_lexical_state WHERE scope = %s FOR UPDATE", [project])
        outcome = {}

        def follower():
            try:
                outcome["written"] = lexical_index.follow(project)
            finally:
                connection.close()

        thread = threading.Thread(target=follower)
        thread.start()
        deadline = time.monotonic() + 10
        while not _waiting_on_lock(project) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _waiting_on_lock(project), "the follower never reached the cursor row"
        receipt = erase(project=project, data_subject_id="ann", principal="cli", principal_kind="operator")
        blocker.rollback()
        blocker.close()
        thread.join(30)
        assert not thread.is_alive()
        assert outcome["written"] == 1  # the commit that held Ann's sources failed; the rerun wrote Bob's
        assert receipt["clean"] is True and receipt["residual"]["passage_source"] == 0
        assert one("SELECT count(*) FROM passage_source WHERE scope = %s AND data_subject_id = 'ann'", [project])[0] == 0
        # Nor does the row that named her as a speaker: its observation was erased, so that commit failed too.
        assert one("SELECT count(*) FROM passage_speaker WHERE scope = %s AND data_subject_id = 'ann'", [project])[0] == 0
        assert one("SELECT count(*) FROM passage_speaker WHERE scope = %s AND data_subject_id = 'bob'", [project])[0] == 1
        assert _counted(project, "quokkavill") == 0 and _counted(project, "orchard") == 2
        assert _indexed_through(project) == one("SELECT log_offset FROM watermark WHERE scope = %s", [project])[0]


def _waiting_on_lock(project):
    with psycopg.connect(database_url(settings.DATABASES["default"]["NAME"]), autocommit=True) as probe:
        return probe.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                             " AND query LIKE %s", ["%passage_lexical_state%"]).fetchone()[0] > 0


@pytest.mark.django_db
def test_observe_indexes_a_batch_itself_when_no_worker_keeps_up(new_project, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    project, token = new_project[0], new_project[1]
    monkeypatch.setattr(lexical_index, "HELP_LAG", 3)
    monkeypatch.setattr(lexical_index, "HELP_EVERY", 0.0)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    for n in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post("/v1/observations", content_type="application/json", data=json.dumps(
                {"messages": [{"role": "user", "content": f"Lynx track {n}."}]}))
        assert response.status_code == 201
    assert _sources(project) == 0  # not behind enough: left to the worker
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/v1/observations", content_type="application/json", data=json.dumps(
            {"messages": [{"role": "user", "content": "Lynx track 2."}]}))
    assert response.status_code == 201
    assert _sources(project) == 3 and _indexed_through(project) == 2  # the third observe indexed the batch

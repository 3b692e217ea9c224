"""Lexeme document counts: kept exact by the lexical follower and the passage_source triggers through writes, folds, erasure and the repair's
re-derivation (tests/passages/test_digest_recheck.py), holding no words; and the bounded lexical candidate arms that read them."""
import pytest
from django.db import connection, transaction

from governance import services
from governance.erasure import erase
from memory import lexeme_counts, lexical_index, passages
from tests.conftest import unique_name
from tests.recall.conftest import observe_turn

pytestmark = pytest.mark.django_db


def counts(project, lexemes):
    """What the table says: the sum of each lexeme's delta rows (folded or not)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT l, coalesce((SELECT sum(c.documents) FROM passage_lexeme_count c WHERE c.scope = %s"
                       " AND c.lexeme_key = memoir_lexeme_key(l)), 0) FROM unnest(%s::text[]) l", [project, lexemes])
        return dict(cursor.fetchall())


def true_counts(project, lexemes):
    """What the counts must say: the project's passage sources holding each lexeme, counted from the tsvectors."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT l, (SELECT count(*) FROM passage_source p WHERE p.scope = %s"
                       " AND tsvector_to_array(p.lexemes) @> ARRAY[l]) FROM unnest(%s::text[]) l", [project, lexemes])
        return dict(cursor.fetchall())


def key_rows(project, word):
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM passage_lexeme_count WHERE scope = %s"
                       " AND lexeme_key = memoir_lexeme_key(%s)", [project, word])
        return cursor.fetchone()[0]


def fold(project):
    with transaction.atomic(), connection.cursor() as cursor:
        return lexeme_counts.fold(cursor, project=project)


def test_counts_follow_every_message_and_survive_a_fold(project):
    other_project = unique_name()
    services.create_project(name=other_project, principal="cli")
    observe_turn(project, "The quokka ate a quokka sandwich.", subject="ann")
    observe_turn(project, "A quokka and a wombat met.", subject="bob")
    observe_turn(project, "The wombat slept.", subject="bob")
    observe_turn(other_project, "Quokka quokka quokka.")
    lexical_index.follow(project)
    lexical_index.follow(other_project)
    words = ["quokka", "wombat", "sandwich", "slept", "absent"]
    expected = {"quokka": 2, "wombat": 2, "sandwich": 1, "slept": 1, "absent": 0}
    assert true_counts(project, words) == expected
    assert counts(project, words) == expected  # one document per message, however often the word is in it
    assert fold(project) == 0
    assert counts(project, words) == expected
    assert key_rows(project, "quokka") == 1  # folded into one row per key
    assert counts(other_project, ["quokka"]) == {"quokka": 1}  # per project


def test_the_counts_hold_no_words(project):
    observe_turn(project, "Zanzibarian marmalade.")
    lexical_index.follow(project)
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(c)::text FROM passage_lexeme_count c WHERE scope = %s", [project])
        dumped = " ".join(row[0] for row in cursor.fetchall())
    assert dumped and "zanzibarian" not in dumped.lower() and "marmalad" not in dumped.lower()


def test_erasure_takes_the_subjects_words_out_of_the_counts(project):
    observe_turn(project, "My xylophonist cousin visits Tuesday.", subject="ann")
    observe_turn(project, "My cousin lives in Oslo.", subject="ann")
    observe_turn(project, "My cousin cooks.", subject="bob")
    lexical_index.follow(project)
    receipt = erase(project=project, data_subject_id="ann", principal="cli", principal_kind="operator")
    # ann alone used: xylophonist, visit, tuesday, live, oslo; the shared "cousin" stays, counted once.
    assert receipt["deleted"]["passage_lexeme_count"] == 5
    assert receipt["residual"]["passage_lexeme_count"] == 0
    for word in ("xylophonist", "visit", "tuesday", "live", "oslo"):
        assert key_rows(project, word) == 0, word
    assert counts(project, ["cousin", "cook"]) == {"cousin": 1, "cook": 1} == true_counts(project, ["cousin", "cook"])


def test_a_rare_word_and_a_pair_of_common_words_find_their_messages_past_the_budget(project, monkeypatch):
    monkeypatch.setattr(passages, "LEXICAL_BUDGET", 3)  # the arm size, small enough to bite on a few messages
    for n in range(8):
        observe_turn(project, f"Notes about the garden, entry {n}.")
    for n in range(8):
        observe_turn(project, f"Notes about the kettle, entry {n}.")
    both = observe_turn(project, "The garden kettle is rusty.")
    rare = observe_turn(project, "A heron landed.")
    lexical_index.follow(project)  # the budget bounds the indexed arms (the tail is read whole)
    found = passages.search(project=project, question="the heron in the garden near the kettle")
    sources = [h.source_id for h in found.hits]
    assert str(rare.id) in sources[:2] and str(both.id) in sources[:2]
    # Every arm stayed within its budget: the rare word's, and the pairs'; nothing else was read.
    assert len(sources) <= 1 + 1 + 3


def test_a_word_past_the_budget_is_sampled_while_the_pairs_are_read_in_full(project, monkeypatch):
    monkeypatch.setattr(passages, "LEXICAL_BUDGET", 3)
    monkeypatch.setattr(passages, "OVERFLOW_SAMPLE", 2)
    for n in range(8):
        observe_turn(project, f"Notes about the garden, entry {n}.")
    for n in range(8):
        observe_turn(project, f"Notes about the kettle, entry {n}.")
    both = observe_turn(project, "The garden kettle is rusty.")
    lexical_index.follow(project)
    found = passages.search(project=project, question="the garden kettle")
    sources = [h.source_id for h in found.hits]
    # "garden" (9 messages) passes the budget on its own: its arm reads a sample of 2; the pair arm finds the one
    # message holding both words, which leads.
    assert sources[0] == str(both.id)
    assert len(sources) <= 3
    monkeypatch.setattr(passages, "OVERFLOW_SAMPLE", 5)
    assert len(passages.search(project=project, question="the garden kettle").hits) > 3


def test_the_arms_are_the_rarest_words_then_the_pairs(project):
    counts_by_word = {"heron": 1, "garden": 900, "kettle": 950, "note": 5000}
    idf = {w: 1.0 / n for w, n in counts_by_word.items()}
    arms = passages._candidate_arms(*passages._candidate_terms(sorted(counts_by_word), counts_by_word, idf))
    assert arms[0] == "'heron' | 'garden'"  # 1 + 900 within 1,000; kettle would pass it
    assert "('heron' & 'kettle')" in arms[1] and "('garden' & 'kettle')" in arms[1]
    assert "('heron' & 'garden')" not in arms[1]  # both already generators

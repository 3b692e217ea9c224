"""A recall passage of a message longer than its 512-character quote quotes the part of it that holds the question's
words, verbatim, rather than always its opening."""
import pytest

from memory.recall import MAX_QUOTE_CHARS
from memory.relevance import quote_window, terms

from .conftest import observe_turn, recall_ok

SMALL_TALK = "We talked about the weather and the traffic on the way home from the station that evening. "
ANSWER = "My sister Aoife finally adopted a greyhound called Biscuit last spring."
LONG = SMALL_TALK * 8 + ANSWER + " " + SMALL_TALK * 8
QUESTION = "What is the name of the greyhound my sister adopted?"


def test_a_message_that_fits_is_quoted_whole():
    assert quote_window(ANSWER, terms(QUESTION), MAX_QUOTE_CHARS) == ANSWER


def test_the_window_holding_the_question_words_starts_at_its_sentence():
    quote = quote_window(LONG, terms(QUESTION), MAX_QUOTE_CHARS)
    assert quote.startswith(ANSWER)
    assert quote in LONG and len(quote) <= MAX_QUOTE_CHARS
    # The end is cut back to a whole word, with no trailing space.
    following = LONG[LONG.index(quote) + len(quote)]
    assert following == " " and not quote.endswith(" ")


def test_a_message_with_none_of_the_words_is_quoted_from_its_start():
    assert quote_window(LONG, terms("Which zebra won the regatta?"), MAX_QUOTE_CHARS) == LONG[:MAX_QUOTE_CHARS]


def test_the_window_with_more_distinct_words_wins_and_a_tie_keeps_the_earlier():
    early = "The greyhound needed a new collar. "
    later = "My sister adopted the greyhound in March. "
    text = early + SMALL_TALK * 10 + later + SMALL_TALK * 10
    assert quote_window(text, terms(QUESTION), 200).startswith(later)
    tie = early + SMALL_TALK * 10 + early + SMALL_TALK * 10
    assert quote_window(tie, terms(QUESTION), 200) == tie[:200]


def test_a_sentence_longer_than_the_quote_starts_at_its_first_matching_word():
    text = "and then " * 120 + "the greyhound my sister adopted slept " + "and then " * 120
    quote = quote_window(text, terms(QUESTION), 100)
    assert quote.startswith("greyhound my sister adopted slept and then") and quote in text and len(quote) <= 100


def test_characters_not_bytes_bound_the_quote():
    text = "🐕 " * 400 + ANSWER + " 🐕" * 400  # one sentence of 1,671 characters
    quote = quote_window(text, terms(QUESTION), MAX_QUOTE_CHARS)
    assert quote.startswith("sister Aoife finally adopted a greyhound") and quote.endswith("🐕")
    assert len(quote) <= MAX_QUOTE_CHARS < len(quote.encode("utf-8")) and quote in text


@pytest.mark.django_db
def test_recall_quotes_the_part_of_a_long_message_that_answers(project, auth):
    observe_turn(project, LONG, subject="aoife-sibling")
    observe_turn(project, "I had pasta for dinner.", subject="aoife-sibling")
    bundle = recall_ok(auth, question=QUESTION, data_subject_id="aoife-sibling")
    quoted = [p for p in bundle["passages"] if not p["complete"]]
    assert len(quoted) == 1
    assert quoted[0]["quote"].startswith(ANSWER) and quoted[0]["quote"] in LONG
    # A question about the small talk keeps the opening.
    opening = recall_ok(auth, question="How was the traffic from the station?", data_subject_id="aoife-sibling")
    assert [p["quote"] for p in opening["passages"] if not p["complete"]] == [LONG[:MAX_QUOTE_CHARS]]

"""Question terms (recall.md §2): the split, the trim, normalisation and the 1..4-token windows."""
import pytest

from core.errors import Invalid
from memory.recall import check_question, terms


def test_windows_are_ordered_by_start_then_length():
    assert terms("a b c d e") == [
        "a", "a b", "a b c", "a b c d",
        "b", "b c", "b c d", "b c d e",
        "c", "c d", "c d e",
        "d", "d e",
        "e",
    ]


def test_punctuation_splits_but_apostrophe_and_hyphen_stay_inside_words():
    assert terms("Where's O'Brien's co-op?") == [
        "where's", "where's o'brien's", "where's o'brien's co-op",
        "o'brien's", "o'brien's co-op", "co-op",
    ]


def test_apostrophes_and_hyphens_are_trimmed_from_word_ends():
    assert terms("'Dublin'  --Acme-") == ["dublin", "dublin acme", "acme"]


def test_symbols_are_not_punctuation():
    # + and $ are symbols (category S), so they stay inside their tokens.
    assert terms("C++ costs $5") == ["c++", "c++ costs", "c++ costs $5", "costs", "costs $5", "$5"]


@pytest.mark.parametrize("separator", ["\u00a0", "\u3000", "\u2003", "\n", "\t", "\u2028"])
def test_unicode_white_space_splits(separator):
    assert terms(f"New{separator}York") == ["new", "new york", "york"]


@pytest.mark.parametrize("punct", ["\u00bf", "\u2014", "\u201c", "\u3002", "\u00ab", "!", ",", "(", "\u2019"])
def test_every_punctuation_category_splits(punct):
    assert terms(f"Alpha{punct}Beta") == ["alpha", "alpha beta", "beta"]


def test_u001c_is_not_whitespace():
    # str.isspace() would split here; Unicode White_Space does not (U+001C is a control, category Cc).
    assert terms("a\u001cb") == ["a\u001cb"]


def test_terms_are_lowercased_like_entity_names_and_repeats_dropped():
    assert terms("DUBLIN dublin Dublin") == ["dublin", "dublin dublin", "dublin dublin dublin"]


def test_only_punctuation_has_no_terms():
    assert terms("?!... -- ''") == []


def test_a_word_trimmed_to_nothing_keeps_its_place():
    # "--" becomes an empty word: windows across it are not the adjacent pair "a b".
    found = terms("a -- b")
    assert "a b" not in found
    assert found[0] == "a" and "b" in found


def test_question_size_limit_is_in_bytes_and_never_truncates():
    ok = "é" * 4096  # 8,192 bytes
    assert check_question(ok) == ["é" * 4096]
    with pytest.raises(Invalid) as refused:
        check_question(ok + "e")
    assert refused.value.code == "invalid_question"


def test_more_than_512_distinct_terms_is_refused():
    words = [f"w{i}" for i in range(200)]
    assert len(terms(" ".join(words[:129]))) == 129 * 4 - 6  # 510: under the limit
    check_question(" ".join(words[:129]))
    assert len(terms(" ".join(words[:130]))) == 514
    with pytest.raises(Invalid) as refused:
        check_question(" ".join(words[:130]))
    assert refused.value.code == "invalid_question"


def test_total_term_bytes_over_32768_is_refused():
    # 40 words of 100 bytes: 154 windows, far below 512, but about 60 KB of term text.
    words = [chr(ord("a") + i % 26) * 100 + str(i) for i in range(40)]
    question = " ".join(words)
    assert len(question.encode()) <= 8192
    assert len(terms(question)) < 512
    with pytest.raises(Invalid) as refused:
        check_question(question)
    assert refused.value.code == "invalid_question"

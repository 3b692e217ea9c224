"""The quote locator (formation.md §5): byte spans into one message, whitespace the only tolerance."""

import pytest

from core.text import WHITE_SPACE, collapse_ws, normalize
from formation.locate import locate, quote_at


def located(content: str, quote: str) -> str | None:
    span = locate(content, quote)
    return None if span is None else quote_at(content, *span)


@pytest.mark.parametrize(
    ("content", "quote", "expected"),
    [
        ("I live in Dublin.", "I live in Dublin", "I live in Dublin"),
        ("Well, I live in Dublin.", "live in Dublin", "live in Dublin"),
        ("I live in Zürich now.", "I live in Zürich", "I live in Zürich"),
        ("東京に住んでいます。", "東京に住んで", "東京に住んで"),
        ("I love 🍣 sushi", "🍣 sushi", "🍣 sushi"),
        # The model wrapped the line; the message has a space. The stored quote is the message's bytes.
        ("I live in Dublin and work at Acme.", "I live\nin Dublin", "I live in Dublin"),
        # And the other way round: the message has a line break, the quote a space.
        ("I live in\nDublin.", "I live in Dublin", "I live in\nDublin"),
        ("I  live\t\tin   Dublin", " I live in Dublin ", "I  live\t\tin   Dublin"),
        ("I live in\u00a0Dublin", "I live in Dublin", "I live in\u00a0Dublin"),
        ("私は\u3000東京に住んでいます", "私は 東京", "私は\u3000東京"),
    ],
)
def test_every_span_reproduces_its_quote(content, quote, expected):
    span = locate(content, quote)
    assert span is not None
    start, end = span
    assert content.encode()[start:end].decode() == expected
    # Collapsing whitespace is the only difference the locator tolerates.
    assert collapse_ws(expected) == collapse_ws(quote)


def test_byte_offsets_not_character_offsets():
    content = "Zürich: I live in Zürich."
    assert locate(content, "I live in Zürich") == (9, 26)
    assert len("Zürich: ".encode()) == 9


def test_exact_match_is_the_first_occurrence():
    assert locate("I live in Cork. I live in Cork.", "I live in Cork") == (0, 14)


def test_fixture_span_from_the_spec():
    assert locate("I live in Dublin.", "I live in Dublin") == (0, 16)


def test_collapsed_match_spans_multibyte_characters_on_both_ends():
    content = "Er sagt:  Ich wohne in  Zürich, wirklich."
    start, end = locate(content, "Ich wohne in Zürich")
    assert content.encode()[start:end].decode() == "Ich wohne in  Zürich"


@pytest.mark.parametrize(
    ("content", "quote"),
    [
        ("I live in Dublin.", "i live in dublin"),  # case differs
        ("I live in Dublin.", "I live in Dublin!"),  # punctuation is not tolerated
        ("I live in Dublin.", "I reside in Dublin"),  # a paraphrase
        ("I live in Zürich.", "I live in Zu\u0308rich"),  # no Unicode normalisation
        ("I live in Dublin.", ""),
        ("I live in Dublin.", "   "),
        ("I live in Dublin.", "\n\t\u3000"),
        ("I live in Dublin.", "I live in \ud800"),  # a lone surrogate from JSON cannot be in the message
    ],
)
def test_unlocatable(content, quote):
    assert locate(content, quote) is None


def test_u001c_is_not_whitespace():
    # str.isspace() accepts U+001C..U+001F; the White_Space property does not.
    assert "\x1c".isspace()
    assert "\x1c" not in WHITE_SPACE
    assert locate("I live\x1cin Dublin", "I live in Dublin") is None
    assert locate("I live in Dublin", "I live\x1cin Dublin") is None
    assert located("I live\x1c in Dublin", "I live\x1c in Dublin") == "I live\x1c in Dublin"


def test_white_space_set_is_the_unicode_property():
    expected = {chr(c) for c in [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]}
    assert expected == WHITE_SPACE
    assert "\u200b" not in WHITE_SPACE  # zero width space is not White_Space


def test_normalize():
    assert normalize("  The\u00a0User\n") == "the user"
    assert normalize("Zürich\u3000City") == "zürich city"
    assert normalize("a\x1cb") == "a\x1cb"
    assert normalize(" \t ") == ""

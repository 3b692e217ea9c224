"""The evidence context window (recall.md §6): whole words at cut edges, whole characters always."""
from memory.evidence import CONTEXT_WINDOW, legible


def window(message: str, quote: str, size=CONTEXT_WINDOW):
    """Cut the raw window exactly as the SQL does; returns legible()'s arguments."""
    raw = message.encode("utf-8")
    start = raw.index(quote.encode("utf-8"))
    end = start + len(quote.encode("utf-8"))
    lo, hi = max(0, start - size), min(len(raw), end + size)
    return raw[lo:hi], lo, start, end, len(raw)


def test_uncut_window_is_the_whole_message_and_complete():
    message = "  I live in Dublin.  "
    context, context_start, complete = legible(*window(message, "I live in Dublin"))
    assert (context, context_start, complete) == (message, 0, True)


def test_cut_edges_keep_whole_words():
    message = "x" * 50 + " alpha beta " + "Q" * 10 + " gamma delta " + "y" * 50
    raw_args = window(message, "Q" * 10, size=8)
    raw, lo, start, end, total = raw_args
    assert raw.decode() == "ha beta " + "Q" * 10 + " gamma d"
    context, context_start, complete = legible(*raw_args)
    assert context == "beta " + "Q" * 10 + " gamma"
    assert context_start == message.index("beta")
    assert complete is False
    # The quote sits at byte_start - context_start inside the context.
    assert context.encode()[start - context_start:end - context_start] == b"Q" * 10


def test_whitespace_runs_at_cut_edges_are_skipped_entirely():
    message = "aaaa  \u00a0 bbbb QUOTE cccc \u3000\t dddd"
    args = window(message, "QUOTE", size=11)
    assert args[0].decode() == "a  \u00a0 bbbb QUOTE cccc \u3000\t "
    context, _, _ = legible(*args)
    assert context == "bbbb QUOTE cccc"


def test_cut_start_inside_a_multibyte_character_without_whitespace_drops_only_that_character():
    message = "日本語の文章" + "QUOTE" + "です"
    raw = message.encode()
    start = raw.index(b"QUOTE")
    lo = start - 7  # 7 bytes before the quote: 2 full 3-byte characters plus one trailing byte of another
    args = (raw[lo:start + 5], lo, start, start + 5, len(raw))
    context, context_start, complete = legible(*args)
    assert context == "文章QUOTE"
    assert context_start == lo + 1
    assert complete is False


def test_cut_end_inside_a_multibyte_character_without_whitespace_drops_the_split_character():
    message = "QUOTE" + "🙂🙂🙂"
    raw = message.encode()
    hi = 5 + 4 + 2  # one whole emoji and half of the next
    context, context_start, complete = legible(raw[0:hi], 0, 0, 5, len(raw))
    assert context == "QUOTE🙂"
    assert context_start == 0
    assert complete is False


def test_multibyte_whitespace_at_a_cut_is_whitespace():
    message = "début\u3000fin QUOTE suite\u3000reste"
    raw = message.encode()
    start = raw.index(b"QUOTE")
    lo, hi = 2, len(raw) - 2
    context, context_start, _ = legible(raw[lo:hi], lo, start, start + 5, len(raw))
    assert context == "fin QUOTE suite"
    assert context_start == raw.index(b"fin")


def test_only_the_cut_edge_is_trimmed():
    message = "Start of it QUOTE then the rest"
    raw = message.encode()
    start = raw.index(b"QUOTE")
    # The window starts at the message start (not cut) but ends mid-word (cut).
    context, context_start, complete = legible(raw[: start + 5 + 7], 0, start, start + 5, len(raw))
    assert context == "Start of it QUOTE then"
    assert context_start == 0 and complete is False
    # The window ends at the message end (not cut) but starts mid-word (cut).
    lo = 2
    context, context_start, complete = legible(raw[lo:], lo, start, start + 5, len(raw))
    assert context == "of it QUOTE then the rest"
    assert context_start == raw.index(b"of it") and complete is False


def test_quote_bytes_are_never_trimmed_even_when_they_touch_the_cut():
    message = "abc QUOTE with spaces inside xyz"
    raw = message.encode()
    quote = b"QUOTE with spaces inside"
    start = raw.index(quote)
    end = start + len(quote)
    context, context_start, _ = legible(raw[start:end], start, start, end, len(raw))
    assert context == quote.decode() and context_start == start


def test_window_without_the_quote_is_empty():
    message = "hello world"
    raw = message.encode()
    assert legible(raw[0:3], 0, 5, 9, len(raw))[0] == ""

"""The legible context around a cited quote (recall.md §6), shared by recall and citations.

SQL cuts a raw byte window around the quote; `legible` turns it into whole words and whole characters.
"""
from core.text import WHITE_SPACE

CONTEXT_WINDOW = 160  # bytes on each side of the quote


def _decode_tail_cut(data: bytes) -> tuple[str, int]:
    """Decode bytes whose start is a character boundary but whose end may split a character.

    Returns the text and how many bytes it used (at most three trailing bytes are dropped).
    """
    for drop in range(4):
        try:
            return data[: len(data) - drop].decode("utf-8"), len(data) - drop
        except UnicodeDecodeError:
            continue
    raise UnicodeDecodeError("utf-8", data, 0, len(data), "not UTF-8 apart from a split last character")


def _decode_head_cut(data: bytes) -> tuple[str, int]:
    """Decode bytes whose end is a character boundary but whose start may split a character.

    Returns the text and how many leading bytes were dropped (at most three).
    """
    for drop in range(4):
        try:
            return data[drop:].decode("utf-8"), drop
        except UnicodeDecodeError:
            continue
    raise UnicodeDecodeError("utf-8", data, 0, len(data), "not UTF-8 apart from a split first character")


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _kept_start(prefix: bytes) -> int:
    """Where a cut start keeps from, as an offset into the bytes before the quote."""
    text, dropped = _decode_head_cut(prefix)
    first_ws = next((i for i, ch in enumerate(text) if ch in WHITE_SPACE), None)
    if first_ws is None:
        # One long word: keep it, minus the bytes of the character the cut split.
        return dropped
    word = first_ws
    while word < len(text) and text[word] in WHITE_SPACE:
        word += 1
    return dropped + _utf8_len(text[:word])


def _kept_end(suffix: bytes) -> int:
    """How many bytes after the quote a cut end keeps."""
    text, used = _decode_tail_cut(suffix)
    last_ws = next((i for i in range(len(text) - 1, -1, -1) if text[i] in WHITE_SPACE), None)
    if last_ws is None:
        return used
    end = last_ws
    while end > 0 and text[end - 1] in WHITE_SPACE:
        end -= 1
    return _utf8_len(text[:end])


def legible(window_bytes: bytes, window_start: int, quote_start: int, quote_end: int,
            message_bytes: int) -> tuple[str, int, bool]:
    """(context, context_start, complete) for a quote at message bytes [quote_start, quote_end).

    `window_bytes` is the message slice starting at byte `window_start`; `message_bytes` is the
    message's full length. Only an edge that is not the message's own edge counts as cut. A window
    that does not hold the quote gives an empty, incomplete context starting at the quote.
    """
    window = bytes(window_bytes)
    window_end = window_start + len(window)
    if not (window_start <= quote_start <= quote_end <= window_end):
        return "", quote_start, False
    rel_start = quote_start - window_start
    rel_end = quote_end - window_start
    start_cut = window_start > 0
    end_cut = window_end < message_bytes
    kept_start = _kept_start(window[:rel_start]) if start_cut else 0
    kept_end = rel_end + _kept_end(window[rel_end:]) if end_cut else len(window)
    context = window[kept_start:kept_end].decode("utf-8")
    return context, window_start + kept_start, not (start_cut or end_cut)

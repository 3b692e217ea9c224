"""The quote locator: finds a proposal's quote in one message as a UTF-8 byte span (formation.md §5).

The model's quote is only a search term; what is stored is always the located bytes of the message.
"""

from core.text import WHITE_SPACE


def locate(content: str, quote: str) -> tuple[int, int] | None:
    """Return the byte span ``(start, end)`` of ``quote`` in ``content``, or None.

    Exact match first, then a whitespace-collapsed match mapped back to the original bytes.
    Matching is case-sensitive; whitespace is the only tolerance.
    """
    if not quote or all(ch in WHITE_SPACE for ch in quote):
        return None
    try:
        needle = quote.encode()
    except UnicodeEncodeError:
        # A lone surrogate from a JSON reply can never be in stored (valid UTF-8) content.
        return None
    haystack = content.encode()
    start = haystack.find(needle)
    if start >= 0:
        return start, start + len(needle)
    return _locate_collapsed(content, quote)


def _collapse_with_map(text: str) -> tuple[bytes, list[int], list[int]]:
    """Collapse whitespace in ``text`` and record, per output byte, the source character's byte span.

    A collapsed run becomes one space attributed to the character that follows it, so a match
    never starts or ends on a space (the needle is stripped) and maps onto real message bytes.
    """
    out = bytearray()
    orig_start: list[int] = []
    orig_end: list[int] = []
    offset = 0
    pending_space = False
    for ch in text:
        width = len(ch.encode())
        if ch in WHITE_SPACE:
            pending_space = bool(out)  # leading whitespace is dropped
        else:
            if pending_space:
                out += b" "
                orig_start.append(offset)
                orig_end.append(offset + width)
                pending_space = False
            encoded = ch.encode()
            out += encoded
            orig_start.extend([offset] * width)
            orig_end.extend([offset + width] * width)
        offset += width
    return bytes(out), orig_start, orig_end


def _locate_collapsed(content: str, quote: str) -> tuple[int, int] | None:
    norm_content, orig_start, orig_end = _collapse_with_map(content)
    norm_quote, _, _ = _collapse_with_map(quote)
    if not norm_quote:
        return None
    i = norm_content.find(norm_quote)
    if i < 0:
        return None
    return orig_start[i], orig_end[i + len(norm_quote) - 1]


def quote_at(content: str, start: int, end: int) -> str:
    """The stored quote: the message's own bytes ``[start, end)`` decoded, never the model's text."""
    return content.encode()[start:end].decode()

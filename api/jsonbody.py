"""Strict request bodies (api.md §3): decode_body() for the byte and JSON rules and parse_timestamp() for RFC 3339
times. Field names, types and rules are each route's contract (api.contract); the string checks live in core.strings.

Every violation here is 400 invalid_body.
"""

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from itertools import accumulate
from typing import Any

from api.errors import ApiError

MAX_BODY_BYTES = 1_048_576
MAX_DEPTH = 128
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_UTF8_BOM = b"\xef\xbb\xbf"


def _invalid_body() -> ApiError:
    return ApiError(400, "invalid_body")


# ---------------------------------------------------------------------------
# Items 1-6: bytes and JSON syntax.

# One JSON string token. Possessive quantifiers keep it linear on hostile input, and the closing
# quote is optional so an unterminated string is swallowed instead of rescanned from every quote.
_STRING_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _too_deep(text: str) -> bool:
    """True when brackets outside strings nest deeper than MAX_DEPTH.

    Runs before json.loads so that "[[[[…" 100k deep is refused instead of raising
    RecursionError inside the parser. On invalid JSON the answer only needs to be safe: the parser
    never gets deeper than the prefix it accepted, and that prefix is tokenised the same way here.
    """
    brackets = _NOT_BRACKET.sub("", _STRING_TOKEN.sub("", text))
    opens = brackets.count("[") + brackets.count("{")
    if opens <= MAX_DEPTH:  # the common case: cannot be too deep, skip the walk
        return False
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets))) > MAX_DEPTH


def _refuse_constant(_name: str):
    # NaN, Infinity, -Infinity are not JSON.
    raise ValueError("non-finite number")


def _pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict:
    # Duplicates are compared case-insensitively so "question" and "QUESTION" cannot both
    # arrive and leave it to chance which one a route reads.
    seen: set[str] = set()
    for key, _ in pairs:
        folded = key.casefold()
        if folded in seen:
            raise ValueError("duplicate key")
        seen.add(folded)
    return dict(pairs)


def _check_values(root: dict) -> None:
    """Walk the parsed tree (without recursion): every string and key must be encodable as UTF-8
    (no lone surrogates from \\uXXXX escapes) and every integer must fit in signed 64 bits."""
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                key.encode("utf-8")  # UnicodeEncodeError is a ValueError
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            node.encode("utf-8")
        elif type(node) is int and not INT64_MIN <= node <= INT64_MAX:
            raise ValueError("integer out of range")


def decode_body(raw: bytes) -> dict:
    """Decode a request body into exactly one JSON object, or raise ApiError(400, invalid_body)."""
    if not raw or len(raw) > MAX_BODY_BYTES or raw.startswith(_UTF8_BOM):
        raise _invalid_body()
    try:
        # Strict decoding also refuses UTF-8-encoded surrogates (ED A0 80).
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid_body() from None
    if _too_deep(text):
        raise _invalid_body()
    try:
        # json.loads allows only JSON whitespace (space, tab, CR, LF) around the value and
        # refuses trailing data; strict=True (the default) refuses raw control characters.
        value = json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=_pairs_to_dict
        )
        if not isinstance(value, dict):
            raise _invalid_body()
        _check_values(value)
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError, the hooks above, UnicodeEncodeError and Python's
        # int-digit limit on absurdly long integer literals.
        raise _invalid_body() from None
    return value


# ---------------------------------------------------------------------------
# Item 9: timestamps.


_TIMESTAMP_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))"
)


def parse_timestamp(s: str) -> datetime | None:
    """An RFC 3339 string (api.md §3 item 9) as an aware UTC datetime, or None if it is not one.

    Fractions finer than a microsecond are truncated, not rounded.
    """
    m = _TIMESTAMP_RE.fullmatch(s)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = (
        m.groups()
    )
    micro = int(fraction[:6].ljust(6, "0")) if fraction else 0
    try:
        if zulu:
            tz = UTC
        else:
            # timedelta would silently carry minute 75 into the hour, so bound both parts.
            if int(off_h) > 23 or int(off_m) > 59:
                return None
            offset = timedelta(hours=int(off_h), minutes=int(off_m))
            tz = timezone(-offset if sign == "-" else offset)
        # datetime() refuses impossible dates and times (Feb 30, hour 24, leap second 60).
        date_part = (int(year), int(month), int(day))
        time_part = (int(hour), int(minute), int(second), micro)
        local = datetime(*date_part, *time_part, tzinfo=tz)
        return local.astimezone(UTC)
    # OverflowError: year 1 or 9999 pushed out of range by the offset.
    except (ValueError, OverflowError):
        return None

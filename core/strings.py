"""String checks every layer applies to text it is handed: blank, NUL, canonical UUID spelling, UTF-8 size.

Blank means empty after stripping Unicode White_Space (core.text.WHITE_SPACE, the one definition), never
str.isspace()/str.strip(): those also treat U+001C..U+001F as space.
"""
import re
from typing import Any

from core.text import WHITE_SPACE

_WHITE_SPACE_CHARS = "".join(sorted(WHITE_SPACE))

_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def is_blank(s: str) -> bool:
    """True when s is empty after stripping Unicode White_Space."""
    return not s.strip(_WHITE_SPACE_CHARS)


def has_nul(s: str) -> bool:
    """True when s contains U+0000, which PostgreSQL text cannot hold."""
    return "\x00" in s


def canonical_uuid(s: Any) -> str | None:
    """The lowercase 8-4-4-4-12 form of a UUID string, or None for any other spelling."""
    if not isinstance(s, str) or _UUID_RE.fullmatch(s) is None:
        return None
    return s.lower()


def utf8_len(s: str) -> int:
    """Size of s in UTF-8 bytes (the unit of every size limit in the contract)."""
    return len(s.encode("utf-8"))

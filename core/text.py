"""White space and name normalisation shared by the quote locator, the gates, entity identity, recall and
the request string checks (core.strings): the ONE definition of the Unicode White_Space set.

"Whitespace" is the Unicode White_Space property (formation.md §5), never ``str.isspace()``.
"""

import re

# The Unicode White_Space set. str.isspace() and the re module's \s also accept
# U+001C..U+001F, which are separators, not whitespace, so neither is used.
WHITE_SPACE = frozenset(
    [chr(c) for c in range(0x09, 0x0E)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)

# A character class for WHITE_SPACE, for building regular expressions elsewhere.
WS_CLASS = "[" + "".join(sorted(re.escape(ch) for ch in WHITE_SPACE)) + "]"

_WS_RUN = re.compile(WS_CLASS + "+")


def is_ws(ch: str) -> bool:
    """True if the single character ``ch`` is White_Space."""
    return ch in WHITE_SPACE


def collapse_ws(text: str) -> str:
    """Turn every whitespace run into one space and drop leading and trailing whitespace."""
    return " ".join(part for part in _WS_RUN.split(text) if part)


def normalize(name: str) -> str:
    """The one name normalisation (formation.md §7.1): lower(), split on White_Space, join with one space."""
    return collapse_ws(name.lower())

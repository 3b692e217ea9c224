"""Question-term overlap without a dictionary: the crude stems recall orders a speaker's facts by, and the window of
a long message that a recall passage quotes (docs/decisions.md, "Recall's passages")."""
import bisect
import re
from collections import Counter

from core.text import WHITE_SPACE

# Words that say nothing about what a question is after.
STOP = frozenset(
    "the a an and or but of to in on at for with about from by is are was were be been being do does did have has"
    " had what which who whom whose when where why how i me my mine we our you your he she it they them their his"
    " her its this that these those there here not no yes can could would should will shall may might must any"
    " some all am".split())
STEM = 5  # letters kept of a word: "moved" meets "moving"
_SENTENCE_END = re.compile(r"[.!?\n]")
_WORD = re.compile(r"[^\W_]+")  # \w is str.isalnum() plus "_"


def _words(text):
    """(start, end, lower-cased word) for each run of letters and digits in `text`."""
    return [(m.start(), m.end(), m.group().lower()) for m in _WORD.finditer(text)]


def _stem(word):
    return word[:STEM] if len(word) >= 3 and word not in STOP else None


def terms(text):
    """The stems of the content words of `text`."""
    return {stem for _, _, word in _words(text) if (stem := _stem(word))}


def _sentence_start(text, sentence_starts, position, earliest):
    """Where the sentence holding the word at `position` starts (`sentence_starts`: ascending offsets just after a
    sentence end), or the word itself when the sentence starts before `earliest`."""
    index = bisect.bisect_right(sentence_starts, position) - 1
    cut = sentence_starts[index] if index >= 0 else 0
    if cut < earliest:
        return position
    while cut < position and text[cut] in WHITE_SPACE:
        cut += 1
    return cut


def quote_window(text, asked, limit):
    """At most `limit` characters of `text`: the whole text when it fits; else the window holding the most distinct
    `asked` stems, starting where a sentence holding one of them starts (or at that word, when the sentence starts
    too early for the word to fit), its end cut back to a whole word, the earliest such window on a tie; the first
    `limit` characters when no stem occurs or none beats the start. Deterministic for the same text and stems."""
    if len(text) <= limit:
        return text
    matches = [(start, end, stem) for start, end, word in _words(text) if (stem := _stem(word)) in asked]
    if not matches:
        return text[:limit]
    sentence_starts = [m.end() for m in _SENTENCE_END.finditer(text)]
    starts = sorted({0} | {_sentence_start(text, sentence_starts, start, end - limit) for start, end, _ in matches})
    ends = [end for _, end, _ in matches]
    best, best_count = 0, -1
    held, lo, hi = Counter(), 0, 0
    for start in starts:
        # Matches wholly inside [start, start + limit): both bounds only move forward as `start` grows.
        while lo < len(matches) and matches[lo][0] < start:
            if lo < hi:
                held[matches[lo][2]] -= 1
                if not held[matches[lo][2]]:
                    del held[matches[lo][2]]
            lo += 1
        hi = max(hi, lo)
        stop = bisect.bisect_right(ends, start + limit)
        while hi < stop:
            held[matches[hi][2]] += 1
            hi += 1
        if len(held) > best_count:
            best, best_count = start, len(held)
    if best == 0:
        return text[:limit]
    window = text[best:best + limit]
    if best + limit < len(text) and text[best + limit].isalnum():
        cut = max(window.rfind(ch) for ch in WHITE_SPACE)
        if cut > 0:
            window = window[:cut]
    return window.rstrip("".join(WHITE_SPACE))

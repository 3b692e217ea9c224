"""The offline rules proposer (``rules/v1``, formation.md §9): deterministic English pattern matching.

Same interface and same gates as the model client. ANY change to its output for any input must bump
VERSION (rules/v2, ...) together with a migration adding the new value to the extractor_version CHECKs.
"""

import bisect
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from core.text import WHITE_SPACE, WS_CLASS, normalize
from formation.proposals import Message, PredicateSpec, Proposal

VERSION = "rules/v1"

# Used when a predicate is missing from the vocabulary passed in; the gates refuse it anyway.
_FALLBACK_KINDS = {
    "lives_in": "place", "works_at": "organisation", "has_name": "value", "has_role": "value",
    "prefers": "thing", "dislikes": "thing", "speaks": "value", "uses": "thing", "knows_about": "thing",
    "intends_to": "thing",
}

# --- tokens -------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

# Contractions are expanded so that patterns are written once; every part keeps the word's span.
_EXPANSIONS = {
    "i'm": ("i", "am"), "i've": ("i", "have"), "i'd": ("i", "would"), "i'll": ("i", "will"),
    "don't": ("do", "not"), "doesn't": ("does", "not"), "didn't": ("did", "not"),
    "haven't": ("have", "not"), "hasn't": ("has", "not"), "hadn't": ("had", "not"),
    "isn't": ("is", "not"), "aren't": ("are", "not"), "wasn't": ("was", "not"), "weren't": ("were", "not"),
    "won't": ("will", "not"), "wouldn't": ("would", "not"), "shouldn't": ("should", "not"),
    "couldn't": ("could", "not"), "can't": ("can", "not"), "cannot": ("can", "not"),
    "name's": ("name", "is"), "gonna": ("going", "to"),
}


@dataclass(frozen=True)
class _Token:
    word: str  # lower case, with ’ read as '
    start: int  # character offsets into the message
    end: int
    cap: bool  # the original word starts with an upper-case letter


def _tokenize(content: str) -> list[_Token]:
    tokens = []
    for match in _WORD.finditer(content):
        text = match.group()
        word = text.lower().replace("’", "'")
        parts = _EXPANSIONS.get(word)
        # A contraction ("I'm", "Don't") is never a name, so its parts carry no capital.
        cap = text[0].isupper() and parts is None
        for part in parts or (word,):
            tokens.append(_Token(part, match.start(), match.end(), cap))
    return tokens


# --- segmentation -------------------------------------------------------------------------------

_LINE_BREAKS = "\n\r\x0b\x0c\x85\u2028\u2029"
# Each run of stops or of white space is tried once, from its first character (the lookbehinds), and never
# given back (possessive quantifiers): both keep segmentation linear on a 64 KiB run of dots or spaces.
_SENTENCE_BOUNDARY = re.compile(
    r"(?P<stop>(?<![.!?])[.!?]++[\"”’')\]]*+)(?=" + WS_CLASS + r"|$)|(?P<line>[" + _LINE_BREAKS + r"])"
)
_CLAUSE_SEPARATOR = re.compile(
    r"(?P<semi>;)"
    r"|(?P<but>(?:,|(?<!" + WS_CLASS + r"))" + WS_CLASS + r"++but" + WS_CLASS + r"++)"
    r"|(?P<and>(?<!" + WS_CLASS + r")" + WS_CLASS + r"++and" + WS_CLASS + r"++)",
    re.IGNORECASE,
)


def _strip_span(content: str, start: int, end: int) -> tuple[int, int]:
    while start < end and content[start] in WHITE_SPACE:
        start += 1
    while end > start and content[end - 1] in WHITE_SPACE:
        end -= 1
    return start, end


def _sentences(content: str) -> list[tuple[int, int]]:
    """Sentence spans: split after . ! ? followed by whitespace or the end, and at line breaks."""
    spans, start = [], 0
    for match in _SENTENCE_BOUNDARY.finditer(content):
        end = match.end() if match.group("stop") else match.start()
        spans.append(_strip_span(content, start, end))
        start = match.end()
    spans.append(_strip_span(content, start, len(content)))
    return [(s, e) for s, e in spans if s < e]


def _clauses(content: str, start: int, end: int) -> list[tuple[int, int, bool]]:
    """Clause spans of one sentence, each flagged True when it follows "and"."""
    clauses, after_and = [], False
    for match in _CLAUSE_SEPARATOR.finditer(content, start, end):
        clauses.append((*_strip_span(content, start, match.start()), after_and))
        after_and = match.group("and") is not None
        start = match.end()
    clauses.append((*_strip_span(content, start, end), after_and))
    return [(s, e, a) for s, e, a in clauses if s < e]


# --- patterns -----------------------------------------------------------------------------------

# Pattern kinds, which decide tense and what is emitted.
PRESENT, PAST, PERFECT, MODAL_ONLY, AFTER_MODIFIER, PLAN, NAME = (
    "present", "past", "perfect", "modal_only", "after_modifier", "plan", "name",
)


@dataclass(frozen=True)
class _Pattern:
    predicate: str
    aux: tuple[str, ...]  # modifiers may come before each auxiliary and before the tail
    tail: tuple[str, ...]  # contiguous words ending the pattern
    kind: str = PRESENT


def _patterns(predicate: str, specs: str, kind: str = PRESENT) -> list[_Pattern]:
    """Build patterns from "aux aux | tail words" strings; "at/for" expands to alternatives."""
    built = []
    for spec in specs.split(";"):
        aux, _, tail = spec.strip().rpartition("|")
        words = tail.split()
        alternatives = [[]]
        for word in words:
            alternatives = [prefix + [choice] for prefix in alternatives for choice in word.split("/")]
        for tail_words in alternatives:
            built.append(_Pattern(predicate, tuple(aux.split()), tuple(tail_words), kind))
    return built


@dataclass(frozen=True)
class _Table:
    """Patterns in priority order, indexed by first word so a subject only tries those that can start."""

    by_first_word: dict[str, list[tuple[int, _Pattern]]]

    @classmethod
    def of(cls, patterns: Sequence[_Pattern]) -> "_Table":
        index: dict[str, list[tuple[int, _Pattern]]] = {}
        for order, pattern in enumerate(patterns):
            index.setdefault((pattern.aux + pattern.tail)[0], []).append((order, pattern))
        return cls(index)


# First person, after "I". Order matters: the first pattern that matches wins.
_FIRST_PERSON = _Table.of([
    *_patterns("intends_to", "| plan to; am | planning to; | intend to; am | intending to", PLAN),
    *_patterns("dislikes", "do | not like; | dislike; | hate"),
    *_patterns("knows_about", "am | an expert in/on; am | familiar with; | know about"),
    *_patterns("speaks", "am | fluent in; can | speak; | speak"),
    *_patterns("lives_in", "am | living in; am | based in; have been | living in; have | moved to; | moved to"),
    *_patterns("lives_in", "have | lived in", PERFECT),
    *_patterns("lives_in", "| lived in; was | living in; was | based in", PAST),
    *_patterns("lives_in", "| live in"),
    *_patterns("lives_in", "| move to; | relocate to; be | based in; be | living in", MODAL_ONLY),
    *_patterns("works_at", "am | working at/for; have been | working at/for"),
    *_patterns("works_at", "have | worked at/for", PERFECT),
    *_patterns("works_at", "| worked at/for; was | working at/for", PAST),
    *_patterns("works_at", "| work at/for"),
    *_patterns("works_at", "be | working at/for", MODAL_ONLY),
    *_patterns("has_role", "| work as a/an; am | a/an"),
    *_patterns("has_role", "was | a/an", PAST),
    *_patterns("has_role", "be | a/an", MODAL_ONLY),
    *_patterns("has_name", "am | called", NAME),
    *_patterns("prefers", "| prefer; | like; | love; | enjoy"),
    *_patterns("uses", "am | using; | use"),
])

# Third person, after a capitalised name (optional patterns, for two-hop demos).
_THIRD_PERSON = _Table.of([
    *_patterns("lives_in", "| lives in"),
    *_patterns("works_at", "| works at/for"),
    *_patterns("lives_in", "| lived in", PAST),
    *_patterns("works_at", "| worked at/for", PAST),
    *_patterns("lives_in", "| live in; | move to", AFTER_MODIFIER),
    *_patterns("works_at", "| work at/for", AFTER_MODIFIER),
])
# "<Name> is a X" is left out on purpose: any capitalised word starts a sentence, and "Python is a
# language", "Life is a journey" or "Below is a message" would each make a person with a role.

# Modifier words allowed between the subject and the pattern, with what they signal. Any other
# word there means the sentence is not one these patterns understand, and nothing is proposed.
NEG, HEDGE, HYPO, PAST_MOD, FUTURE, NEUTRAL = "neg", "hedge", "hypo", "past", "future", "neutral"
_MODIFIERS = {
    ("not",): NEG, ("never",): NEG,
    ("might",): HEDGE, ("may",): HEDGE, ("maybe",): HEDGE, ("probably",): HEDGE, ("perhaps",): HEDGE,
    ("possibly",): HEDGE,
    ("would",): HYPO, ("could",): HYPO, ("should",): HYPO,
    ("used", "to"): PAST_MOD, ("no", "longer"): PAST_MOD,
    ("will",): FUTURE, ("shall",): FUTURE, ("am", "going", "to"): FUTURE, ("is", "going", "to"): FUTURE,
    ("going", "to"): FUTURE,
    **{(word,): NEUTRAL for word in (
        "also", "really", "still", "currently", "now", "actually", "just", "usually", "mostly", "definitely",
        "absolutely", "truly", "genuinely", "totally", "honestly", "always", "already", "do", "does", "even",
        "finally", "recently", "officially",
    )},
}
_MODIFIER_LENGTHS = sorted({len(words) for words in _MODIFIERS}, reverse=True)
# Modifiers that license a base-form verb ("will move to", "used to be a").
_MODALS = {("will",), ("shall",), ("am", "going", "to"), ("is", "going", "to"), ("going", "to"), ("would",),
           ("could",), ("should",), ("might",), ("may",), ("used", "to")}

_REPORTING_VERBS = frozenset({
    "said", "says", "say", "saying", "told", "tells", "telling", "claims", "claimed", "thinks", "believes",
    "mentioned", "mentions", "wrote", "writes", "reckons", "insists", "insisted", "assumes", "assumed",
    "suspects", "suspected", "heard", "hears", "swears", "swore", "announced", "announces", "posted", "posts",
    "tweeted", "texted", "emailed", "reported", "reports", "show", "shows", "showed", "according",
})
# Words before the subject in its clause that make the words an exercise or a piece of fiction rather
# than the speaker's own statement: "Write a story where I …", "In the story, I am a wizard".
_TASK_WORDS = frozenset({
    "translate", "translation", "write", "rewrite", "draft", "generate", "proofread", "paraphrase",
    "summarise", "summarize", "repeat", "example", "examples", "eg", "roleplay", "story", "stories",
    "character", "fiction", "novel", "poem", "script", "bio", "sample", "template", "truths", "pretend",
    "scenario", "instance", "lyrics", "chapter", "hypothetical", "exercise",
})
# Words that frame what follows only from before a colon or on a line of their own ("Here is the email I
# got:", "Correct the grammar:", "Goals:"): in a plain clause they are ordinary chat ("I got your message,
# I live in Paris").
_INTRO_WORDS = _TASK_WORDS | {
    "email", "message", "letter", "got", "received", "forwarded", "quote", "quoted", "grammar", "spell",
    "correct", "sentence", "song", "goals", "list", "options", "ideas", "todo", "plans", "wishlist", "bucket",
    "test", "game", "role",
}
# Sentences that open with these and say nothing themselves frame the lines after them: "Let's roleplay.",
# "e.g.", "Chapter 1."
_FRAME_OPENERS = _INTRO_WORDS | {"let's", "lets", "imagine", "e", "i.e", "ie"}
# Single words before a colon that head a note, not a speaker: "Note: I live in Paris" asserts.
_NOT_SPEAKERS = frozenset({
    "note", "notes", "update", "fyi", "ps", "edit", "reminder", "btw", "context", "background", "answer", "a",
    "reply", "response", "tldr", "nb", "important", "correction", "also", "anyway", "fact", "info", "me",
})
# A question word anywhere before the subject: "Tell me why I live in Paris", "Did I say I …".
_QUESTION_WORDS = frozenset({"why", "how", "what", "whether", "which"})
# Time words before the subject that put the claim out of the present: "Next year I live in Paris".
_FUTURE_WORDS = frozenset({"tomorrow", "next", "soon", "later", "starting", "upcoming", "someday"})
_PAST_WORDS = frozenset({"previously", "formerly", "back", "ago", "yesterday", "last", "earlier", "before",
                         "once"})
_HEDGE_VERBS = frozenset({
    "think", "guess", "believe", "suppose", "reckon", "assume", "doubt", "wonder", "wondering", "check", "verify",
    "confirm", "hope", "dream", "seems", "seem", "appears", "appear", "looks",
})
_HEDGE_WORDS = frozenset({
    "maybe", "probably", "perhaps", "possibly", "apparently", "supposedly", "allegedly", "seemingly",
    "reportedly", "hypothetically", "presumably", "likely", "rumour", "rumor",
})
_CONDITIONALS = frozenset({
    "if", "whether", "unless", "wish", "imagine", "assuming", "supposing", "let's", "lets", "when", "whenever",
    "once", "provided", "providing", "case", "where",
})
# A negation anywhere before the subject in its clause ("It's not true that I …", "Nobody would say I …")
# means the clause does not assert what follows; with these words it is doubt rather than denial.
_NEGATIONS = frozenset({
    "not", "never", "nobody", "neither", "nor", "false", "untrue", "lie", "lied", "deny", "denied", "joke",
    "joked", "joking", "kidding",
})
_DOUBT_WORDS = frozenset({"sure", "certain", "know", "convinced", "think", "believe", "guess", "reckon"})
# Punctuation that ends the words framing a subject: "Not that it matters, I live in Paris" asserts.
_FRAME_BREAKS = frozenset(",:;—–")
# Words after the object that take the assertion back: "…, or so my mother says", "…, I think".
_TRAILING_OBJECTS = frozenset({"me", "us", "so"})
# A whole sentence that takes back the one before it: "I live in Paris. Just kidding."
_RETRACTIONS = frozenset({
    "just kidding", "kidding", "jk", "j k", "lol jk", "just joking", "joking", "not really", "not", "nope",
    "that's a lie", "that is a lie", "i lied", "not true", "that's not true", "that is not true", "yeah right",
    "s", "sarcasm", "april fools", "as if", "none of that is true", "i am joking", "i am kidding", "only joking",
    "that was a joke", "not at all",
})
# An auxiliary right before the subject is a question ("Do I live in Dublin?"), which asserts nothing.
_QUESTION_AUX = frozenset({
    "do", "does", "did", "am", "are", "is", "was", "were", "have", "has", "had", "can", "could", "would",
    "will", "should", "shall", "may", "might", "must",
})
_DETERMINERS = frozenset({"my", "our", "his", "her", "their", "your", "the"})
# Capitalised words that are not names (sentence-initial words, pronouns, greetings).
_NOT_NAMES = frozenset({
    "i", "the", "a", "an", "this", "that", "these", "those", "it", "he", "she", "we", "they", "you", "there",
    "here", "my", "our", "your", "his", "her", "their", "its", "yes", "no", "and", "but", "so", "also", "well",
    "now", "then", "today", "yesterday", "tomorrow", "actually", "maybe", "perhaps", "probably", "hi", "hello",
    "hey", "thanks", "thank", "please", "ok", "okay", "if", "when", "while", "because", "since", "what", "who",
    "where", "why", "how", "which", "everyone", "someone", "somebody", "anyone", "nobody", "everybody", "call",
    "sure", "oh", "sorry", "great", "good", "nice",
})
# Objects that name nothing; proposing them would only produce refusals or empty facts.
_EMPTY_OBJECTS = frozenset({
    "it", "this", "that", "these", "those", "you", "him", "her", "them", "me", "us", "something", "anything",
    "everything", "nothing", "here", "there", "one", "so", "too", "both", "all",
})
_NOT_ROLES = frozenset({"bit", "little", "lot", "few", "couple", "fan", "big", "huge", "kind", "sort"})
_NOT_LANGUAGES = frozenset({"to", "with", "about", "up", "for", "at", "on", "of", "out"})

# --- objects ------------------------------------------------------------------------------------

_NUMBER = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|several|many|a few|a couple of)"
_UNIT = r"(?:days?|weeks?|months?|years?|decades?)"
_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_WS = WS_CLASS
_TRAILING_TIME = re.compile(
    r"(?:^|" + _WS + r"+)(?:now|right now|these days|at the moment|any ?more"
    r"|(?:last|next|this)" + _WS + r"+(?:week|month|year)"
    r"|in" + _WS + r"+(?:" + _MONTH + r"(?:" + _WS + r"+\d{4})?|\d{4})"
    r"|for" + _WS + r"+" + _NUMBER + _WS + r"+" + _UNIT
    + r"|" + _NUMBER + _WS + r"+" + _UNIT + _WS + r"+ago)$",
    re.IGNORECASE,
)
_CUT_TIME = re.compile(
    r"(?:^|" + _WS + r"+)(?:since|until|till|starting|as" + _WS + r"+of|from" + _WS + r"+(?:next|tomorrow|today))\b",
    re.IGNORECASE)
# Time after the object that puts the claim in the future: "I live in Paris next year".
_FUTURE_REST = re.compile(
    r"\b(?:next" + _WS + r"+(?:week|month|year|spring|summer|autumn|fall|winter)|tomorrow|soon|from" + _WS
    + r"+next|as" + _WS + r"+of" + _WS + r"+next|starting" + _WS + r"+next)\b", re.IGNORECASE)
_CUT_CLAUSE = re.compile(
    r"(?:[,:(]|" + _WS + r"[-–—])" + _WS + r"*(?:which|who|where|when|while|because|since|so|though|although"
    r"|but|and|or|i|it|he|she|they|we|you|that|as|if|unless|then|plus|not|according|says|said)\b",
    re.IGNORECASE,
)
_ONGOING = re.compile(r"\bsince\b|\bfor" + _WS + r"+" + _NUMBER + _WS + r"+" + _UNIT + r"\b", re.IGNORECASE)
_UNTIL = re.compile(r"\b(?:until|till)\b", re.IGNORECASE)
_ANYMORE = re.compile(r"\bany" + _WS + r"?more\b", re.IGNORECASE)
_OPENING = "\"“‘'([«"
OBJECT_WINDOW = 500
PREFIX_WINDOW = 16  # tokens before the subject that can frame it ("John told me that …")
NAME_WINDOW = 6  # longest capitalised name taken as a third-person subject
MAX_MODIFIERS = 6  # modifiers between a subject and its verb ("I really also still do not …")


# A quotation mark ends the object: what follows is outside the quoted words. A ’ or ' followed by a
# letter is an apostrophe ("McDonald’s") and does not.
_QUOTE_CUT = re.compile(r"[\"“”«»‹›`‘]|[’'](?![^\W_])")


def _is_trailing_junk(ch: str) -> bool:
    return ch in WHITE_SPACE or unicodedata.category(ch).startswith("P")


def _object_span(content: str, start: int, end: int) -> tuple[int, int] | None:
    """The object's span: after the pattern to the clause end, trimmed of punctuation and time phrases.

    An object still running past OBJECT_WINDOW characters names no entity; it is dropped, which also
    keeps the work per subject bounded on long unpunctuated text.
    """
    while start < end and (content[start] in WHITE_SPACE or content[start] in _OPENING):
        start += 1
    text = content[start:min(end, start + OBJECT_WINDOW)]
    # A double quotation mark ends the object: what follows is outside the quoted words.
    text = _QUOTE_CUT.split(text, maxsplit=1)[0]
    for cut in (_CUT_CLAUSE, _CUT_TIME):
        match = cut.search(text)
        if match:
            text = text[: match.start()]
    if len(text) >= OBJECT_WINDOW:
        return None
    while True:
        trimmed = text
        while trimmed and _is_trailing_junk(trimmed[-1]):
            trimmed = trimmed[:-1]
        trimmed = _TRAILING_TIME.sub("", trimmed)
        if trimmed == text:
            break
        text = trimmed
    return (start, start + len(text)) if text else None


def _name_span(content: str, tokens: Sequence[_Token], index: int) -> tuple[int, int] | None:
    """The capitalised word(s) starting at ``tokens[index]`` (a has_name object)."""
    if index >= len(tokens) or not tokens[index].cap or tokens[index].word in _NOT_NAMES:
        return None
    end = tokens[index].end
    for token in tokens[index + 1:]:
        if token.start < end:
            continue  # another part of the same contracted word
        gap = content[end:token.start]
        if not token.cap or token.word in _NOT_NAMES or not all(ch in WHITE_SPACE or ch == "-" for ch in gap):
            break
        end = token.end
    return tokens[index].start, end


# --- matching -----------------------------------------------------------------------------------


def _modifier_at(tokens: Sequence[_Token], pos: int) -> tuple[tuple[str, ...], str] | None:
    for length in _MODIFIER_LENGTHS:
        words = tuple(token.word for token in tokens[pos:pos + length])
        if len(words) == length and words in _MODIFIERS:
            return words, _MODIFIERS[words]
    return None


def _modifier_runs(tokens: Sequence[_Token], pos: int):
    """(position, modifiers skipped) for 0, 1, 2, ... modifiers starting at ``pos``, at most MAX_MODIFIERS.

    The bound keeps matching linear: a word that is both a modifier and a pattern's first word ("do",
    "am going to") would otherwise be retried at every point of a long run of it."""
    skipped: tuple[tuple[str, ...], ...] = ()
    yield pos, skipped
    while len(skipped) < MAX_MODIFIERS and (found := _modifier_at(tokens, pos)) is not None:
        pos += len(found[0])
        skipped += (found[0],)
        yield pos, skipped


def _match_slots(tokens, pos, slots, rest):
    """Match slot words (each after optional modifiers), then ``rest`` contiguously.

    Returns (end position, modifiers, position of the first slot word) or None.
    """
    if not slots:
        for word in rest:
            if pos >= len(tokens) or tokens[pos].word != word:
                return None
            pos += 1
        return pos, (), None
    for at, skipped in _modifier_runs(tokens, pos):
        if at < len(tokens) and tokens[at].word == slots[0]:
            found = _match_slots(tokens, at + 1, slots[1:], rest)
            if found:
                return found[0], skipped + found[1], at
    return None


@dataclass(frozen=True)
class _Match:
    pattern: _Pattern
    end: int  # token index after the pattern
    modifiers: tuple[tuple[str, ...], ...]
    phrase: int  # token index where the verb phrase (without modifiers) starts


def _candidates(tokens, pos, table: "_Table") -> list[_Pattern]:
    """Patterns whose first word appears after some run of modifiers, in table order."""
    found: dict[int, _Pattern] = {}
    for at, _ in _modifier_runs(tokens, pos):
        if at < len(tokens):
            found.update(table.by_first_word.get(tokens[at].word, ()))
    return [found[order] for order in sorted(found)]


def _match(tokens, pos, table: "_Table", inherited: tuple[tuple[str, ...], ...] = ()) -> _Match | None:
    for pattern in _candidates(tokens, pos, table):
        found = _match_slots(tokens, pos, pattern.aux + pattern.tail[:1], pattern.tail[1:])
        if not found:
            continue
        end, modifiers, phrase = found
        every = inherited + modifiers
        if pattern.kind == MODAL_ONLY and not any(words in _MODALS for words in every):
            continue
        if pattern.kind == AFTER_MODIFIER and not every:
            continue
        return _Match(pattern, end, modifiers, phrase)
    return None


# --- frames: what the words before the subject say about the claim ------------------------------


@dataclass(frozen=True)
class _Frame:
    polarity: str | None = None  # "reported" | "hypothetical" | "uncertain" | "denied"
    reporter: str | None = None
    start: int | None = None  # where the quote starts when the frame is part of it
    tense: str | None = None  # "past" | "future", from time words before the subject


_NOT_REPORTERS = frozenset({"always", "often", "keeps", "kept", "once", "also", "just", "even", "to"})


def _reporter(content: str, tokens: Sequence[_Token], verb: int) -> tuple[str, int] | None:
    """The words naming who spoke, just before the reporting verb at ``tokens[verb]``; None when the words
    there name nobody ("Let's say", "I'd say")."""
    end = verb
    while end > 0 and (tokens[end - 1].word in _NOT_REPORTERS or (tokens[end - 1].word,) in _MODIFIERS):
        end -= 1  # "My mom always says", "Nobody would say"
    if end >= 2 and tokens[end - 2].word in _DETERMINERS:
        first = end - 2
    elif end >= 1 and tokens[end - 1].cap and tokens[end - 1].word not in _NOT_NAMES | _CONDITIONALS:
        first = end - 1
        while first > 0 and tokens[first - 1].cap and tokens[first - 1].word not in _NOT_NAMES:
            first -= 1
    elif end >= 1 and tokens[end - 1].word not in _CONDITIONALS and tokens[end - 1].word not in ("i", "nobody"):
        first = end - 1
    else:
        return None
    start = tokens[first].start
    return content[start:tokens[end - 1].end], start


def _prefix_frame(content: str, prefix: Sequence[_Token], subject_start: int, *, questions: bool = True
                  ) -> _Frame | None:
    """The frame set by the words before the subject; None when they make it a question."""
    negated = _negation_frame(content, prefix, subject_start)
    if negated is not None:
        return negated  # "John never said I …", "It's not true that I …"
    for token in reversed(prefix):
        if token.word in _CONDITIONALS:
            return _Frame("hypothetical", None, token.start)
    for index in range(len(prefix) - 1, -1, -1):
        if prefix[index].word in _REPORTING_VERBS:
            found = _reporter(content, prefix, index)
            if found:
                return _Frame("reported", found[0], found[1])
            return _Frame("reported", None, prefix[index].start)
    for index, token in enumerate(prefix):
        if token.word in _HEDGE_WORDS:
            return _Frame("uncertain", None, token.start)
        if token.word in _HEDGE_VERBS:
            # Start the quote at the "I" of "I (don't) think", when there is one.
            start = token.start
            for back in range(index - 1, -1, -1):
                if prefix[back].word == "i":
                    start = prefix[back].start
                    break
                if _MODIFIERS.get((prefix[back].word,)) is None:
                    break
            return _Frame("uncertain", None, start)
    for index, token in enumerate(prefix):
        if token.word in _TASK_WORDS and not (token.word == "story" and index and prefix[index - 1].word == "long"):
            return _Frame("hypothetical", None, token.start)  # but "Long story short, I …" asserts
    speaker = _transcript_speaker(content, prefix, subject_start)
    if speaker is not None:
        return _Frame("reported", speaker)
    if questions and prefix and (prefix[-1].word in _QUESTION_AUX
                                 or any(token.word in _QUESTION_WORDS for token in prefix)):
        return None
    return _Frame(tense=_time_of(prefix))


def _time_of(tokens: Sequence[_Token]) -> str | None:
    """'future' or 'past' when time words before the subject move the claim out of the present."""
    words = [token.word for token in tokens]
    pairs = set(zip(words, words[1:]))
    if any(word in _FUTURE_WORDS for word in words) or (
            "in" in words and any(unit in words for unit in ("days", "weeks", "months", "years"))):
        return "future"
    if any(word in _PAST_WORDS for word in words) or ("back", "in") in pairs or ("back", "then") in pairs:
        return "past"
    return None


def _gaps(content: str, prefix: Sequence[_Token], subject_start: int) -> list[str]:
    """The text after each prefix word, up to the next word (the last one up to the subject)."""
    ends = [token.start for token in prefix[1:]] + [subject_start]
    return [content[token.end:end] for token, end in zip(prefix, ends)]  # an empty prefix has no gaps


def _is_break(gap: str) -> bool:
    return any(ch in _FRAME_BREAKS for ch in gap)


def _speaker_name(content: str, tokens: Sequence[_Token]) -> str | None:
    """One to three capitalised words that name someone ("John", "Mary Jones"), not a note's heading."""
    if 1 <= len(tokens) <= 3 and all(t.cap and t.word not in _NOT_NAMES and t.word not in _NOT_SPEAKERS
                                     for t in tokens):
        return content[tokens[0].start:tokens[-1].end]
    return None


def _transcript_speaker(content: str, prefix: Sequence[_Token], subject_start: int) -> str | None:
    """ "John: I live in London" — a name alone before a colon is a transcript line, John's words."""
    gaps = _gaps(content, prefix, subject_start)
    colons = [index for index, gap in enumerate(gaps) if ":" in gap]
    if not colons:
        return None
    colon = first = colons[-1]
    while first > 0 and not (_is_break(gaps[first - 1]) or any(ch in _LINE_BREAKS for ch in gaps[first - 1])):
        first -= 1
    return _speaker_name(content, prefix[first:colon + 1])


def _negation_frame(content: str, prefix: Sequence[_Token], subject_start: int) -> _Frame | None:
    """A negation among the words framing the subject, counted from the last comma-like break."""
    breaks = [index + 1 for index, gap in enumerate(_gaps(content, prefix, subject_start)) if _is_break(gap)]
    scope = prefix[breaks[-1] if breaks else 0:]
    words = [token.word for token in scope]
    if not any(word in _NEGATIONS for word in words) and ("no", "way") not in set(zip(words, words[1:])):
        return None
    polarity = "uncertain" if any(token.word in _DOUBT_WORDS for token in scope) else "denied"
    return _Frame(polarity, None, scope[0].start)


def _trailing_frame(content: str, tokens: Sequence[_Token], after: int) -> _Frame | None:
    """What the words after the object's first word say about the claim: a closing reporting verb ("…, my
    mother says", "…, she told me") makes it reported, a hedge ("…, I think", "…, or so", "apparently")
    uncertain. The object may have run on over them, so they are read from its first word on."""
    tail = [token for token in tokens if token.start > after]
    words = [token.word for token in tail]
    while words and words[-1] in _TRAILING_OBJECTS and len(words) > 1 and words[-2] in _REPORTING_VERBS:
        words.pop()
    if words and words[-1] in _REPORTING_VERBS:
        return _Frame("reported")
    for index, token in enumerate(tail):
        # "…, says my mother", "…, according to John": a report after a break in the tail.
        before = tail[index - 1].end if index else after
        if token.word in _REPORTING_VERBS and any(ch in _FRAME_BREAKS for ch in content[before:token.start]):
            return _Frame("reported")
    if "according" in words:
        return _Frame("reported")
    # Taken back at the end: "…, not.", "— not!", "(not really)", "… /s", "just kidding", "yeah right".
    if words[-2:] in (["not", "sure"], ["or", "not"]):
        return _Frame("uncertain")
    if (words[-1:] == ["not"] or words[-2:] in (["not", "really"], ["yeah", "right"], ["one", "ever"])
            or any(word in ("kidding", "joking", "jk") for word in words)
            or (words[-1:] == ["s"] and content[tail[-1].start - 1:tail[-1].start] == "/")):
        return _Frame("denied")
    if any(word in _HEDGE_WORDS for word in words) or ("or", "so") in zip(words, words[1:]):
        return _Frame("uncertain")
    if len(words) >= 2 and words[-2] == "i" and words[-1] in _HEDGE_VERBS:
        return _Frame("uncertain")
    return None


_QUOTE_PAIRS = {'"': '"', "“": "”", "‘": "’", "«": "»", "‹": "›", "`": "`", "'": "'"}
_QUOTE_MARK = re.compile("[" + re.escape("".join(set(_QUOTE_PAIRS) | set(_QUOTE_PAIRS.values()))) + "]")


def _quote_regions(content: str, tokens: Sequence[_Token]) -> list[tuple[int, int, str | None]]:
    """Quoted stretches of the message (double, single, curly, guillemets, backticks), each with its
    reporter when a frame names one."""
    spans, opened, closer = [], None, ""
    for match in _QUOTE_MARK.finditer(content):
        index, ch = match.start(), match.group()
        before = content[index - 1] if index else " "
        after = content[index + 1] if index + 1 < len(content) else " "
        if opened is None:
            if ch in _QUOTE_PAIRS and (ch != "'" or (not before.isalnum() and after.isalnum())):
                opened, closer = index, _QUOTE_PAIRS[ch]
        elif ch == closer or (closer == "”" and ch == '"'):
            # A closing ’ or ' followed by a letter is an apostrophe ("don’t"), not the quote's end.
            if ch not in "’'" or not after.isalnum():
                spans.append((opened, index))
                opened = None
    if opened is not None:
        spans.append((opened, len(content)))
    starts = [token.start for token in tokens]
    regions = []
    for open_at, close_at in spans:
        regions.append((open_at, close_at, _region_reporter(content, tokens, starts, open_at, close_at)))
    return regions


def _region_at(regions, position):
    """The quoted region strictly containing `position` (regions are disjoint and in order)."""
    index = bisect.bisect_left(regions, (position,)) - 1
    if index >= 0 and regions[index][0] < position < regions[index][1]:
        return regions[index]
    return None


def _region_reporter(content, tokens, starts, open_at, close_at) -> str | None:
    # Before the quote: 'John said: "…' / 'my wife told me "…'.
    before = bisect.bisect_left(starts, open_at)
    verb = before - 1
    if verb >= 1 and tokens[verb].word == "me" and tokens[verb - 1].word in _REPORTING_VERBS:
        verb -= 1
    if verb >= 0 and tokens[verb].word == "that":
        verb -= 1
    if verb >= 0 and tokens[verb].word in _REPORTING_VERBS:
        gap = content[tokens[before - 1].end:open_at]
        if all(ch in WHITE_SPACE or ch in ":," for ch in gap):
            found = _reporter(content, tokens, verb)
            if found:
                return found[0]
    # After the quote: '"…," John said' / '"…," said John'.
    after = bisect.bisect_left(starts, close_at + 1)
    if after < len(tokens) and all(
        ch in WHITE_SPACE or ch in ",." for ch in content[close_at + 1:tokens[after].start]
    ):
        names = after
        while names < len(tokens) and tokens[names].cap and tokens[names].word not in _NOT_NAMES:
            names += 1
        if names > after and names < len(tokens) and tokens[names].word in _REPORTING_VERBS:
            return content[tokens[after].start:tokens[names - 1].end]
        if tokens[after].word in _REPORTING_VERBS:
            names = after + 1
            while names < len(tokens) and tokens[names].cap and tokens[names].word not in _NOT_NAMES:
                names += 1
            if names > after + 1:
                return content[tokens[after + 1].start:tokens[names - 1].end]
    return None


# --- hits and proposals -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hit:
    subject: str
    person: str  # "first" | "third"
    predicate: str
    kind: str
    modifiers: tuple[tuple[str, ...], ...]  # including any inherited from the previous clause
    frame: _Frame
    quote_start: int
    phrase_start: int
    object_span: tuple[int, int]
    rest: str  # the clause after the pattern, for tense signals


def _categories(hit: _Hit) -> set[str]:
    return {_MODIFIERS[words] for words in hit.modifiers}


def _modality(hit: _Hit) -> tuple[str, str, bool]:
    """(polarity, tense of the state claim, is a stated future) from the first matching modifier row."""
    cats = _categories(hit)
    anymore = bool(_ANYMORE.search(hit.rest))
    negated = NEG in cats
    past = (
        PAST_MOD in cats
        or hit.kind == PAST
        or (hit.kind == PERFECT and not _ONGOING.search(hit.rest))
        or bool(_UNTIL.search(hit.rest))
        # "not … anymore" is a past signal, not a denial: it says the relation held.
        or (negated and anymore)
    )
    future = FUTURE in cats and hit.kind != PLAN
    tense = "past" if past else "future" if future else "present"
    if hit.frame.polarity == "reported":
        return "reported", tense, future
    if hit.frame.polarity == "hypothetical" or HYPO in cats:
        return "hypothetical", "present", future
    if hit.frame.polarity == "uncertain" or HEDGE in cats:
        return "uncertain", "present", future
    if hit.frame.polarity == "denied":
        return "denied", "present", future
    if negated and not anymore:
        return "denied", "present", future
    if tense == "present" and hit.kind != PLAN:
        if hit.frame.tense is not None:
            tense = hit.frame.tense
        elif _FUTURE_REST.search(hit.rest):
            tense = "future"
    return "asserted", tense, future


def _statement(quote: str) -> str:
    return quote[:1].upper() + quote[1:] + "."


def _acceptable(predicate: str, obj: str) -> bool:
    name = normalize(obj)
    words = name.split(" ")
    if not name or name in _EMPTY_OBJECTS:
        return False
    if predicate == "has_role" and words[0] in _NOT_ROLES:
        return False
    if predicate == "speaks" and words[0] in _NOT_LANGUAGES:
        return False
    return True


def _proposals(hit: _Hit, content: str, kinds: Mapping[str, str]) -> list[Proposal]:
    polarity, tense, future = _modality(hit)
    obj_start, obj_end = hit.object_span
    quote = content[hit.quote_start:obj_end]
    subject_type = "person"

    def proposal(predicate: str, obj: str, claim_tense: str) -> Proposal:
        return Proposal(
            subject=hit.subject, predicate=predicate, object=obj, statement=_statement(quote), confidence=0.0,
            quote=quote, polarity=polarity, tense=claim_tense, subject_type=subject_type,
            object_type=kinds.get(predicate) or _FALLBACK_KINDS.get(predicate, "thing"),
        )

    obj = content[obj_start:obj_end]
    if hit.kind == PLAN:
        return [proposal("intends_to", obj, "present")] if _acceptable("intends_to", obj) else []
    if not _acceptable(hit.predicate, obj):
        return []
    if future:
        phrase = content[hit.phrase_start:obj_end]
        return [proposal("intends_to", phrase, "present"), proposal(hit.predicate, obj, tense)]
    return [proposal(hit.predicate, obj, tense)]


def _object_after(content, tokens, match: _Match, clause_end: int) -> tuple[tuple[int, int], str] | None:
    after = tokens[match.end - 1].end
    rest = content[after:min(clause_end, after + OBJECT_WINDOW)]
    if match.pattern.kind == NAME:
        span = _name_span(content, tokens, match.end)
    else:
        span = _object_span(content, after, clause_end)
    return (span, rest) if span else None


def _hit_at(content, tokens, index, clause_end, regions, carried=None, lead_in=()) -> _Hit | None:
    """A claim whose subject starts at ``tokens[index]``, if the words there fit a pattern."""
    token = tokens[index]
    words = [t.word for t in tokens[index:index + 3]]
    questions = True  # an auxiliary right before the subject makes a question
    if words == ["my", "name", "is"]:
        match = _Match(_Pattern("has_name", (), ("my", "name", "is"), NAME), index + 3, (), index)
        person, subject = "first", "I"
    elif words[:2] == ["call", "me"]:
        before = []
        back = index - 1
        while back >= 0 and _MODIFIERS.get((tokens[back].word,)) in (NEG, NEUTRAL):
            before.insert(0, (tokens[back].word,))
            back -= 1
        match = _Match(_Pattern("has_name", (), ("call", "me"), NAME), index + 2, tuple(before), index)
        person, subject = "first", "I"
        questions = False
    elif token.word == "i":
        match = _match(tokens, index + 1, _FIRST_PERSON)
        person, subject = "first", "I"
    elif token.cap and token.word not in _NOT_NAMES:
        last = index
        while last + 1 < len(tokens) and tokens[last + 1].cap and tokens[last + 1].word not in _NOT_NAMES:
            last += 1
            if last - index >= NAME_WINDOW:
                return None
        match = _match(tokens, last + 1, _THIRD_PERSON)
        person, subject = "third", content[token.start:tokens[last].end]
    else:
        return None
    if match is None:
        return None
    found = _object_after(content, tokens, match, clause_end)
    if found is None:
        return None
    prefix = [*lead_in, *tokens[max(0, index - PREFIX_WINDOW):index]][-PREFIX_WINDOW:]
    frame = _prefix_frame(content, prefix, token.start, questions=questions)
    if frame is None:
        return None
    if frame.polarity is None:
        region = _region_at(regions, token.start)
        if region is not None:
            # Quoted speech is someone else's words even without a frame in this clause.
            frame = _Frame("reported", region[2], None)
    if frame.polarity is None and carried is not None:
        frame = carried  # the lines under "John wrote:", or a "> " quoted line
    if frame.polarity is None:
        frame = _trailing_frame(content, tokens, found[0][0]) or frame
    if frame.polarity == "reported" and person == "first" and frame.reporter:
        subject = frame.reporter  # the "I" of reported speech is the reporter
    start = frame.start if frame.start is not None else token.start
    return _Hit(
        subject=subject, person=person, predicate=match.pattern.predicate, kind=match.pattern.kind,
        modifiers=match.modifiers, frame=frame, quote_start=start, phrase_start=tokens[match.phrase].start,
        object_span=found[0], rest=found[1],
    )


def _continuation(content, tokens, clause_end, previous: _Hit) -> _Hit | None:
    """ "… and work at Acme": a bare verb keeps the previous clause's subject and modifiers."""
    patterns = _FIRST_PERSON if previous.person == "first" else _THIRD_PERSON
    match = _match(tokens, 0, patterns, inherited=previous.modifiers)
    if match is None:
        return None
    found = _object_after(content, tokens, match, clause_end)
    if found is None:
        return None
    kind = PLAN if previous.kind == PLAN else match.pattern.kind
    if kind == PLAN and match.pattern.kind != PLAN:
        # "I plan to move to X and work at Y": the second verb phrase is planned too.
        found = ((tokens[match.phrase].start, found[0][1]), found[1])
    return _Hit(
        subject=previous.subject, person=previous.person, predicate=match.pattern.predicate, kind=kind,
        modifiers=previous.modifiers + match.modifiers,
        frame=_Frame(previous.frame.polarity, previous.frame.reporter),
        quote_start=tokens[0].start, phrase_start=tokens[match.phrase].start,
        object_span=found[0], rest=found[1],
    )


def _first_hit(content, tokens, clause_end, regions, carried=None, lead_in=()) -> _Hit | None:
    """The leftmost subject in the clause that starts a claim; one claim per clause."""
    for index in range(len(tokens)):
        hit = _hit_at(content, tokens, index, clause_end, regions, carried, lead_in)
        if hit is not None:
            return hit
    return None


_CLOSERS = "\"”’')]"
_LINE_QUOTES = ">|"  # "> I live in Paris": a line quoted from someone else's message
_QUESTION_MARKS = "?？‽"
_SENTENCE_ENDS = ".!?？‽:;…"


def _is_question(content: str, start: int, end: int, tokens: Sequence[_Token]) -> bool:
    """Ends in a question mark ("?!" too), or opens with an auxiliary or question word ("Did I say …")."""
    text = content[start:end].rstrip(_CLOSERS + "!")
    if text.endswith(tuple(_QUESTION_MARKS)):
        return True
    return bool(tokens) and tokens[0].start == start and (
        tokens[0].word in _QUESTION_AUX or tokens[0].word in _QUESTION_WORDS)


def _blank_line_between(content: str, start: int, end: int) -> bool:
    gap = content[start:end]
    return gap.count("\n") >= 2 or gap.count("\r\r") >= 1 or "\u2029" in gap


def _soft_break(content: str, previous_end: int, start: int) -> bool:
    """The previous line ran on into this one: one line break, and no stop before it (hard-wrapped text)."""
    gap = content[previous_end:start]
    return (previous_end > 0 and sum(gap.count(ch) for ch in _LINE_BREAKS) == 1 and "\r\n" not in gap[1:]
            and content[:previous_end].rstrip(_CLOSERS)[-1:] not in _SENTENCE_ENDS)


def _introduced_frame(content: str, tokens: Sequence[_Token]) -> _Frame | None:
    """Words before a colon that frame what follows it, and the lines under it: a reporter ("John wrote:",
    "She texted me:"), an exercise or quotation ("Translate to French:", "Here is the email I got:"), or a
    name alone (a transcript line, "John:")."""
    for index in range(len(tokens) - 1, -1, -1):
        if tokens[index].word in _REPORTING_VERBS:
            found = _reporter(content, tokens, index)
            return _Frame("reported", found[0] if found else None)
    if any(token.word in _INTRO_WORDS for token in tokens):
        return _Frame("hypothetical")
    name = _speaker_name(content, tokens)
    return _Frame("reported", name) if name is not None else None


def _opening_frame(content: str, tokens: Sequence[_Token], colon: int) -> _Frame | None:
    """A sentence that says nothing itself but frames the lines after it: "Let's roleplay.", "e.g.",
    "Chapter 1.", an email header ("From: John <…>", "---- Forwarded message ----")."""
    if not tokens:
        return None
    words = [token.word for token in tokens]
    if words[0] == "from" and colon >= 0:
        names = [t for t in tokens if t.start > colon and t.cap and t.word not in _NOT_NAMES]
        return _Frame("reported", content[names[0].start:names[-1].end] if names else None)
    if "forwarded" in words or ("original", "message") in set(zip(words, words[1:])) or (
            "from" in words and any(word in ("message", "email", "letter", "text") for word in words)):
        return _Frame("reported")
    if words[0] in _FRAME_OPENERS and (words[0] not in _INTRO_WORDS or any(w in _INTRO_WORDS for w in words)):
        return _Frame("hypothetical")
    return None


def _is_retraction(content: str, tokens: Sequence[_Token]) -> bool:
    """The whole sentence takes back the one before ("Just kidding."), or opens doing so ("Just kidding,
    I live in Rome")."""
    if " ".join(token.word for token in tokens) in _RETRACTIONS:
        return True
    for index in range(1, min(len(tokens), 5)):
        if "," in content[tokens[index - 1].end:tokens[index].start]:
            return " ".join(token.word for token in tokens[:index]) in _RETRACTIONS
    return False


class RulesProposer:
    """Deterministic English pattern matching with no network access (``rules/v1``)."""

    version = VERSION

    def propose(self, message: Message, vocabulary: Sequence[PredicateSpec]) -> list[Proposal]:
        content = message.content
        kinds = {spec.name: spec.object_kind for spec in vocabulary}
        tokens = _tokenize(content)
        starts = [token.start for token in tokens]
        regions = _quote_regions(content, tokens)
        proposals: list[Proposal] = []
        carried: _Frame | None = None  # set by "John wrote:" or "Translate this:", until a blank line after it
        carried_used = False
        last_end, last_tokens, last_proposals = 0, [], 0
        for sentence_start, sentence_end in _sentences(content):
            if carried_used and _blank_line_between(content, last_end, sentence_start):
                carried, carried_used = None, False
            lead_in = last_tokens[-PREFIX_WINDOW:] if _soft_break(content, last_end, sentence_start) else []
            first = bisect.bisect_left(starts, sentence_start)
            sentence_tokens = tokens[first:bisect.bisect_left(starts, sentence_end)]
            last_end, last_tokens = sentence_end, sentence_tokens
            if _is_retraction(content, sentence_tokens):
                # "I live in Paris. Just kidding.": the sentence before is taken back.
                proposals[last_proposals:] = [replace(p, polarity="denied") for p in proposals[last_proposals:]]
            last_proposals = len(proposals)
            if _is_question(content, sentence_start, sentence_end, sentence_tokens):
                continue  # a question asserts nothing, whatever its words
            if content.endswith(":", sentence_start, sentence_end):
                carried = _introduced_frame(content, sentence_tokens) or carried
                continue
            colon = content.find(":", sentence_start, sentence_end)
            if colon >= 0:
                introduced = _introduced_frame(content, [t for t in sentence_tokens if t.end <= colon])
                if introduced is not None and introduced.polarity == "hypothetical":
                    carried, carried_used = introduced, False  # "Two truths and a lie: … . … ."
            if carried is not None:
                carried_used = True
            quoted_line = _Frame("reported") if content[sentence_start] in _LINE_QUOTES else None
            before = len(proposals)
            previous: _Hit | None = None
            for clause_start, clause_end, after_and in _clauses(content, sentence_start, sentence_end):
                first, last = bisect.bisect_left(starts, clause_start), bisect.bisect_left(starts, clause_end)
                clause = tokens[first:last]
                hit = None
                if after_and and previous is not None and clause:
                    hit = _continuation(content, clause, clause_end, previous)
                if hit is None:
                    hit = _first_hit(content, clause, clause_end, regions, quoted_line or carried, lead_in)
                lead_in = []  # only the sentence's first clause follows the previous line
                previous = hit
                if hit is not None:
                    proposals.extend(_proposals(hit, content, kinds))
            if len(proposals) == before:
                opening = _opening_frame(content, sentence_tokens, colon)
                if opening is not None:
                    carried, carried_used = opening, False
        return proposals

"""The offline rules proposer ``rules/v2`` (formation.md §9, issue 12): ordinary conversational English.

Sentences, clauses and frames (reports, hedges, questions, hypotheticals, denials, quotes) are read exactly
as rules/v1 reads them; rules/v2 has its own patterns for events, changes, work, places, people and
preferences. An object is a noun phrase (a verb phrase for intends_to and learning) trimmed to its head and
modifiers, and what it cannot name exactly it does not propose. Time words set the claim's valid time
(formation.timewords). ANY change to its output must bump VERSION, with a migration for the version CHECKs.
"""

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from core.text import WHITE_SPACE
from formation import rules as v1
from formation import timewords
from formation.proposals import Message, PredicateSpec, Proposal
from formation.rules_v2_words import (
    ABBREVIATIONS,
    ARTICLES,
    EMPTY_INSIDE,
    FAMILY_ROLES,
    FUNCTION_WORDS,
    GROUP_HEADS,
    HOME_PLACES,
    LESSON_HEADS,
    LY_NOUNS,
    NOT_CREATED,
    NOT_EVENTS,
    NOT_GIVEN_NAMES,
    NOT_JOINED,
    NOT_ROLE_STARTS,
    OBJECT_STOPS,
    OWNABLE_HEADS,
    PET_NAME_HEADS,
    PHRASE_STOPS,
    PLAN_VERBS,
    RACE_HEADS,
    ROLE_HEADS,
    ROLE_QUALIFIERS,
    STARTED_HEADS,
    TITLES,
)

VERSION = "rules/v2"

# Pattern kinds on top of rules/v1's: a CHANGE verb in the past starts a state that still holds ("I moved to
# Denver last month"); an EVENT verb dates an event predicate ("I went to a concert"); an ENDING verb closes
# the speaker's current value ("I lost my job as a banker").
CHANGE, EVENT, ENDING, GOING = "change", "event", "ending", "going"
P = v1._patterns

_FIRST_PERSON = v1._Table.of([
    *P("has_role", "| lost my job as a/an; | quit my job as a/an; | left my job as a/an;"
       " have | lost my job as a/an; have | quit my job as a/an", ENDING),
    *P("works_at", "| lost my job at/with; | quit my job at/with; | left my job at/with; | quit working at/for;"
       " | stopped working at/for; | got laid off from; | was laid off from; | got fired from; | was fired from;"
       " have | quit my job at/with; have | lost my job at/with", ENDING),
    *P("has_role", "| quit my job; | lost my job; have | quit my job; have | lost my job; | got laid off;"
       " | was laid off; | got fired; | was fired; | quit", ENDING),
    *P("intends_to", "| plan to; am | planning to; | intend to; am | intending to; | plan on; am | planning on;"
       " | want to", v1.PLAN),
    *P("intends_to", "am | going to; | will", GOING),
    *P("dislikes", "do | not like; | dislike; | hate; can | not stand; am not | a fan of; do | not enjoy"),
    *P("prefers", "am | a huge/big/massive fan of"),
    *P("member_of", "am | a member of; am | part of; | belong to; am | on; am | in; | play in; | sing in"),
    *P("knows_about", "am | an expert in/on; am | familiar with; | know about"),
    *P("speaks", "am | fluent in; can | speak; | speak"),
    *P("interested_in", "am | interested in; am | into; am | super into; am | passionate about; am | obsessed with"),
    *P("learning", "am | learning; have been | learning; am | taking; have been | taking"),
    *P("learning", "| started learning; | began learning; | started taking; have | started taking", CHANGE),
    *P("born_in", "was | born in; am | from; am | originally from", EVENT),
    *P("lives_in", "am | living in; am | based in; have been | living in; am | staying in"),
    *P("lives_in", "have | moved to; | moved to; | moved back to; | relocated to; have | relocated to;"
       " | moved out to; | moved over to", CHANGE),
    *P("lives_in", "have | lived in", v1.PERFECT),
    *P("lives_in", "| lived in; was | living in; was | based in", v1.PAST),
    *P("lives_in", "| live in"),
    *P("lives_in", "| move to; | relocate to; be | based in; be | living in; be | moving to", v1.MODAL_ONLY),
    *P("has_role", "| started a new job as a/an; | started a job as a/an; | got a job as a/an;"
       " | got a new job as a/an; | started a new position as a/an; | started working as a/an;"
       " | got promoted to; | was promoted to; have been | promoted to; | became a/an", CHANGE),
    *P("works_at", "| got a job at/with; | got a new job at/with; | got hired at/by; | started working at/for;"
       " | started a new job at/with; | was hired at/by; | started at", CHANGE),
    *P("works_at", "am | working at/for; have been | working at/for"),
    *P("works_at", "have | worked at/for", v1.PERFECT),
    *P("works_at", "| worked at/for; was | working at/for", v1.PAST),
    *P("works_at", "| work at/for"),
    *P("works_at", "be | working at/for", v1.MODAL_ONLY),
    *P("has_role", "have been | a/an; have | worked as a/an", v1.PERFECT),
    *P("has_role", "| work as a/an; am | working as a/an; am | a/an; am | the"),
    *P("has_role", "was | a/an", v1.PAST),
    *P("has_role", "be | a/an", v1.MODAL_ONLY),
    *P("member_of", "| joined; have | joined", CHANGE),
    *P("participated_in", "| signed up for; have | signed up for; | registered for", EVENT),
    *P("participated_in", "| volunteer at/with/for; am | volunteering at/with/for; have been | volunteering at/with/for"),
    *P("participated_in", "| took my kids/son/daughter/children/family/mom/dad/parents/husband/wife/partner to;"
       " | went to see; | went to watch; | went to; | attended; | competed in; | took part in;"
       " | performed at; | played in; | volunteered at/with; | hosted; | ran; | finished; | completed; | gave;"
       " | went; | took", EVENT),
    *P("created", "| painted; | wrote; | baked; | built; | made; | recorded; | launched; | started; | founded;"
       " | designed; | knitted; | sewed; | composed; | drew; | published", EVENT),
    *P("owns", "| adopted; | bought; | got; have | adopted; have | bought; have | got", CHANGE),
    *P("owns", "| own; | have"),
    *P("has_name", "am | called", v1.NAME),
    *P("prefers", "| prefer; | like; | love; | enjoy; | adore"),
    *P("uses", "am | using; | use"),
])
_WE_PREDICATES = frozenset({"participated_in", "created", "owns", "lives_in"})
_EVENT_PREDICATES = frozenset({"participated_in", "created", "born_in", "contributed_to", "occurred_on"})
_PHRASE_PREDICATES = frozenset({"intends_to", "learning"})
_GERUND_PREDICATES = frozenset({"prefers", "dislikes", "interested_in"})
# Verbs after which the object is judged against a list of head nouns (rules_v2_words).
_HEAD_RULES = {
    "ran": RACE_HEADS, "finished": RACE_HEADS | LESSON_HEADS, "completed": RACE_HEADS | LESSON_HEADS,
    "started": STARTED_HEADS, "launched": STARTED_HEADS, "founded": STARTED_HEADS,
    "took": LESSON_HEADS | frozenset({"class", "trip", "tour", "walk", "hike", "vacation", "holiday", "cruise",
                                      "road", "roadtrip"}),
    "gave": frozenset({"talk", "presentation", "speech", "lecture", "performance", "concert", "workshop",
                       "reading", "recital", "sermon", "toast"}),
}
_OWN_VERBS = frozenset({"adopted", "bought", "got", "own", "have"})
_SPEAK_MODIFIERS = frozenset({"a", "little", "some", "basic", "fluent", "conversational", "decent", "good",
                              "broken", "bit", "of"})
_CAPITALISED = re.compile(r"[A-Z]")
_WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*(?:\.(?=\s[A-Z]))?")
_OBJECT_WORDS = 6
_PHRASE_WORDS = 8
# A message stops being read after this many claims: no conversational message says more, and it bounds the
# work on a 64 KiB paste of one sentence repeated.
MAX_CLAIMS = 256
# Introductions, named people and favourites are read in sentences up to this long only.
SENTENCE_CLAIM_CHARS = 600


# --- objects ----------------------------------------------------------------------------------------


def _words(content: str, start: int, end: int) -> list[tuple[str, int, int]]:
    """(lower-case word, start, end) of the words in content[start:end]; a gap holding anything but
    white space, an apostrophe or a hyphen ends the list (a comma aside is never part of an object)."""
    out = []
    for match in _WORD_RE.finditer(content, start, end):
        if out and any(ch not in WHITE_SPACE for ch in content[out[-1][2]:match.start()]):
            break
        out.append((match.group().lower().replace("’", "'"), match.start(), match.end()))
    return out


def _trim_end(kept):
    while kept and (kept[-1][0] in FUNCTION_WORDS or kept[-1][0] == "of"):
        kept.pop()
    return kept


def _noun_phrase(content: str, start: int, end: int, *, cut_of: bool = False) -> tuple[int, int] | None:
    """Leading articles dropped, cut before the first adjunct word, at most _OBJECT_WORDS words, never
    starting or ending with a function word. "a band called The Rusty Nails" names "The Rusty Nails"."""
    words = _words(content, start, end)
    while words and (words[0][0] in ARTICLES or words[0][0] == "own"):
        words = words[1:]
    kept = []
    for index, word in enumerate(words):
        if (kept and word[0] in ("called", "named") and kept[-1][0] in GROUP_HEADS | OWNABLE_HEADS
                and index + 1 < len(words) and content[words[index + 1][1]].isupper()):
            name = [w for w in words[index + 1:index + 4] if content[w[1]].isupper()]
            name = [w for i, w in enumerate(name) if words[index + 1 + i] == w]
            return (name[0][1], name[-1][2]) if name else None
        if kept and (word[0] in OBJECT_STOPS or (word[0].endswith("ly") and word[0] not in LY_NOUNS
                                                  and not content[word[1]].isupper())):
            break  # "to bed early", "a cake quickly": the adverb is not part of the object
        if kept and word[0] == "of" and (cut_of or index + 1 >= len(words) or words[index + 1][0] in OBJECT_STOPS):
            break
        if not kept and word[0] in FUNCTION_WORDS:
            return None
        kept.append(word)
    kept = _trim_end(kept)
    if not kept or len(kept) > _OBJECT_WORDS or any(w[0] in EMPTY_INSIDE for w in kept):
        return None
    return kept[0][1], kept[-1][2]


_SEASON = re.compile(r"\b(?:in|over|during) the (?:fall|spring|summer|winter|autumn|morning|evening|afternoon)\b",
                     re.IGNORECASE)


def _verb_phrase(content: str, start: int, end: int, *, stops=PHRASE_STOPS, limit=_PHRASE_WORDS):
    """A verb phrase from ``start``, cut before time words ("on Saturday", "in the fall") and stop words."""
    when = timewords.find(content[start:end])
    if when is not None:
        end = start + when.start
    season = _SEASON.search(content, start, end)
    if season is not None:
        end = season.start()
    words = _words(content, start, end)
    kept = []
    for word in words:
        if kept and word[0] in stops:
            break
        kept.append(word)
    if not kept or len(kept) > limit or kept[0][0] in FUNCTION_WORDS:
        return None
    while kept and kept[-1][0] in FUNCTION_WORDS and kept[-1][0] not in ("up", "out", "back", "home", "off"):
        kept.pop()
    return (kept[0][1], kept[-1][2]) if kept else None


def _plan_phrase(content: str, start: int, end: int) -> tuple[int, int] | None:
    """After "I'm going to" / "I will": a verb phrase whose verb starts a plan and whose words name something
    ("start therapy", "move to Denver"), not talk ("let you know", "be fine", "see")."""
    lead = _words(content, start, end)[:2]
    if len(lead) == 2 and lead[0][0] == "be" and lead[1][0] in ("a", "an"):  # "be a teacher"
        role = _noun_phrase(content, lead[1][1], end, cut_of=True)
        return (lead[0][1], role[1]) if role else None
    span = _verb_phrase(content, start, end)
    if span is None:
        return None
    words = [w for w, _, _ in _words(content, *span)]
    if words[0] not in PLAN_VERBS or len(words) < 2 or any(w in EMPTY_INSIDE for w in words):
        return None
    return span if any(w not in FUNCTION_WORDS for w in words[1:]) else None


def _skip(content: str, start: int, end: int, *leads: str) -> int:
    """The position after any of ``leads`` ("to ", "how to ") at the start of content[start:end]."""
    while start < end and content[start] in WHITE_SPACE:
        start += 1
    for lead in leads:
        if content[start:start + len(lead)].lower() == lead:
            return start + len(lead)
    return start


def _object(content: str, predicate: str, verb: str, start: int, end: int) -> tuple[int, int] | None:
    """The object's exact span for ``predicate`` after the pattern ending in ``verb``, or None."""
    if predicate == "intends_to":
        if verb in ("going", "will"):
            return _plan_phrase(content, start, end)
        return _verb_phrase(content, _skip(content, start, end, "to "), end)
    if predicate == "learning":
        start = _skip(content, start, end, "how to ", "to ")
        words = _words(content, start, end)
        if verb == "taking" or (words and words[-1][0] in LESSON_HEADS and verb != "learning"):
            span = _noun_phrase(content, start, end)
            if span is None:
                return None
            head = _words(content, *span)
            if head[-1][0] not in LESSON_HEADS:
                return None
            # "guitar lessons" is learning the guitar; a bare "a class" names nothing learnt.
            return (span[0], head[-2][2]) if len(head) >= 2 else None
        if words and words[0][0] in ("play", "code", "cook", "speak", "read", "write", "draw", "paint", "surf",
                                     "swim", "knit", "sew", "drive", "dance", "sing", "bake", "ski", "skate"):
            span = _verb_phrase(content, start, end)
            # "learning to play" names nothing learnt; "learning to surf" (a verb that is the skill) does.
            if span and len(_words(content, *span)) == 1 and words[0][0] in ("play", "read", "write", "drive"):
                return None
            return span
        return _noun_phrase(content, start, end)
    if predicate in ("prefers", "dislikes") and _words(content, start, end)[:1] and _words(content, start, end)[0][0] in (
            "my", "our", "his", "her", "their"):
        return None  # "I love my kids", "I love my new apartment": affection for one's own, not a taste
    if predicate in _GERUND_PREDICATES:
        at = _skip(content, start, end, "to ")
        words = _words(content, at, end)
        if at != _skip(content, start, end) or (words and words[0][0].endswith("ing")):
            span = _verb_phrase(content, at, end, stops=PHRASE_STOPS | {"with", "for", "every", "all", "on"},
                                limit=5)
            if span and len(_words(content, *span)) == 1 and (
                    at != _skip(content, start, end) or (len(words) > 1 and words[1][0] not in OBJECT_STOPS)):
                return None  # "I like to cook", "spending time with my family" cut to "spending": no object
            return span
    if predicate == "speaks":
        words = _words(content, start, end)
        names = [w for w in words if content[w[1]].isupper()]
        if names and all(w[0] in _SPEAK_MODIFIERS for w in words[:words.index(names[0])]):
            return names[0][1], names[0][2]
        return None
    return _noun_phrase(content, start, end, cut_of=predicate == "has_role")


def _acceptable(predicate: str, verb: str, content: str, span: tuple[int, int]) -> bool:
    """Whether the object names what ``predicate`` needs (after the pattern ending in ``verb``)."""
    text = content[span[0]:span[1]]
    words = [w for w, _, _ in _words(content, *span)]
    if not words or words[-1] in FUNCTION_WORDS or (words[0] in FUNCTION_WORDS and not (
            predicate == "intends_to" and words[0] == "be")):
        return False
    if len(words) == 1 and words[0] in ("new", "old", "last", "next", "big", "small", "great", "good", "first"):
        return False
    head = words[-1]
    if predicate in ("intends_to", "learning", "prefers", "dislikes", "interested_in") and len(words) > 1:
        return True
    if predicate == "has_role":
        if words[0] in NOT_ROLE_STARTS:
            return False
        if head in FAMILY_ROLES:
            return len(words) >= 2 and words[-2] in ROLE_QUALIFIERS
        return head in ROLE_HEADS or " ".join(words[-2:]) in ROLE_HEADS or head.endswith(("ist", "ician"))
    if predicate in ("lives_in", "born_in"):
        # A place is named (capitalised) or one of a few common nouns for where one lives.
        return bool(_CAPITALISED.match(text)) or head in ("suburbs", "hometown", "countryside")
    if predicate == "works_at":
        return bool(_CAPITALISED.match(text)) or len(words) <= 3
    if predicate == "owns":
        return bool(_CAPITALISED.match(text)) or (head in OWNABLE_HEADS and len(words) <= 4)
    if predicate == "member_of":
        if verb == "joined":
            return head not in NOT_JOINED and (head in GROUP_HEADS or bool(_CAPITALISED.match(text)))
        return head in GROUP_HEADS or bool(_CAPITALISED.match(text))
    if predicate == "participated_in":
        if head in HOME_PLACES or (head in NOT_EVENTS and len(words) == 1):
            return False  # "went to bed", "went to my sister's place": a place of every day, not an event
        rule = _HEAD_RULES.get(verb)
        if verb == "went":
            return head.endswith("ing") and len(words) <= 3  # "went camping", "went ice skating"
        return rule is None or head in rule
    if predicate == "created":
        rule = _HEAD_RULES.get(verb)
        return head not in NOT_CREATED and (rule is None or head in rule)
    return True


# --- names and whole-sentence patterns ------------------------------------------------------------

_RELATIONS = {
    **{w: "related_to" for w in (
        "sister", "brother", "mom", "mum", "mother", "dad", "father", "son", "daughter", "husband", "wife",
        "aunt", "uncle", "cousin", "nephew", "niece", "grandma", "grandmother", "grandpa", "grandfather",
        "grandson", "granddaughter", "twin", "stepdad", "stepmom", "stepson", "stepdaughter", "fiance",
        "fiancee", "fiancé", "fiancée", "partner", "boyfriend", "girlfriend", "spouse", "sibling", "kid", "child",
        "baby", "sis", "bro")},
    **{w: "knows" for w in ("friend", "neighbor", "neighbour", "roommate", "flatmate", "mentor", "boss",
                            "coworker", "co-worker", "colleague", "classmate", "teammate", "buddy", "pal",
                            "bestie", "therapist", "coach", "teacher", "doctor", "manager", "bff")},
    **{w: "owns" for w in PET_NAME_HEADS},
}
_NAME = r"(?P<name>(?:(?:Dr|Mr|Mrs|Ms)\.?\s)?[A-Z][a-z]+(?:\s[A-Z][a-z]+)?)\b"
_NAME_LEAD = re.compile(r"\b(?i:my|our)\s+(?:(?:best|old|little|big|younger|older|baby|twin|oldest|youngest|"
                        r"new|dear|close|good|late)\s+)*(?P<relation>[a-z\-éè]+),?\s+" + _NAME)
_NAMED = re.compile(r"\b(?i:a|an|my)\s+(?:new\s+)?(?P<relation>friend|guy|girl|woman|man|coworker|neighbor|"
                    r"neighbour|colleague|lady)\s+(?:named|called)\s+" + _NAME)
_ME_AND = re.compile(r"^(?P<name>[A-Z][a-z]+) and I\b")
_INTRODUCTION = re.compile(
    r"^(?:(?i:hi|hey|hello|hiya|yo)(?:\s+(?i:there|all|everyone|guys))?[,!.]*\s+)?"
    r"(?i:i'm|i’m|i am|this is)\s+(?P<name>[A-Z][a-z]+)(?=\s*(?:[,.!]|$)|\s+(?i:by the way|btw|here)\b)")
_HERE = re.compile(r"^(?P<name>[A-Z][a-z]+) here\b")
_FAVOURITE = re.compile(r"\b(?i:my|our) favou?rite (?:[a-z]+ ){0,2}(?:is|are) (?P<object>[^,.!?;]+)")
_HOME_COUNTRY = re.compile(r"\b(?i:my) home (?:country|town|city), (?P<place>[A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?),")
_IS_FAVOURITE = re.compile(r"^(?P<object>[A-Z][a-z]+(?: [a-z]+)?) is my favou?rite (?:hobby|sport|thing|food)\b")
_FAN_OF = re.compile(r"\b(?i:i'm|i’m|i am) (?i:a|such a) (?:(?i:huge|big|massive|total|die-hard|diehard) )?"
                     r"(?P<object>[A-Z][\w’'.-]*(?: [A-Z][\w’'.-]*){0,3}) (?i:fan)\b")
_NEW_JOB_AT = re.compile(r"\b(?i:my|a) new job (?:at|with) (?P<object>[^,.!?;]+)")
_SARCASM_OPENERS = re.compile(r"(?i:oh sure|oh great|yeah sure|oh joy|yeah right)\s*,")


def _name_ok(name: str) -> bool:
    parts = name.lower().replace(".", " ").split()
    if parts[0] in TITLES:
        return len(parts) > 1  # "Dr. Patel", never "Dr" alone
    return parts[0] not in NOT_GIVEN_NAMES and parts[0] not in v1._NOT_NAMES


def _sentence_claims(content: str, start: int, end: int, make) -> list[Proposal]:
    """Claims that need the whole sentence: introductions, named family, friends and pets, favourites."""
    text = content[start:end]
    found = []
    for pattern in (_INTRODUCTION, _HERE):
        match = pattern.match(text)
        if match and _name_ok(match.group("name")):
            found.append(make("has_name", start + match.start(), start + match.end("name"), start + match.start("name"),
                              start + match.end("name")))
            break
    for pattern in (_NAME_LEAD, _NAMED):
        for match in pattern.finditer(text):
            relation = match.group("relation").lower()
            predicate = _RELATIONS.get(relation) if pattern is _NAME_LEAD else (
                "works_with" if relation in ("coworker", "colleague") else "knows")
            if predicate is None or not _name_ok(match.group("name")):
                continue
            found.append(make(predicate, start + match.start(), start + match.end("name"),
                              start + match.start("name"), start + match.end("name")))
    match = _ME_AND.match(text)
    if match and _name_ok(match.group("name")):
        found.append(make("knows", start, start + match.end(), start + match.start("name"), start + match.end("name")))
    match = _FAVOURITE.search(text)
    if match:
        at, stop = start + match.start("object"), start + match.end("object")
        span = _noun_phrase(content, at, stop) or _verb_phrase(content, _skip(content, at, stop, "to "), stop)
        if span:
            found.append(make("prefers", start + match.start(), span[1], *span))
    match = _IS_FAVOURITE.match(text)
    if match:
        found.append(make("prefers", start, start + match.end(), start + match.start("object"),
                          start + match.end("object")))
    match = _HOME_COUNTRY.search(text)
    if match:
        found.append(make("born_in", start + match.start(), start + match.end("place"), start + match.start("place"),
                          start + match.end("place")))
    match = _FAN_OF.search(text)
    if match:
        found.append(make("prefers", start + match.start(), start + match.end(), start + match.start("object"),
                          start + match.end("object")))
    match = _NEW_JOB_AT.search(text)
    if match:
        span = _noun_phrase(content, start + match.start("object"), start + match.end("object"))
        if span and _acceptable("works_at", "at", content, span):
            found.append(make("works_at", start + match.start(), span[1], *span))
    return found


# --- claims ---------------------------------------------------------------------------------------


_MODIFIER_FIRST_WORDS = frozenset(words[0] for words in v1._MODIFIERS)


def _match(tokens, pos, table, inherited=()) -> "v1._Match | None":
    """rules/v1's pattern match, with the modifier runs at each position worked out once for every pattern
    tried (rules/v2's table is larger, and re-reading them per pattern was most of its time)."""
    if pos >= len(tokens):
        return None
    first = tokens[pos].word
    if first not in table.by_first_word and first not in _MODIFIER_FIRST_WORDS:
        return None  # the common case, settled without building anything
    cache: dict[int, list] = {}

    def runs(at):
        found = cache.get(at)
        if found is None:
            found = cache[at] = list(v1._modifier_runs(tokens, at))
        return found

    def slots(at, words, rest):
        if not words:
            for word in rest:
                if at >= len(tokens) or tokens[at].word != word:
                    return None
                at += 1
            return at, (), None
        for here, skipped in runs(at):
            if here < len(tokens) and tokens[here].word == words[0]:
                found = slots(here + 1, words[1:], rest)
                if found:
                    return found[0], skipped + found[1], here
        return None

    candidates: dict[int, v1._Pattern] = {}
    for at, _ in runs(pos):
        if at < len(tokens):
            candidates.update(table.by_first_word.get(tokens[at].word, ()))
    for order in sorted(candidates):
        pattern = candidates[order]
        found = slots(pos, pattern.aux + pattern.tail[:1], pattern.tail[1:])
        if not found:
            continue
        end, modifiers, phrase = found
        every = inherited + modifiers
        if pattern.kind == v1.MODAL_ONLY and not any(words in v1._MODALS for words in every):
            continue
        if pattern.kind == v1.AFTER_MODIFIER and not every:
            continue
        return v1._Match(pattern, end, modifiers, phrase)
    return None


@dataclass(frozen=True)
class _Found:
    hit: v1._Hit
    verb: str  # the pattern's last word, which decides what object it accepts
    prefix: tuple  # the tokens before the subject
    clause_end: int
    tokens: Sequence  # the clause's tokens


def _frame_for(content, tokens, index, regions, carried, lead_in):
    """The frame the words before the subject set (rules/v1's reading), and those words."""
    prefix = [*lead_in, *tokens[max(0, index - v1.PREFIX_WINDOW):index]][-v1.PREFIX_WINDOW:]
    frame = v1._prefix_frame(content, prefix, tokens[index].start, questions=True)
    if frame is None:
        return None, prefix
    if frame.polarity is None:
        region = v1._region_at(regions, tokens[index].start)
        if region is not None:
            frame = v1._Frame("reported", region[2], None)
    if frame.polarity is None and carried is not None:
        frame = carried
    # The words after the object ("…, my mother says", "…, I think") are read once the object is known.
    return frame, prefix


def _hit_at(content, tokens, index, clause_end, regions, carried=None, lead_in=()) -> _Found | None:
    """A claim whose subject starts at ``tokens[index]``: "I", "my name is", "call me", or a capitalised name
    before one of rules/v1's third-person patterns."""
    token = tokens[index]
    words = [t.word for t in tokens[index:index + 3]]
    person, subject = "first", "I"
    if words == ["my", "name", "is"]:
        match = v1._Match(v1._Pattern("has_name", (), ("my", "name", "is"), v1.NAME), index + 3, (), index)
    elif words[:2] == ["call", "me"] and index == 0:
        match = v1._Match(v1._Pattern("has_name", (), ("call", "me"), v1.NAME), index + 2, (), index)
    elif token.word == "i":
        match = _match(tokens, index + 1, _FIRST_PERSON)
    elif token.word == "we":
        # "We went camping", "We adopted a puppy": the speaker took part; only events and changes say so.
        match = _match(tokens, index + 1, _FIRST_PERSON)
        if match is None or match.pattern.kind not in (EVENT, CHANGE) or match.pattern.predicate not in _WE_PREDICATES:
            return None
    elif token.cap and token.word not in v1._NOT_NAMES and token.word not in NOT_GIVEN_NAMES:
        last = index
        while last + 1 < len(tokens) and tokens[last + 1].cap and tokens[last + 1].word not in v1._NOT_NAMES:
            last += 1
            if last - index >= v1.NAME_WINDOW:
                return None
        match = _match(tokens, last + 1, v1._THIRD_PERSON)
        person, subject = "third", content[token.start:tokens[last].end]
    else:
        return None
    if match is None:
        return None
    after = tokens[match.end - 1].end
    found = v1._object_after(content, tokens, match, clause_end)
    object_end = found[0][1] if found else after
    if found is None and match.pattern.kind != ENDING:
        return None
    frame, prefix = _frame_for(content, tokens, index, regions, carried,
                               lead_in)
    if frame is None:
        return None
    if frame.polarity == "reported" and person == "first" and frame.reporter:
        subject = frame.reporter  # the "I" of reported speech is the reporter
    start = frame.start if frame.start is not None else token.start
    hit = v1._Hit(subject=subject, person=person, predicate=match.pattern.predicate, kind=match.pattern.kind,
                  modifiers=match.modifiers, frame=frame, quote_start=start, phrase_start=tokens[match.phrase].start,
                  object_span=(after, object_end), rest=found[1] if found else content[after:clause_end])
    verb = "going" if match.pattern.kind == GOING else match.pattern.tail[-1]
    return _Found(hit, verb, tuple(prefix), clause_end, tokens)


def _continuation(content, clause, clause_end, previous: _Found) -> _Found | None:
    """ "… and work at Acme": a bare verb keeps the previous clause's subject, modifiers and frame."""
    table = _FIRST_PERSON if previous.hit.person == "first" else v1._THIRD_PERSON
    match = _match(clause, 0, table, inherited=previous.hit.modifiers)
    if match is None:
        return None
    found = v1._object_after(content, clause, match, clause_end)
    if found is None:
        return None
    kind = v1.PLAN if previous.hit.kind in (v1.PLAN, GOING) else match.pattern.kind
    span = (clause[match.end - 1].end, found[0][1])
    if kind == v1.PLAN and match.pattern.kind != v1.PLAN:
        span = (clause[match.phrase].start, found[0][1])  # "plan to move to X and work at Y"
    hit = v1._Hit(subject=previous.hit.subject, person=previous.hit.person, predicate=match.pattern.predicate,
                  kind=kind, modifiers=previous.hit.modifiers + match.modifiers,
                  frame=v1._Frame(previous.hit.frame.polarity, previous.hit.frame.reporter),
                  quote_start=clause[0].start, phrase_start=clause[match.phrase].start, object_span=span,
                  rest=found[1])
    return _Found(hit, match.pattern.tail[-1], (), clause_end, clause)


def _time_words(content: str, found: _Found, object_end: int) -> timewords.TimeWords | None:
    """Time words after the object in the clause, else before the subject in the sentence."""
    words = timewords.find(content[object_end:found.clause_end])
    if words is None and found.prefix:
        lead_start = found.prefix[0].start
        if lead_start < found.hit.quote_start:
            words = timewords.find(content[lead_start:found.hit.quote_start])
    return words


def _claims(found: _Found, content: str, kinds: Mapping[str, str], occurred_at: datetime | None):
    hit = found.hit
    polarity, tense, future = v1._modality(hit)
    cats = v1._categories(hit)
    predicate = "intends_to" if hit.kind in (v1.PLAN, GOING) else hit.predicate
    obj_start, obj_end = hit.object_span
    if hit.kind == v1.NAME:
        names = [w for w in _words(content, obj_start, obj_end) if content[w[1]].isupper()
                 and w[0] not in v1._NOT_NAMES]
        span = (names[0][1], names[-1][2]) if names else None
    elif hit.kind == ENDING and found.verb in ("job", "off", "fired", "quit"):
        # "I quit my job last week": the current role ends; anything else after it ("quit smoking") does not.
        rest = content[obj_start:found.clause_end]
        words = timewords.find(rest)
        left = _words(content, obj_start, obj_start + words.start if words else found.clause_end)
        if left and left[0][0] not in ("to", "because", "so", "after", "since", "when", "and", "but", "today"):
            return []
        span = None
    else:
        span = _object(content, predicate, found.verb, obj_start, obj_end)
        if span is None or not _acceptable(predicate, found.verb, content, span):
            return []
    if span is None and hit.kind != ENDING:
        return []
    object_end = span[1] if span else obj_start
    if hit.frame.polarity is None:
        trailing = v1._trailing_frame(content, found.tokens, object_end - 1)
        if trailing is not None:
            hit = replace(hit, frame=trailing)
            polarity, tense, future = v1._modality(hit)
    words = _time_words(content, found, object_end)
    if found.verb == "for" and hit.kind == EVENT:
        words = None  # "I signed up for a marathon in October": the date is the race's, the sign-up is now
    when = timewords.resolve(words, occurred_at)
    valid_from = valid_until = None
    ongoing = words is not None and words.kind in ("since", "for")
    if hit.kind in (CHANGE, EVENT, ENDING) and polarity == "asserted" and v1.PAST_MOD not in cats and not future:
        tense = "past" if predicate in _EVENT_PREDICATES or hit.kind == ENDING else "present"
        if hit.kind == ENDING:
            valid_until = when or occurred_at
            if valid_until is None:
                return []
        else:
            valid_from = when
    elif hit.kind == v1.PERFECT and polarity == "asserted" and ongoing and not future:
        tense, valid_from = "present", when  # "I've been a teacher for 4 years", "Since 2019, I've worked as …"
    elif tense == "past" and polarity == "asserted" and hit.kind == v1.PAST and words is not None and (
            words.kind == "for" and when is not None and occurred_at is not None):
        # "I lived in London for 4 years": over, and placed at the latest it can have been.
        valid_from, valid_until = when, occurred_at
    elif tense == "present" and polarity == "asserted" and hit.kind not in (v1.PLAN, GOING) and _UPCOMING.search(
            content, object_end, found.clause_end):
        return []  # "I'm volunteering at the shelter this weekend" is a plan, not a current state
    elif tense == "present" and polarity == "asserted" and words is not None and not ongoing and (
            hit.kind not in (v1.PLAN, GOING)):
        return []  # "I'm a nurse" said of last year is not a statement about now
    elif tense == "present" and ongoing:
        valid_from = when
    obj = content[span[0]:span[1]] if span else ""

    def proposal(pred, text, claim_tense, start=None, until=None, quote_end=None):
        # The quote runs from the subject (or its frame) to the end of this claim's object.
        quote = content[hit.quote_start:quote_end or object_end].rstrip()
        return Proposal(subject=hit.subject, predicate=pred, object=text, statement=v1._statement(quote),
                        confidence=0.0, quote=quote, polarity=polarity, tense=claim_tense, subject_type="person",
                        object_type=kinds.get(pred, "thing"), valid_from=start, valid_until=until)

    if predicate == "intends_to":
        return [proposal("intends_to", obj, "present")]
    out = [proposal(predicate, obj, tense, valid_from, valid_until)]
    if future:
        phrase = _verb_phrase(content, hit.phrase_start, object_end)
        if phrase is not None:
            out.insert(0, proposal("intends_to", content[phrase[0]:phrase[1]], "present"))
        return out
    if span is not None and polarity == "asserted" and hit.kind != ENDING:
        out += _second_claims(content, predicate, found, span, hit, proposal)
    return out


_UPCOMING = re.compile(r"\b(?:this|next|coming|upcoming) (?:weekend|week|month|year|spring|summer|fall|autumn|"
                       r"winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\b(?:tonight|tomorrow|"
                       r"later today|soon)\b", re.IGNORECASE)
_AS_ROLE = re.compile(r"^\s+as\s+(?:a|an)\s+")
_AT_PLACE = re.compile(r"^\s+(?:at|for|with)\s+(?=[A-Z])")


def _second_claims(content, predicate, found, span, hit, proposal):
    """ "I work at the hospital as a nurse", "I'm an engineer at Boeing": the adjunct names a second claim."""
    rest_start, rest_end = span[1], found.clause_end
    rest = content[rest_start:rest_end]
    if predicate == "works_at" and (match := _AS_ROLE.match(rest)):
        at = rest_start + match.end()
        role = _noun_phrase(content, at, rest_end, cut_of=True)
        if role and _acceptable("has_role", "a", content, role):
            return [proposal("has_role", content[role[0]:role[1]], "present", quote_end=role[1])]
    if predicate == "has_role" and hit.kind not in (v1.PAST, ENDING) and (match := _AT_PLACE.match(rest)):
        at = rest_start + match.end()
        place = _noun_phrase(content, at, rest_end)
        if place and _acceptable("works_at", "at", content, place):
            role = content[span[0]:span[1]].lower().split()[-1]
            target = "member_of" if role in ("student", "member") else "works_at"
            return [proposal(target, content[place[0]:place[1]], "present", quote_end=place[1])]
    return []


_ABBREVIATION_END = re.compile(r"\b(?:" + "|".join(sorted(ABBREVIATIONS)) + r")\.$", re.IGNORECASE)


def _sentences(content: str) -> list[tuple[int, int]]:
    """rules/v1's sentences, except that a title's full stop ("Dr. Patel", "St. Mary's") ends none."""
    merged: list[tuple[int, int]] = []
    for start, end in v1._sentences(content):
        if merged and _ABBREVIATION_END.search(content, max(merged[-1][0], merged[-1][1] - 6), merged[-1][1]) and (
                "\n" not in content[merged[-1][1]:start]):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


class RulesV2Proposer(v1.RulesProposer):
    """rules/v2: deterministic, no network access; the same interface and gates as every proposer."""

    version = VERSION

    def propose(self, message: Message, vocabulary: Sequence[PredicateSpec]) -> list[Proposal]:
        content = message.content
        occurred_at = message.occurred_at
        kinds = {spec.name: spec.object_kind for spec in vocabulary}
        tokens = v1._tokenize(content)
        starts = [token.start for token in tokens]
        regions = v1._quote_regions(content, tokens)
        proposals: list[Proposal] = []
        carried, carried_used = None, False  # set by "John wrote:" or "Translate this:", until a blank line
        last_end, last_tokens, last_proposals = 0, [], 0
        for sentence_start, sentence_end in _sentences(content):
            if len(proposals) >= MAX_CLAIMS:
                break
            if carried_used and v1._blank_line_between(content, last_end, sentence_start):
                carried, carried_used = None, False
            lead_in = last_tokens[-v1.PREFIX_WINDOW:] if v1._soft_break(content, last_end, sentence_start) else []
            sentence_tokens = tokens[bisect.bisect_left(starts, sentence_start):bisect.bisect_left(starts, sentence_end)]
            last_end, last_tokens = sentence_end, sentence_tokens
            if v1._is_retraction(content, sentence_tokens):
                proposals[last_proposals:] = [replace(p, polarity="denied") for p in proposals[last_proposals:]]
            last_proposals = len(proposals)
            if v1._is_question(content, sentence_start, sentence_end, sentence_tokens):
                continue
            if content.endswith(":", sentence_start, sentence_end):
                carried = v1._introduced_frame(content, sentence_tokens) or carried
                continue
            colon = content.find(":", sentence_start, sentence_end)
            if colon >= 0:
                introduced = v1._introduced_frame(content, [t for t in sentence_tokens if t.end <= colon])
                if introduced is not None and introduced.polarity == "hypothetical":
                    carried, carried_used = introduced, False
            if carried is not None:
                carried_used = True
            if _SARCASM_OPENERS.match(content, sentence_start, sentence_end):
                continue  # "Oh sure, I love waiting in line": said, not meant
            quoted_line = v1._Frame("reported") if content[sentence_start] in v1._LINE_QUOTES else None
            before = len(proposals)
            self._clauses(content, tokens, starts, regions, (sentence_start, sentence_end),
                          quoted_line or carried, lead_in, kinds, occurred_at, proposals)
            framed = quoted_line or carried or v1._region_at(regions, sentence_start)
            if not framed and sentence_end - sentence_start <= SENTENCE_CLAIM_CHARS and not _framed_sentence(
                    content, sentence_tokens):
                seen = {(p.predicate, p.object.lower()) for p in proposals[before:]}
                proposals.extend(p for p in _sentence_claims(content, sentence_start, sentence_end,
                                                             self._maker(content, kinds))
                                 if (p.predicate, p.object.lower()) not in seen)
            if len(proposals) == before:
                opening = v1._opening_frame(content, sentence_tokens, colon)
                if opening is not None:
                    carried, carried_used = opening, False
        return proposals[:MAX_CLAIMS]

    @staticmethod
    def _clauses(content, tokens, starts, regions, sentence, carried, lead_in, kinds, occurred_at, proposals):
        previous = None
        for clause_start, clause_end, after_and in v1._clauses(content, *sentence):
            if len(proposals) >= MAX_CLAIMS:
                return
            clause = tokens[bisect.bisect_left(starts, clause_start):bisect.bisect_left(starts, clause_end)]
            found = None
            if after_and and previous is not None and clause:
                found = _continuation(content, clause, clause_end, previous)
            index = 0
            while index < len(clause) and len(proposals) < MAX_CLAIMS:
                if found is None:
                    found = _hit_at(content, clause, index, clause_end, regions, carried, lead_in)
                    if found is None:
                        index += 1
                        continue
                lead_in = []
                previous = found
                proposals.extend(_claims(found, content, kinds, occurred_at))
                # Another subject may follow in the same clause after a comma: "I'm not a doctor, I'm a nurse".
                comma = content.find(",", found.hit.object_span[1], clause_end)
                if comma < 0:
                    break
                index = max(index + 1, bisect.bisect_left(starts, comma) - bisect.bisect_left(starts, clause_start))
                found = None
            lead_in = []

    @staticmethod
    def _maker(content, kinds):
        def make(predicate, quote_start, quote_end, obj_start, obj_end):
            quote = content[quote_start:quote_end]
            return Proposal(subject="I", predicate=predicate, object=content[obj_start:obj_end],
                            statement=v1._statement(quote), confidence=0.0, quote=quote, polarity="asserted",
                            tense="past" if predicate in _EVENT_PREDICATES else "present", subject_type="person",
                            object_type=kinds.get(predicate, "thing"))
        return make


_FRAMING = (v1._REPORTING_VERBS | v1._HEDGE_WORDS | v1._HEDGE_VERBS | v1._CONDITIONALS | v1._NEGATIONS
            | v1._TASK_WORDS | frozenset({"would", "could", "should", "might", "may", "wish", "dream", "maybe",
                                          "if", "used", "ex", "former", "late"}))


def _framed_sentence(content, tokens) -> bool:
    """Whether any word of the sentence frames it (a report, hedge, condition, negation, exercise): the
    whole-sentence patterns then propose nothing."""
    if not tokens:
        return True
    return bool({t.word for t in tokens} & _FRAMING) or v1._trailing_frame(content, tokens, tokens[0].start) is not None

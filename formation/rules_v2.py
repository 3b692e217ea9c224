"""The offline rules proposer ``rules/v2`` (formation.md §9, issue 12): ordinary conversational English.

It reads sentences, clauses, frames (reports, hedges, questions, hypotheticals, denials, quotes) exactly as
rules/v1 does, with its own patterns for events, changes, work, places, people and preferences. An object
is a noun phrase (a verb phrase for intends_to and learning) trimmed to its head and modifiers; what it
cannot name exactly it does not propose. Time words set the claim's valid time (formation.timewords).
ANY change to its output for any input must bump VERSION, with a migration for the extractor_version CHECKs.
"""

import bisect
import re
from collections.abc import Sequence
from dataclasses import replace

from formation import rules as v1
from formation import timewords
from formation.proposals import Message, PredicateSpec, Proposal

VERSION = "rules/v2"

# Pattern kinds of rules/v2 on top of rules/v1's: a CHANGE verb in the past starts a state that still holds
# ("I moved to Denver last month"), an EVENT verb dates an event predicate ("I went to a concert").
CHANGE, EVENT = "change", "event"
P = v1._patterns

_FIRST_PERSON = v1._Table.of([
    *P("intends_to", "| plan to; am | planning to; | intend to; am | intending to; | plan on; am | planning on;"
       " | want to", v1.PLAN),
    *P("dislikes", "do | not like; | dislike; | hate; can | not stand; am not | a fan of; do | not enjoy"),
    *P("prefers", "am | a huge/big/massive fan of"),
    *P("knows_about", "am | an expert in/on; am | familiar with; | know about"),
    *P("speaks", "am | fluent in; can | speak; | speak"),
    *P("interested_in", "am | interested in; am | into; am | passionate about; am | obsessed with"),
    *P("learning", "am | learning; have been | learning; am | taking; have been | taking"),
    *P("learning", "| started learning; | began learning", CHANGE),
    *P("born_in", "was | born in; was | born and raised in; am | from; am | originally from", EVENT),
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
       " | started a new job at/with; | joined the staff at; | was hired at/by", CHANGE),
    *P("works_at", "am | working at/for; have been | working at/for"),
    *P("works_at", "have | worked at/for", v1.PERFECT),
    *P("works_at", "| worked at/for; was | working at/for", v1.PAST),
    *P("works_at", "| work at/for"),
    *P("works_at", "be | working at/for", v1.MODAL_ONLY),
    *P("has_role", "have been | a/an", v1.PERFECT),
    *P("has_role", "| work as a/an; am | working as a/an; am | a/an"),
    *P("has_role", "was | a/an", v1.PAST),
    *P("has_role", "be | a/an", v1.MODAL_ONLY),
    *P("member_of", "| joined; have | joined", CHANGE),
    *P("member_of", "am | a member of; am | part of; | belong to; am | on"),
    *P("participated_in", "| signed up for; have | signed up for; | registered for", EVENT),
    *P("participated_in", "| went to; | attended; | competed in; | took part in; | performed at; | played in;"
       " | volunteered at; | hosted; | ran; | finished; | completed; | tried; | went", EVENT),
    *P("created", "| painted; | wrote; | baked; | built; | made; | recorded; | launched; | started; | founded;"
       " | designed; | knitted; | sewed; | composed; | drew; | published", EVENT),
    *P("owns", "| adopted; | bought; | got; have | adopted; have | bought", CHANGE),
    *P("owns", "| own; | have a/an"),
    *P("has_name", "am | called", v1.NAME),
    *P("prefers", "| prefer; | like; | love; | enjoy; | adore"),
    *P("uses", "am | using; | use"),
])
_EVENT_PREDICATES = frozenset({"participated_in", "created", "born_in", "contributed_to", "occurred_on"})

# --- objects ------------------------------------------------------------------------------------

_ARTICLES = frozenset({"a", "an", "the", "my", "our", "some"})
# Words that never begin or end a named object, and never are one: pronouns, deictics, function words.
_FUNCTION_WORDS = frozenset({
    "to", "of", "in", "on", "at", "for", "with", "about", "from", "by", "as", "into", "onto", "over", "under",
    "up", "out", "off", "and", "or", "but", "so", "if", "than", "then", "that", "this", "these", "those", "it",
    "its", "they", "them", "their", "he", "him", "his", "she", "her", "we", "us", "you", "your", "i", "me", "my",
    "mine", "our", "who", "what", "which", "where", "when", "why", "how", "here", "there", "not", "no", "very",
    "really", "just", "too", "also", "all", "both", "each", "every", "any", "some", "much", "many", "more",
    "most", "lot", "lots", "bit", "part", "kind", "sort", "idea", "thing", "things", "stuff", "way", "one",
    "ones", "is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "have", "has", "had", "will",
    "would", "can", "could", "should", "a", "an", "the", "again", "already", "yet", "now", "today", "everyday",
    "day", "time", "times", "something", "anything", "everything", "nothing", "someone", "anyone", "everyone",
    "myself", "yourself", "itself", "themselves", "ourselves", "well", "back", "home", "away", "around", "first", "while", "ever", "never", "always", "sometimes", "often", "lately", "recently", "finally", "mix",
    "same", "other", "another", "such", "own", "like", "because",
})
# Words after which the object ends: prepositions starting an adjunct, time words, conjunctions.
_OBJECT_STOPS = frozenset({
    "with", "for", "on", "at", "to", "from", "by", "because", "since", "until", "till", "when", "while", "and",
    "or", "but", "so", "yesterday", "today", "tonight", "last", "next", "this", "ago", "recently", "again",
    "lately", "now", "earlier", "already", "finally", "together", "too", "as", "after", "before", "during",
    "who", "which", "that", "where", "if", "than", "though", "although", "all", "every", "tomorrow", "soon",
    "in", "into", "over", "around", "about", "near", "named", "called", "just", "once", "twice", "here", "there",
    "downtown", "originally", "two", "three", "four", "five", "six", "several", "few", "personally", "actually",
    "honestly", "tonight", "everyday", "daily", "weekly", "online",
})
# A preposition the object keeps when a noun follows it ("portrait of my dog", "talk at a school" is cut).
_KEEP_OF = frozenset({"of"})
_OBJECT_WORDS = 6
_VERB_PHRASE_WORDS = 8
_WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*\.?")
# Verb-phrase objects (intends_to, learning) stop only at these.
_PHRASE_STOPS = frozenset({
    "because", "since", "until", "when", "while", "and", "or", "but", "so", "yesterday", "today", "tonight",
    "tomorrow", "next", "this", "soon", "someday", "eventually", "after", "before", "once", "if", "though",
    "although", "one", "sometime", "later", "again", "too", "asap", "lol", "haha", "now", "already", "right",
})
# Role nouns: "I'm a X" is a role only when its head is one of these (or ends like one).
_ROLE_HEADS = frozenset("""
nurse teacher doctor engineer developer designer accountant lawyer attorney paralegal analyst banker barista
chef cook waiter waitress cashier clerk mechanic electrician plumber carpenter firefighter officer pilot
photographer artist painter writer author editor journalist musician singer dancer actor actress student
intern manager director consultant counselor counsellor therapist psychologist psychiatrist pharmacist dentist
veterinarian vet tech technician assistant receptionist secretary librarian scientist researcher professor
lecturer tutor coach trainer instructor programmer architect surgeon paramedic midwife caregiver carer nanny
babysitter housekeeper cleaner janitor driver courier farmer gardener baker butcher tailor stylist hairdresser
barber florist realtor agent broker entrepreneur founder owner ceo cto freelancer contractor volunteer
mom mum dad father mother parent homemaker retiree soldier marine sailor veteran police detective guard
worker employee officer supervisor administrator translator interpreter illustrator animator filmmaker
producer podcaster streamer blogger youtuber influencer model athlete player coder tester nurse-practitioner
social worker
""".split())
_ROLE_MODIFIERS_NOT = frozenset({"bit", "little", "lot", "fan", "big", "huge", "kind", "sort", "mix", "part",
                                  "member", "perfectionist"})
_PET_HEADS = frozenset("""
dog dogs puppy puppies cat cats kitten kittens horse horses snake hamster rabbit bunny parrot bird birds
goldfish fish turtle tortoise lizard gecko guinea pig pigs ferret chicken chickens retriever labrador poodle
terrier beagle bulldog shepherd husky pony goat
""".split())
_OWNED_NOT = frozenset({"job", "promotion", "chance", "call", "text", "message", "feeling", "idea", "cold", "flu",
                        "covid", "sick", "married", "engaged", "hired", "promoted", "fired", "back", "home", "lost",
                        "tired", "better", "ready", "used", "lot", "bit", "new", "into", "out", "up", "to", "it",
                        "kids", "kid", "children", "child", "son", "daughter", "sister", "brother", "friend",
                        "friends", "time", "tickets", "degree", "license", "haircut", "tattoo"})
_CAPITALISED = re.compile(r"[A-Z]")


def _words(text: str, base: int) -> list[tuple[str, int, int]]:
    return [(m.group().rstrip(".").lower().replace("’", "'"), base + m.start(), base + m.start()
             + len(m.group().rstrip("."))) for m in _WORD_RE.finditer(text)]


def _noun_phrase(content: str, start: int, end: int, *, predicate: str) -> tuple[int, int] | None:
    """The noun phrase starting at ``start``: leading articles dropped, cut before the first adjunct word,
    at most _OBJECT_WORDS words, never starting or ending with a function word."""
    words = _words(content[start:end], start)
    while words and words[0][0] in _ARTICLES:
        words = words[1:]
    kept = []
    for index, (word, _, _) in enumerate(words):
        if kept and word in _OBJECT_STOPS:
            break
        if kept and word in _KEEP_OF and index + 1 < len(words) and words[index + 1][0] not in _OBJECT_STOPS:
            kept.append(words[index])
            continue
        if not kept and word in _FUNCTION_WORDS:
            return None
        kept.append(words[index])
    if not kept or len(kept) > _OBJECT_WORDS:
        return None
    while kept and kept[-1][0] in _FUNCTION_WORDS | {"of"}:
        kept.pop()
    if not kept or any(w in ("it", "them", "this", "that", "him", "her", "you", "me", "us") for w, _, _ in kept):
        return None
    # The words must run on without punctuation between them (a comma aside ends the phrase above).
    span = (kept[0][1], kept[-1][2])
    if any(ch in ",;:()\"“”!?" for ch in content[span[0]:span[1]]):
        return None
    return span


def _verb_phrase(content: str, start: int, end: int) -> tuple[int, int] | None:
    words = _words(content[start:end], start)
    kept = []
    for word in words:
        if kept and word[0] in _PHRASE_STOPS:
            break
        kept.append(word)
    if not kept or len(kept) > _VERB_PHRASE_WORDS or kept[0][0] in _FUNCTION_WORDS:
        return None
    while kept and kept[-1][0] in _FUNCTION_WORDS and kept[-1][0] not in ("up", "out", "back", "home", "off"):
        kept.pop()
    if not kept:
        return None
    span = (kept[0][1], kept[-1][2])
    if any(ch in ",;:()\"“”!?" for ch in content[span[0]:span[1]]):
        return None
    return span


def _object(content: str, predicate: str, start: int, end: int) -> tuple[int, int] | None:
    """The object's exact span for ``predicate`` in the text after its pattern, or None."""
    if predicate in ("intends_to", "learning"):
        text = content[start:end]
        lead = len(text) - len(text.lstrip())
        if text[lead:lead + 3].lower() in ("to ",):
            start += lead + 3
        for prefix in ("how to ",):
            if content[start:end].lstrip().lower().startswith(prefix):
                start = start + len(content[start:end]) - len(content[start:end].lstrip()) + len(prefix)
        if predicate == "learning":
            return _verb_phrase(content, start, end) if _verb_start(content, start, end) else _noun_phrase(
                content, start, end, predicate=predicate)
        return _verb_phrase(content, start, end)
    if predicate in ("prefers", "dislikes"):
        text = content[start:end].lstrip()
        if text.lower().startswith("to "):
            return _verb_phrase(content, start + len(content[start:end]) - len(text) + 3, end)
    return _noun_phrase(content, start, end, predicate=predicate)


def _verb_start(content: str, start: int, end: int) -> bool:
    words = _words(content[start:end], start)
    return bool(words) and words[0][0] in ("play", "code", "cook", "speak", "read", "write", "draw", "paint",
                                           "surf", "swim", "knit", "sew", "drive", "dance", "sing", "bake", "ski")


def _acceptable(predicate: str, content: str, span: tuple[int, int]) -> bool:
    text = content[span[0]:span[1]]
    words = [w for w, _, _ in _words(text, 0)]
    if not words or words[-1] in _FUNCTION_WORDS or words[0] in _FUNCTION_WORDS:
        return False
    if predicate == "has_role":
        return words[0] not in _ROLE_MODIFIERS_NOT and (
            words[-1] in _ROLE_HEADS or " ".join(words[-2:]) in _ROLE_HEADS
            or (len(words) >= 2 and words[-2] in ("social", "vet", "stay-at-home", "single")))
    if predicate in ("lives_in", "born_in"):
        # A place is named (capitalised) or one of a few common nouns for where one lives.
        return bool(_CAPITALISED.match(text)) or words[-1] in ("suburbs", "hometown", "countryside", "city")
    if predicate == "works_at":
        return bool(_CAPITALISED.match(text)) or len(words) <= 3
    if predicate == "owns":
        return words[0] not in _OWNED_NOT and words[-1] not in _OWNED_NOT and len(words) <= 3
    if predicate == "speaks":
        return len(words) == 1 and bool(_CAPITALISED.match(text))
    if predicate == "member_of":
        return words[0] not in ("the", "it") and len(words) <= 5
    return True


# --- names ----------------------------------------------------------------------------------------

_RELATIONS = {
    **{w: "related_to" for w in (
        "sister", "brother", "mom", "mum", "mother", "dad", "father", "son", "daughter", "husband", "wife",
        "aunt", "uncle", "cousin", "nephew", "niece", "grandma", "grandmother", "grandpa", "grandfather",
        "grandson", "granddaughter", "twin", "stepdad", "stepmom", "stepson", "stepdaughter", "fiance",
        "fiancee", "fiancé", "fiancée", "partner", "boyfriend", "girlfriend", "spouse", "sibling", "kid", "child")},
    **{w: "knows" for w in ("friend", "neighbor", "neighbour", "roommate", "flatmate", "mentor", "boss",
                            "coworker", "co-worker", "colleague", "classmate", "teammate", "buddy", "pal",
                            "bestie", "therapist", "coach", "teacher", "doctor", "manager")},
}
_NAME_LEAD = re.compile(r"\b(?:my|our)\s+(?:(?:best|old|little|big|younger|older|baby|twin|oldest|youngest|"
                        r"new|dear|close|good)\s+)*(?P<relation>[a-z\-éè]+)\s+(?P<name>(?:Dr\.\s)?[A-Z][a-z]+"
                        r"(?:\s[A-Z][a-z]+)?)\b")
_NAMED = re.compile(r"\b(?:a|an|my)\s+(?:new\s+)?(?P<relation>friend|guy|girl|woman|man|coworker|neighbor|"
                    r"neighbour|colleague)\s+(?:named|called)\s+(?P<name>[A-Z][a-z]+)\b")
_ME_AND = re.compile(r"^(?P<name>[A-Z][a-z]+) and I\b")
_INTRODUCTION = re.compile(
    r"^(?:(?:hi|hey|hello|hiya|yo)(?:\s+(?:there|all|everyone|guys))?[,!.]?\s+)?"
    r"(?:i'm|i’m|i am|this is)\s+(?P<name>[A-Z][a-z]+)(?=\s*(?:[,.!]|$|\s+by the way|\s+btw|\s+here))", re.I)
_HERE = re.compile(r"^(?P<name>[A-Z][a-z]+) here\b")
# Capitalised words after "I'm" that are not names.
_NOT_GIVEN_NAMES = frozenset("""
same over right nobody everyone someone back sorry fine good great okay ok happy sad tired done sure glad back here home ready so just not always still
also new american british canadian english irish scottish french german spanish italian mexican swedish
chinese japanese korean indian african european asian australian gay trans bi straight single married in
on out up down there excited exhausted well alright all very really never thinking busy free late early
""".split())


def _name_proposals(content: str, sentence: tuple[int, int], make) -> list[Proposal]:
    start, end = sentence
    text = content[start:end]
    found = []
    for pattern in (_INTRODUCTION, _HERE):
        match = pattern.match(text)
        if match and match.group("name").lower() not in _NOT_GIVEN_NAMES | v1._NOT_NAMES:
            found.append(make("has_name", start + match.start(), start + match.end("name"),
                              start + match.start("name"), start + match.end("name")))
            break
    for pattern in (_NAME_LEAD, _NAMED):
        for match in pattern.finditer(text):
            relation = match.group("relation").lower()
            predicate = _RELATIONS.get(relation) if pattern is _NAME_LEAD else (
                "knows" if relation not in ("coworker", "colleague") else "works_with")
            name = match.group("name")
            if predicate is None or name.split()[0].lower() in v1._NOT_NAMES | _NOT_GIVEN_NAMES:
                continue
            found.append(make(predicate, start + match.start(), start + match.end("name"),
                              start + match.start("name"), start + match.end("name")))
    match = _ME_AND.match(text)
    if match and match.group("name").lower() not in v1._NOT_NAMES:
        found.append(make("knows", start, start + match.end(), start + match.start("name"),
                          start + match.end("name")))
    return found


_FAVOURITE = re.compile(r"\b(?:my|our) favou?rite (?:[a-z]+ ){0,2}(?:is|are) (?P<object>[^,.!?;]+)", re.I)
_HOME_COUNTRY = re.compile(r"\bmy home (?:country|town|city), (?P<place>[A-Z][A-Za-z]+(?: [A-Z][A-Za-z]+)?),",)
_IS_FAVOURITE = re.compile(r"^(?P<object>[A-Z][a-z]+(?: [a-z]+)?) is my favou?rite (?:hobby|sport|thing)\b")


def _phrase_proposals(content: str, sentence: tuple[int, int], make) -> list[Proposal]:
    start, end = sentence
    text = content[start:end]
    found = []
    match = _FAVOURITE.search(text)
    if match:
        at = start + match.start("object")
        span = _noun_phrase(content, at, start + match.end("object"), predicate="prefers")
        if span is None and content[at:at + 3].lower() == "to ":
            span = _verb_phrase(content, at + 3, start + match.end("object"))
        if span is None:
            span = _verb_phrase(content, at, start + match.end("object"))
        if span:
            found.append(make("prefers", start + match.start(), span[1], *span))
    match = _IS_FAVOURITE.match(text)
    if match:
        found.append(make("prefers", start, start + match.end(), start + match.start("object"),
                          start + match.end("object")))
    match = _HOME_COUNTRY.search(text)
    if match:
        found.append(make("born_in", start + match.start(), start + match.end("place"),
                          start + match.start("place"), start + match.end("place")))
    return found


# --- claims ---------------------------------------------------------------------------------------


def _hit_at(content, tokens, index, clause_end, regions, carried=None, lead_in=()):
    """rules/v1's subject search, with rules/v2's first-person table."""
    token = tokens[index]
    words = [t.word for t in tokens[index:index + 3]]
    if words == ["my", "name", "is"]:
        match = v1._Match(v1._Pattern("has_name", (), ("my", "name", "is"), v1.NAME), index + 3, (), index)
    elif words[:2] == ["call", "me"] and index == 0:
        match = v1._Match(v1._Pattern("has_name", (), ("call", "me"), v1.NAME), index + 2, (), index)
    elif token.word == "i":
        match = v1._match(tokens, index + 1, _FIRST_PERSON)
    else:
        return None
    if match is None:
        return None
    found = v1._object_after(content, tokens, match, clause_end)
    if found is None:
        return None
    prefix = [*lead_in, *tokens[max(0, index - v1.PREFIX_WINDOW):index]][-v1.PREFIX_WINDOW:]
    frame = v1._prefix_frame(content, prefix, token.start, questions=True)
    if frame is None:
        return None
    if frame.polarity is None:
        region = v1._region_at(regions, token.start)
        if region is not None:
            frame = v1._Frame("reported", region[2], None)
    if frame.polarity is None and carried is not None:
        frame = carried
    if frame.polarity is None:
        frame = v1._trailing_frame(content, tokens, found[0][0]) or frame
    subject = "I"
    if frame.polarity == "reported" and frame.reporter:
        subject = frame.reporter
    start = frame.start if frame.start is not None else token.start
    # The object is read from right after the pattern, not from rules/v1's trimmed span.
    after = tokens[match.end - 1].end
    hit = v1._Hit(subject=subject, person="first", predicate=match.pattern.predicate, kind=match.pattern.kind,
                  modifiers=match.modifiers, frame=frame, quote_start=start,
                  phrase_start=tokens[match.phrase].start, object_span=(after, found[0][1]), rest=found[1])
    return hit, prefix, clause_end


class RulesV2Proposer(v1.RulesProposer):
    """rules/v2: deterministic, no network; the same interface as every proposer."""

    version = VERSION

    def propose(self, message: Message, vocabulary: Sequence[PredicateSpec]) -> list[Proposal]:
        content = message.content
        occurred_at = getattr(message, "occurred_at", None)
        kinds = {spec.name: spec.object_kind for spec in vocabulary}
        tokens = v1._tokenize(content)
        starts = [token.start for token in tokens]
        regions = v1._quote_regions(content, tokens)
        proposals: list[Proposal] = []
        carried = None
        carried_used = False
        last_end, last_tokens, last_proposals = 0, [], 0
        for sentence_start, sentence_end in v1._sentences(content):
            if carried_used and v1._blank_line_between(content, last_end, sentence_start):
                carried, carried_used = None, False
            lead_in = last_tokens[-v1.PREFIX_WINDOW:] if v1._soft_break(content, last_end, sentence_start) else []
            first = bisect.bisect_left(starts, sentence_start)
            sentence_tokens = tokens[first:bisect.bisect_left(starts, sentence_end)]
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
            quoted_line = v1._Frame("reported") if content[sentence_start] in v1._LINE_QUOTES else None
            before = len(proposals)
            framed = quoted_line or carried or v1._region_at(regions, sentence_start)
            previous = None
            for clause_start, clause_end, after_and in v1._clauses(content, sentence_start, sentence_end):
                lo, hi = bisect.bisect_left(starts, clause_start), bisect.bisect_left(starts, clause_end)
                clause = tokens[lo:hi]
                found = None
                if after_and and previous is not None and clause:
                    found = self._continuation(content, clause, clause_end, previous)
                if found is None:
                    for index in range(len(clause)):
                        found = _hit_at(content, clause, index, clause_end, regions, quoted_line or carried,
                                        lead_in)
                        if found is not None:
                            break
                lead_in = []
                previous = found[0] if found else None
                if found is not None:
                    proposals.extend(self._claims(*found, content, kinds, occurred_at))
            if not framed and not self._framed_sentence(content, sentence_tokens, sentence_start):
                extra = self._sentence_claims(content, (sentence_start, sentence_end), kinds)
                seen = {(p.predicate, p.object.lower()) for p in proposals[before:]}
                proposals.extend(p for p in extra if (p.predicate, p.object.lower()) not in seen)
            if len(proposals) == before:
                opening = v1._opening_frame(content, sentence_tokens, colon)
                if opening is not None:
                    carried, carried_used = opening, False
        return proposals

    # -- one hit -------------------------------------------------------------------------------

    def _continuation(self, content, clause, clause_end, previous):
        match = v1._match(clause, 0, _FIRST_PERSON, inherited=previous.modifiers)
        if match is None:
            return None
        found = v1._object_after(content, clause, match, clause_end)
        if found is None:
            return None
        kind = v1.PLAN if previous.kind == v1.PLAN else match.pattern.kind
        after = clause[match.end - 1].end
        span = (after, found[0][1])
        if kind == v1.PLAN and match.pattern.kind != v1.PLAN:
            span = (clause[match.phrase].start, found[0][1])
        hit = v1._Hit(subject=previous.subject, person="first", predicate=match.pattern.predicate, kind=kind,
                      modifiers=previous.modifiers + match.modifiers,
                      frame=v1._Frame(previous.frame.polarity, previous.frame.reporter),
                      quote_start=clause[0].start, phrase_start=clause[match.phrase].start,
                      object_span=span, rest=found[1])
        return hit, [], clause_end

    def _claims(self, hit, prefix, clause_end, content, kinds, occurred_at):
        polarity, tense, future = v1._modality(hit)
        cats = v1._categories(hit)
        predicate = "intends_to" if hit.kind == v1.PLAN else hit.predicate
        obj_start, obj_end = hit.object_span
        if hit.kind == v1.NAME:
            words = _words(content[obj_start:obj_end], obj_start)
            kept = []
            for word, ws, we in words:
                if not content[ws].isupper() or word in v1._NOT_NAMES:
                    break
                kept.append((ws, we))
            if not kept:
                return []
            span = (kept[0][0], kept[-1][1])
        else:
            span = _object(content, predicate, obj_start, obj_end)
        if span is None or not _acceptable(predicate, content, span):
            return []
        # Time words: anywhere in the clause after the subject, or before it in the sentence.
        rest_text = content[span[1]:clause_end]
        words = timewords.find(rest_text)
        if words is None and prefix:
            lead = content[prefix[0].start:hit.quote_start] if prefix[0].start < hit.quote_start else ""
            words = timewords.find(lead)
        when = timewords.resolve(words, occurred_at) if occurred_at is not None else None
        until = None
        if hit.kind in (CHANGE, EVENT) and polarity == "asserted" and v1.PAST_MOD not in cats and not future:
            tense = "past" if predicate in _EVENT_PREDICATES else "present"
        elif tense == "past" and polarity == "asserted" and hit.kind in (v1.PAST, v1.PERFECT) and (
                words is not None and words.kind == "for" and when is not None and occurred_at is not None):
            until = occurred_at  # "I lived in London for 4 years": over, at the latest by the message
        elif tense == "present" and words is not None and words.kind in ("yesterday", "ago", "last", "on_day",
                                                                         "in_month", "in_year"):
            # "I'm a nurse" said of last year is not a statement about now.
            if hit.kind not in (v1.PERFECT,):
                return []
        quote = content[hit.quote_start:span[1]]
        obj = content[span[0]:span[1]]
        subject_type = "person"

        def proposal(pred, text, claim_tense, valid_from=None, valid_until=None):
            return Proposal(subject=hit.subject, predicate=pred, object=text, statement=v1._statement(quote),
                            confidence=0.0, quote=quote, polarity=polarity, tense=claim_tense,
                            subject_type=subject_type, object_type=kinds.get(pred, "thing"),
                            valid_from=valid_from, valid_until=valid_until)

        if predicate == "intends_to":
            return [proposal("intends_to", obj, "present")]
        if until is not None:
            return [proposal(predicate, obj, "past", when, until)]
        if future:
            phrase_span = _verb_phrase(content, hit.phrase_start, span[1])
            out = [proposal(predicate, obj, tense)]
            if phrase_span is not None:
                out.insert(0, proposal("intends_to", content[phrase_span[0]:phrase_span[1]], "present"))
            return out
        return [proposal(predicate, obj, tense, when)]

    # -- whole-sentence patterns ------------------------------------------------------------------

    def _framed_sentence(self, content, tokens, start) -> bool:
        """Whether the sentence's words frame it (a report, hedge, condition, negation, exercise)."""
        if not tokens:
            return True
        words = {t.word for t in tokens}
        framing = (v1._REPORTING_VERBS | v1._HEDGE_WORDS | v1._HEDGE_VERBS | v1._CONDITIONALS | v1._NEGATIONS
                   | v1._TASK_WORDS | {"would", "could", "should", "might", "may", "wish", "dream", "maybe"})
        return bool(words & framing) or v1._trailing_frame(content, tokens, tokens[0].start) is not None

    def _sentence_claims(self, content, sentence, kinds) -> list[Proposal]:
        def make(predicate, quote_start, quote_end, obj_start, obj_end):
            quote = content[quote_start:quote_end]
            return Proposal(subject="I", predicate=predicate, object=content[obj_start:obj_end],
                            statement=v1._statement(quote), confidence=0.0, quote=quote, polarity="asserted",
                            tense="past" if predicate in _EVENT_PREDICATES else "present", subject_type="person",
                            object_type=kinds.get(predicate, "thing"))
        return _name_proposals(content, sentence, make) + _phrase_proposals(content, sentence, make)

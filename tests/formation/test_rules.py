"""The offline rules proposer (formation.md §9), at the proposal level and through the pure gates.

Outcomes that need the store (speaker binding, conflicting_value) are the claim writer's tests; here
those rows assert the proposals and that they pass the pure gates in message order.
"""

import time

import pytest

from formation.gates import Admitted, effective_unresolvable, judge
from formation.locate import locate, quote_at
from formation.proposals import Message, PredicateSpec, Proposer
from formation.rules import VERSION, RulesProposer
from memory.vocabulary import PREDICATES, SPEAKER_TERMS, UNRESOLVABLE_TERMS

VOCABULARY = [PredicateSpec(name, st, card, kind, desc, event) for name, st, card, kind, event, desc in PREDICATES]
BY_NAME = {spec.name: spec for spec in VOCABULARY}
UNRESOLVABLE = effective_unresolvable([t for terms in UNRESOLVABLE_TERMS.values() for t in terms], SPEAKER_TERMS)
RULES = RulesProposer()


def propose(content: str, role: str = "user"):
    return RULES.propose(Message(role, content), VOCABULARY)


def brief(content: str, role: str = "user"):
    return [(p.subject, p.predicate, p.object, p.polarity, p.tense) for p in propose(content, role)]


def gate_outcomes(content: str, role: str = "user") -> list[str]:
    admitted: set = set()
    outcomes = []
    for p in propose(content, role):
        result = judge(p, content=content, vocabulary=BY_NAME, unresolvable=UNRESOLVABLE, admitted=admitted)
        outcomes.append("admitted" if isinstance(result, Admitted) else result.reason)
    return outcomes


# The required fixtures of §9: message, proposals (subject, predicate, object, polarity, tense), gate outcome.
REQUIRED = [
    ("I live in Dublin.", [("I", "lives_in", "Dublin", "asserted", "present")], ["admitted"]),
    ("I moved to Dublin last month.", [("I", "lives_in", "Dublin", "asserted", "present")], ["admitted"]),
    ("I have worked at Ensera since 2019.", [("I", "works_at", "Ensera", "asserted", "present")], ["admitted"]),
    ("My name is Sam.", [("I", "has_name", "Sam", "asserted", "present")], ["admitted"]),
    ("I don't like olives.", [("I", "dislikes", "olives", "asserted", "present")], ["admitted"]),
    ("I do not live in London.", [("I", "lives_in", "London", "denied", "present")], ["not_asserted"]),
    ("I have never worked at Acme.", [("I", "works_at", "Acme", "denied", "present")], ["not_asserted"]),
    ("I think I live in Cork.", [("I", "lives_in", "Cork", "uncertain", "present")], ["not_asserted"]),
    ("I used to live in Amman.", [("I", "lives_in", "Amman", "asserted", "past")], ["not_current"]),
    ("I will move to Germany next year.",
     [("I", "intends_to", "move to Germany", "asserted", "present"), ("I", "lives_in", "Germany", "asserted", "future")],
     ["admitted", "not_current"]),
    ('John said: "I live in London."', [("John", "lives_in", "London", "reported", "present")], ["not_asserted"]),
    ("I live in Dublin and work at Acme.",
     [("I", "lives_in", "Dublin", "asserted", "present"), ("I", "works_at", "Acme", "asserted", "present")],
     ["admitted", "admitted"]),
    ("Thanks, that worked perfectly.", [], []),
    # Both pass the pure gates in message order; the store refuses Cork as conflicting_value.
    ("I live in Dublin. I live in Cork.",
     [("I", "lives_in", "Dublin", "asserted", "present"), ("I", "lives_in", "Cork", "asserted", "present")],
     ["admitted", "admitted"]),
]


@pytest.mark.parametrize(("content", "expected", "outcomes"), REQUIRED, ids=[row[0] for row in REQUIRED])
def test_required_fixtures(content, expected, outcomes):
    assert brief(content) == expected
    assert gate_outcomes(content) == outcomes


def test_fixture_quotes_and_spans():
    (p,) = propose("I live in Dublin.")
    assert (p.quote, p.statement, locate("I live in Dublin.", p.quote)) == ("I live in Dublin", "I live in Dublin.", (0, 16))
    _, works = propose("I live in Dublin and work at Acme.")
    assert (works.quote, works.statement) == ("work at Acme", "Work at Acme.")
    (reported,) = propose('John said: "I live in London."')
    assert reported.quote == 'John said: "I live in London'
    assert [p.quote for p in propose("I moved to Dublin last month.")] == ["I moved to Dublin"]
    assert [p.quote for p in propose("I will move to Germany next year.")] == ["I will move to Germany"] * 2


@pytest.mark.parametrize("role", ["user", "assistant", "system", "tool"])
def test_runs_on_every_role(role):
    # Speaker binding refuses the non-user ones in the store (not_spoken_by_principal).
    assert brief("I live in Dublin.", role) == [("I", "lives_in", "Dublin", "asserted", "present")]


def test_proposal_fields():
    (p,) = propose("I work at Acme.")
    assert (p.confidence, p.subject_type, p.object_type) == (0.0, "person", "organisation")
    (p,) = propose("I speak Irish.")
    assert p.object_type == "value"
    assert isinstance(RULES, Proposer) and RULES.version == VERSION == "rules/v1"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("I'm living in Berlin.", ("lives_in", "Berlin")),
        ("I’m based in Zürich.", ("lives_in", "Zürich")),
        ("I've lived in Dublin since 2015.", ("lives_in", "Dublin")),
        ("I work for the BBC.", ("works_at", "the BBC")),
        ("I am working at Globex.", ("works_at", "Globex")),
        ("I have been working for Initech.", ("works_at", "Initech")),
        ("I'm called Sam Jones.", ("has_name", "Sam Jones")),
        ("Call me Ishmael.", ("has_name", "Ishmael")),
        ("I am a nurse.", ("has_role", "nurse")),
        ("I work as an architect.", ("has_role", "architect")),
        ("I prefer tea.", ("prefers", "tea")),
        ("I love hiking these days.", ("prefers", "hiking")),
        ("I enjoy jazz at the moment.", ("prefers", "jazz")),
        ("I hate mornings.", ("dislikes", "mornings")),
        ("I dislike crowds.", ("dislikes", "crowds")),
        ("I DON'T LIKE olives.", ("dislikes", "olives")),
        ("I can speak French.", ("speaks", "French")),
        ("I am fluent in Arabic.", ("speaks", "Arabic")),
        ("I use Emacs now.", ("uses", "Emacs")),
        ("I'm using Postgres.", ("uses", "Postgres")),
        ("I know about compilers.", ("knows_about", "compilers")),
        ("I'm an expert on tax law.", ("knows_about", "tax law")),
        ("I am familiar with Django.", ("knows_about", "Django")),
        ("Yes, I live in Cork.", ("lives_in", "Cork")),
        ("i live in cork", ("lives_in", "cork")),
    ],
)
def test_first_person_patterns_are_asserted_present(content, expected):
    (p,) = propose(content)
    assert (p.subject, p.predicate, p.object, p.polarity, p.tense) == ("I", *expected, "asserted", "present")


@pytest.mark.parametrize(
    ("content", "polarity", "tense"),
    [
        ("If I lived in Paris, I would be happy.", "hypothetical", "present"),
        ("I would live in Paris.", "hypothetical", "present"),
        ("I'd like a coffee.", "hypothetical", "present"),
        ("I guess I work at Acme.", "uncertain", "present"),
        ("I believe I speak Irish.", "uncertain", "present"),
        ("Maybe I live in Cork.", "uncertain", "present"),
        ("Probably I work at Acme.", "uncertain", "present"),
        ("Perhaps I use Vim.", "uncertain", "present"),
        ("I might live in Cork.", "uncertain", "present"),
        ("I may work at Acme.", "uncertain", "present"),
        ("Honestly, I don't work at Acme.", "denied", "present"),
        ("I never use Windows.", "denied", "present"),
        ("I haven't lived in Rome since 2001.", "denied", "present"),
        ("I am not a doctor.", "denied", "present"),
        ("I'm not living in Paris.", "denied", "present"),
        ("I can't speak French.", "denied", "present"),
        ("I don't live in London anymore.", "asserted", "past"),
        ("I no longer work at Acme.", "asserted", "past"),
        ("I lived in Rome.", "asserted", "past"),
        ("I worked for Acme until 2020.", "asserted", "past"),
        ("I was a teacher.", "asserted", "past"),
        ("I work at Acme until June.", "asserted", "past"),
        ("I have lived in Paris.", "asserted", "past"),
        ("I've lived in Dublin for 5 years.", "asserted", "present"),
        ("I used to be a teacher.", "asserted", "past"),
        ("My wife said: \"I work at Acme.\"", "reported", "present"),
        ("John told me I used to live in Rome.", "reported", "past"),
    ],
)
def test_modifier_rows(content, polarity, tense):
    found = propose(content)
    assert found, content
    assert (found[0].polarity, found[0].tense) == (polarity, tense)


@pytest.mark.parametrize(
    ("content", "polarity"),
    [
        # Negation or doubt anywhere before the subject in its clause.
        ("I'm not sure I live in Paris.", "uncertain"),
        ("It's not true that I live in Paris.", "denied"),
        ("Nobody would say I live in Paris.", "denied"),
        ("I doubt I work at Acme.", "uncertain"),
        # Frames that suppose or ask rather than assert.
        ("Let's say I live in Paris.", "hypothetical"),
        ("Assuming I live in Paris, the tax is high.", "hypothetical"),
        ("Please check that I live in Paris.", "uncertain"),
        ("Apparently I live in Paris.", "uncertain"),
        # Words after the object that take the assertion back.
        ("I live in Paris, or so my mother says.", "reported"),
        ("I live in Paris, my mother says.", "reported"),
        ("I live in Paris, she told me.", "reported"),
        ("I live in Paris, I think.", "uncertain"),
        ("I live in Paris apparently.", "uncertain"),
        # Lines quoted from someone else.
        ("John wrote:\nI live in Paris.", "reported"),
        ("> I live in Paris\n-- quoted from my landlord", "reported"),
    ],
)
def test_frames_that_do_not_assert(content, polarity):
    found = propose(content)
    assert [p.polarity for p in found] == [polarity], content
    assert gate_outcomes(content) == ["not_asserted"]


@pytest.mark.parametrize(
    "content",
    ["No, I live in Paris.", "Not that it matters, I live in Paris.", "I live in Paris, which is lovely.",
     "I don't know anyone here, but I live in Paris.", "John wrote:\nhello\n\nI live in Paris."],
)
def test_assertions_next_to_those_frames_still_assert(content):
    assert [(p.predicate, p.polarity) for p in propose(content)] == [("lives_in", "asserted")]


# Words that are not the speaker's own present statement: nothing of these may be believed. Each was a
# believed fact about the speaker before (an adversarial review's corpus); the gates now refuse them all.
NOT_BELIEVED = [
    # exercises, fiction and quotation
    "Translate to French: I work at Google.", "Correct the grammar: I am a pilot.",
    "Write a story where I live in Paris.", "Draft a cover letter: I work at Google and I speak French.",
    "Generate a bio: I am a doctor.", "Example: I live in Paris.", "e.g. I live in Paris.",
    "Repeat after me: I live in Paris.", "Roleplay: I am a pirate.", "In the story, I am a wizard.",
    "Make my character say I am a wizard.", "Two truths and a lie: I live in Paris. I speak Klingon. I am a pilot.",
    "Let's roleplay. I am a pirate and I live in Tortuga.", "John: I live in London.",
    "print('I live in Paris')", "`I live in London`", "```\nI live in London\n```",
    "‘I live in London,’ said John.", "'I live in London,' said John.", "«I live in London», said John.",
    # introduced lines, email layout, hard-wrapped frames
    "Here is the email I got:\n\nHi, I live in London and I work at HSBC.",
    "On Mon, 3 Jun 2024 at 10:00, John Smith <john@x.com> wrote:\n\nI live in London.",
    "My brother wrote:\n\nI live in Berlin and I work at Siemens.",
    "From: Mary <mary@x.com>\n\nI work at Acme.", "Below is a message from my brother.\nI live in Berlin.",
    "My brother thinks\nI work at Google.", "It is not true that\nI live in Paris.", "Maybe\nI live in Paris.",
    # taken back afterwards
    "I live in Paris — not!", "I live in Paris, not.", "I live in Paris. Just kidding.", "I live in Paris /s",
    "I live in Paris (not really).", "I live in Paris, yeah right.", "I live in Paris, said no one ever.",
    "I live in Paris, or not.", "I live in Paris, I hope.", "I live in Paris. That's a lie.",
    # hearsay, denial, doubt, condition, question
    "According to my doctor, I'm a diabetic.", "I live in Paris, according to John.", "I live in Paris, says my mother.",
    "John heard I live in Paris.", "People say I'm a genius.", "It seems I live in Paris.", "Rumour has it I live in Paris.",
    "No way I live in Paris.", "It's false that I live in Paris.", "I deny that I live in Paris.",
    "When I live in Paris I will buy a bike.", "As soon as I work at Google, I'll buy a car.",
    "I hope I work at Google one day.", "Did I say I live in Paris", "Tell me why I live in Paris",
    "I live in Paris?!", "I live in Paris？",
    # out of the present
    "Next year I live in Paris.", "Tomorrow I work at Google.", "I live in Paris next year.",
    "I work at Google as of next month.", "Previously, I work at Acme.",
]

STILL_BELIEVED = [
    "I live in Dublin.", "I work at Acme and I speak Irish.", "My name is Sam.", "I'm a teacher.",
    "I moved to Cork last month.", "I have worked at Ensera since 2019.", "Note: I live in Paris.",
    "No, I live in Paris.", "Not gonna lie, I live in Paris.", "Remember that I live in Paris.",
    "For the record, I live in Paris.", "I live in Paris, not Rome.", "John, I live in Paris.",
    "- I live in London", "I live in Paris. Just kidding, I live in Rome.",
    # ordinary chat around the words that frame exercises and quotations elsewhere
    "Long story short, I moved to Cork.", "I got your message, I live in Paris.",
    "That's correct, I live in Paris.", "The test went well, I work at Google now.",
]


@pytest.mark.parametrize("content", NOT_BELIEVED)
def test_words_that_are_not_a_present_statement_are_never_believed(content):
    assert "admitted" not in gate_outcomes(content), [(p.subject, p.predicate, p.object, p.polarity, p.tense)
                                                      for p in propose(content)]


@pytest.mark.parametrize("content", STILL_BELIEVED)
def test_plain_statements_next_to_those_still_form(content):
    assert "admitted" in gate_outcomes(content)


def test_a_retraction_then_a_new_value_keeps_only_the_new_one():
    assert [(p.object, p.polarity) for p in propose("I live in Paris. Just kidding, I live in Rome.")] == [
        ("Paris", "denied"), ("Rome", "asserted")]


def test_a_line_framed_by_a_reporter_takes_the_reporter_as_subject():
    assert brief("John wrote:\nI live in Paris.\nI work at Acme.") == [
        ("John", "lives_in", "Paris", "reported", "present"),
        ("John", "works_at", "Acme", "reported", "present"),
    ]


def test_reported_speech_takes_the_reporter_as_subject():
    assert brief('"I live in Rome," Maria said.') == [("Maria", "lives_in", "Rome", "reported", "present")]
    assert brief("My wife says I work at Acme.") == [("My wife", "works_at", "Acme", "reported", "present")]
    # A quotation that runs over two sentences stays reported.
    assert brief('John said: "I live in London. I work at Acme."') == [
        ("John", "lives_in", "London", "reported", "present"),
        ("John", "works_at", "Acme", "reported", "present"),
    ]


def test_future_and_plans():
    assert brief("I'm going to move to Berlin.") == [
        ("I", "intends_to", "move to Berlin", "asserted", "present"),
        ("I", "lives_in", "Berlin", "asserted", "future"),
    ]
    assert brief("I'll be a doctor next year.") == [
        ("I", "intends_to", "be a doctor", "asserted", "present"),
        ("I", "has_role", "doctor", "asserted", "future"),
    ]
    assert brief("I plan to learn Spanish next month.") == [("I", "intends_to", "learn Spanish", "asserted", "present")]
    assert brief("I'm planning to move to Berlin and work at SAP.") == [
        ("I", "intends_to", "move to Berlin", "asserted", "present"),
        ("I", "intends_to", "work at SAP", "asserted", "present"),
    ]
    assert brief("I don't plan to move to Berlin.") == [("I", "intends_to", "move to Berlin", "denied", "present")]
    assert gate_outcomes("I'm going to move to Berlin.") == ["admitted", "not_current"]


def test_continuation_keeps_subject_and_modifiers():
    assert brief("I used to live in Amman and work at Acme.") == [
        ("I", "lives_in", "Amman", "asserted", "past"),
        ("I", "works_at", "Acme", "asserted", "past"),
    ]
    assert brief("I think I live in Cork and work at Acme.")[1][3] == "uncertain"
    # After "but" the subject does not carry over, and a clause with its own subject starts afresh.
    assert brief("I live in Cork but work at Acme.") == [("I", "lives_in", "Cork", "asserted", "present")]
    assert brief("I used to live in Amman and I live in Cork now.") == [
        ("I", "lives_in", "Amman", "asserted", "past"),
        ("I", "lives_in", "Cork", "asserted", "present"),
    ]


def test_third_person_patterns():
    assert brief("Sarah lives in Paris and works at Acme.") == [
        ("Sarah", "lives_in", "Paris", "asserted", "present"),
        ("Sarah", "works_at", "Acme", "asserted", "present"),
    ]
    assert brief("John Smith works for Globex.") == [("John Smith", "works_at", "Globex", "asserted", "present")]
    # "<Name> is a X" is not proposed: a capitalised word opening "Python is a language" is no person.
    assert brief("Maria is an engineer.") == brief("Python is a programming language.") == []
    assert brief("Tom doesn't live in Rome.") == [("Tom", "lives_in", "Rome", "denied", "present")]
    assert brief("He lives in Rome.") == []  # a pronoun is not a name


@pytest.mark.parametrize(
    ("content", "obj"),
    [
        ("I live in Dublin now.", "Dublin"),
        ("I live in Dublin right now!", "Dublin"),
        ("I moved to Lisbon in March.", "Lisbon"),
        ("I moved to Lisbon in 2021.", "Lisbon"),
        ("I moved to Lisbon two years ago.", "Lisbon"),
        ("I work at Acme at the moment...", "Acme"),
        ("I have worked at Acme since January 2019, happily.", "Acme"),
        ("I work at Acme, which is great.", "Acme"),
        ("I live in Dublin, Ireland.", "Dublin, Ireland"),
        ('I work at "Acme".', "Acme"),
        ("I am a software engineer at Google, and it's fine.", "software engineer at Google"),
    ],
)
def test_object_trimming(content, obj):
    (p,) = propose(content)
    assert p.object == obj
    assert p.quote.endswith(obj)


@pytest.mark.parametrize(
    "content",
    [
        "Do I live in Dublin?",
        "Where do I work?",
        "I like it.",
        "I'm a bit tired.",
        "I speak to my mom every day.",
        "I'm going to the shop.",
        "You live in Dublin.",
        # A question asserts nothing, however it is worded.
        "I live in Rome?",
        "Is it true I live in Paris?",
        "Assuming I live in Paris, what is the tax rate?",
        'He asked: "Do I live in Paris?"',
        # The parts of a contraction are never a name ("I'm" is not someone called I'm).
        "I'm really going to move to Paris.",
        "Don't live in Paris.",
        "",
        "   \n\n  ",
    ],
)
def test_nothing_proposed(content):
    assert propose(content) == []


CORPUS = [
    *[row[0] for row in REQUIRED],
    "Hi! I live in Zürich and I work at Ünicorn GmbH; I love 🍣 sushi.\nMy name is Zoë.",
    "I  live   in\tDublin.",
    "I'm gonna move to Tokyo, and I'll be a teacher there.",
    'She wrote: “I used to work at Acme. I live in Oslo.” I live in Bergen.',
    "I don't think I live in Cork anymore, but I do live in Galway.",
    "I have been living in Madrid since 2010 and I speak Spanish.",
]


@pytest.mark.parametrize("content", CORPUS)
def test_every_quote_is_verbatim_and_locatable(content):
    for p in propose(content):
        span = locate(content, p.quote)
        assert span is not None, p
        assert quote_at(content, *span) == p.quote
        assert p.object and p.object in p.quote
        assert p.statement == p.quote[0].upper() + p.quote[1:] + "."


def test_mixed_message():
    content = 'She wrote: “I used to work at Acme. I live in Oslo.” I live in Bergen.'
    assert brief(content) == [
        ("She", "works_at", "Acme", "reported", "past"),
        ("She", "lives_in", "Oslo", "reported", "present"),
        ("I", "lives_in", "Bergen", "asserted", "present"),
    ]


def test_deterministic():
    content = CORPUS[-5]
    assert propose(content) == propose(content) == RulesProposer().propose(Message("user", content), VOCABULARY)


def test_predicates_outside_the_vocabulary_are_still_proposed_and_refused_by_gate_one():
    small = [BY_NAME["works_at"]]
    (p,) = RULES.propose(Message("user", "I live in Dublin."), small)
    assert (p.predicate, p.object_type) == ("lives_in", "place")
    result = judge(p, content="I live in Dublin.", vocabulary={"works_at": BY_NAME["works_at"]},
                   unresolvable=UNRESOLVABLE, admitted=set())
    assert result.reason == "unmapped_relation"


@pytest.mark.parametrize(
    "content",
    ["do I live in Dublin " * 3200, "I " * 30000, "John Smith " * 6000, "I live in " + "x " * 30000,
     "I think I live in Cork and work at Acme, " * 1500,
     # Runs that once made segmentation quadratic (a minute or more each).
     "." * 65_000 + "x", "!?" * 32_000 + "x", "I live in" + " " * 65_000 + "x", "I live in" + "\t" * 65_000 + "x",
     "I live in" + "\u00a0" * 32_000 + "x", "I live in X" + " , but" * 10_000, '"a" ' * 16_000,
     "I live in Paris; " * 3800],
)
def test_work_stays_bounded_on_a_64_kib_message(content):
    started = time.monotonic()
    propose(content)
    assert time.monotonic() - started < 3.0


def test_an_object_running_on_without_end_names_nothing():
    assert propose("I live in " + "very " * 200 + "far away") == []
    assert brief("I live in " + "x" * 400) == [("I", "lives_in", "x" * 400, "asserted", "present")]

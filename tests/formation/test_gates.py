"""The gates (formation.md §6): fixed order, first failure wins, pure code."""

import math

import pytest

from formation.gates import REFUSAL_REASONS, Admitted, Refused, effective_unresolvable, judge
from formation.proposals import PredicateSpec, Proposal
from memory.vocabulary import PREDICATES, SPEAKER_TERMS, UNRESOLVABLE_TERMS

VOCABULARY = {name: PredicateSpec(name, st, card, kind, desc, event) for name, st, card, kind, event, desc in PREDICATES}
UNRESOLVABLE = effective_unresolvable(
    [term for terms in UNRESOLVABLE_TERMS.values() for term in terms], SPEAKER_TERMS
)
CONTENT = "I live in Dublin. I was born in Cork."


def proposal(**overrides) -> Proposal:
    fields = dict(subject="I", predicate="lives_in", object="Dublin", statement="I live in Dublin.",
                  confidence=0.8, quote="I live in Dublin", polarity="asserted", tense="present")
    fields.update(overrides)
    return Proposal(**fields)


def run(p: Proposal, admitted: set | None = None, content: str = CONTENT):
    return judge(p, content=content, vocabulary=VOCABULARY, unresolvable=UNRESOLVABLE,
                 admitted=set() if admitted is None else admitted)


def reason(p: Proposal, **kwargs) -> str:
    outcome = run(p, **kwargs)
    return "admitted" if isinstance(outcome, Admitted) else outcome.reason


def test_refusal_reasons_are_the_nine_in_data_model_order():
    assert REFUSAL_REASONS == (
        "unmapped_relation", "unlocatable_quote", "duplicate_claim", "not_asserted", "unresolvable_subject",
        "not_current", "conflicting_value", "not_spoken_by_principal", "entity_name_limit",
    )


def test_effective_unresolvable_set_excludes_speaker_terms():
    assert len(UNRESOLVABLE) == 41
    assert "i" not in UNRESOLVABLE and "me" not in UNRESOLVABLE
    assert {"my", "you", "he", "that", "there", "someone", "who"} <= UNRESOLVABLE


def test_admitted_records_the_located_bytes_not_the_models_text():
    admitted: set = set()
    outcome = run(proposal(quote="I live\nin Dublin", object_type=""), admitted)
    assert isinstance(outcome, Admitted)
    assert (outcome.byte_start, outcome.byte_end, outcome.quote) == (0, 16, "I live in Dublin")
    assert outcome.predicate is VOCABULARY["lives_in"]
    assert outcome.object_type == "place"  # the predicate's object kind by default
    assert outcome.confidence == 0.8
    assert admitted == {("lives_in", "i", "dublin")}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"predicate": "resides_in"}, "unmapped_relation"),
        ({"predicate": "Lives_In"}, "unmapped_relation"),  # exact and case-sensitive
        ({"subject": ""}, "unresolvable_subject"),
        ({"subject": "  \n"}, "unresolvable_subject"),
        ({"subject": "He"}, "unresolvable_subject"),
        ({"subject": "my"}, "unresolvable_subject"),
        ({"subject": "You"}, "unresolvable_subject"),
        ({"subject": "the user"}, "admitted"),  # a speaker term: bound later by the claim writer
        ({"subject": "Me"}, "admitted"),
        ({"quote": "I reside in Dublin"}, "unlocatable_quote"),
        ({"quote": "i live in dublin"}, "unlocatable_quote"),
        ({"polarity": "denied"}, "not_asserted"),
        ({"polarity": "uncertain"}, "not_asserted"),
        ({"polarity": "hypothetical"}, "not_asserted"),
        ({"polarity": "reported"}, "not_asserted"),
        ({"polarity": ""}, "not_asserted"),
        ({"polarity": "Asserted"}, "not_asserted"),
        ({"tense": "past"}, "not_current"),
        ({"tense": "future"}, "not_current"),
        ({"tense": ""}, "not_current"),
        ({"tense": "now"}, "not_current"),
    ],
)
def test_each_gate(overrides, expected):
    assert reason(proposal(**overrides)) == expected


def test_past_is_current_for_an_event_predicate_only():
    born = proposal(predicate="born_in", object="Cork", quote="I was born in Cork", tense="past")
    assert reason(born) == "admitted"
    assert reason(proposal(predicate="born_in", object="Cork", quote="I was born in Cork", tense="future")) == "not_current"
    assert reason(proposal(tense="past")) == "not_current"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # Every proposal here fails several gates; the earliest one in §6 order is reported.
        ({"predicate": "nope", "subject": "he", "quote": "x", "polarity": "denied", "tense": "future"}, "unmapped_relation"),
        ({"subject": "he", "quote": "x", "polarity": "denied", "tense": "future"}, "unresolvable_subject"),
        ({"quote": "x", "polarity": "denied", "tense": "future"}, "unlocatable_quote"),
        ({"polarity": "denied", "tense": "future"}, "not_asserted"),
    ],
)
def test_first_failure_wins(overrides, expected):
    assert reason(proposal(**overrides)) == expected


def test_duplicates_compare_normalised_names_and_only_count_admissions():
    admitted: set = set()
    assert reason(proposal(polarity="denied"), admitted=admitted) == "not_asserted"
    assert admitted == set()  # a refusal does not make the next claim a duplicate
    assert reason(proposal(), admitted=admitted) == "admitted"
    assert reason(proposal(subject="i", object="  DUBLIN "), admitted=admitted) == "duplicate_claim"
    assert reason(proposal(subject="Me"), admitted=admitted) == "admitted"  # another subject spelling is another key
    assert reason(proposal(predicate="born_in", tense="past"), admitted=admitted) == "admitted"


@pytest.mark.parametrize(
    ("given", "stored"),
    [(0.5, 0.5), (1.7, 1.0), (-3.0, 0.0), (math.nan, 0.0), (math.inf, 1.0), (-math.inf, 0.0), (0, 0.0)],
)
def test_confidence_is_clamped_never_gated(given, stored):
    outcome = run(proposal(confidence=given))
    assert isinstance(outcome, Admitted)
    assert outcome.confidence == stored


def test_types_outside_the_closed_kinds_fall_back():
    outcome = run(proposal(subject_type="company", object_type="city"))
    assert (outcome.subject_type, outcome.object_type) == ("thing", "place")
    outcome = run(proposal(subject_type="person", object_type="value"))
    assert (outcome.subject_type, outcome.object_type) == ("person", "value")


def test_refusal_keeps_the_proposers_words():
    p = proposal(quote="I reside in Dublin", statement="I reside in Dublin.")
    outcome = run(p)
    assert isinstance(outcome, Refused)
    assert outcome.proposal is p

"""Time words (issue 12): each listed form resolved against the message's occurred_at, and the resolved
valid time stored by real formation (rules/v2 through the gates and the claim writer) into the database."""
from datetime import UTC, datetime

import pytest
from django.db import connection

from formation import driver, timewords
from formation.proposals import Message, PredicateSpec
from formation.rules_v2 import RulesV2Proposer
from memory import services
from memory.vocabulary import PREDICATES

VOCABULARY = [PredicateSpec(name, st, card, kind, desc, event) for name, st, card, kind, event, desc in PREDICATES]
# A Wednesday evening, and a Wednesday morning early in January (the year rolls back).
AT = datetime(2026, 5, 13, 18, 0, tzinfo=UTC)
JAN = datetime(2026, 1, 7, 9, 30, tzinfo=UTC)


def day(y, m, d):
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize("words, at, expected", [
    ("yesterday", AT, day(2026, 5, 12)), ("last night", AT, day(2026, 5, 12)), ("yesterday", JAN, day(2026, 1, 6)),
    ("this morning", AT, day(2026, 5, 13)),
    ("last week", AT, day(2026, 5, 4)), ("last week", JAN, day(2025, 12, 29)),
    ("last weekend", AT, day(2026, 5, 9)), ("two weekends ago", AT, day(2026, 5, 2)),
    ("two weekends ago", JAN, day(2025, 12, 27)),
    ("in March", AT, day(2026, 3, 1)), ("in March", JAN, day(2025, 3, 1)), ("in June", AT, day(2025, 6, 1)),
    ("in March 2021", AT, day(2021, 3, 1)), ("in 2019", AT, day(2019, 1, 1)),
    ("since 2019", AT, day(2019, 1, 1)), ("since April", AT, day(2026, 4, 1)),
    ("for 4 years", AT, day(2022, 5, 13)), ("for three months", AT, day(2026, 2, 13)),
    ("last month", AT, day(2026, 4, 1)), ("last month", JAN, day(2025, 12, 1)),
    ("three days ago", AT, day(2026, 5, 10)), ("two weeks ago", AT, day(2026, 4, 29)),
    ("a month ago", AT, day(2026, 4, 13)), ("last year", AT, day(2025, 1, 1)), ("two years ago", AT, day(2024, 5, 13)),
    ("on Monday", AT, day(2026, 5, 11)), ("on Wednesday", AT, day(2026, 5, 6)), ("last Friday", AT, day(2026, 5, 8)),
    ("last summer", AT, day(2025, 6, 1)),
])
def test_each_form_resolves_against_occurred_at(words, at, expected):
    assert timewords.resolve(timewords.find(f"I did it {words}."), at) == expected


@pytest.mark.parametrize("text", ["the other day", "a while back", "recently", "some time", "in 2099", "soon"])
def test_unresolvable_or_future_words_give_nothing(text):
    assert timewords.resolve(timewords.find(text), AT) is None


def propose(text, at=AT):
    return [(p.predicate, p.object, p.tense, p.valid_from, p.valid_until)
            for p in RulesV2Proposer().propose(Message("user", text, at), VOCABULARY)]


def test_the_proposer_dates_events_and_changes():
    assert propose("I started a new job as a financial analyst last week.") == [
        ("has_role", "financial analyst", "present", day(2026, 5, 4), None)]
    assert propose("I went to a pottery class yesterday.") == [
        ("participated_in", "pottery class", "past", day(2026, 5, 12), None)]
    assert propose("Two weekends ago I ran a 10k race.", JAN) == [
        ("participated_in", "10k race", "past", day(2025, 12, 27), None)]
    assert propose("I've lived in Boston since 2019.") == [("lives_in", "Boston", "present", day(2019, 1, 1), None)]
    # Unresolvable time words leave the claim at the message time.
    assert propose("I moved to Denver the other day.") == [("lives_in", "Denver", "present", None, None)]


def test_a_state_that_is_over_is_closed():
    assert propose("I lived in London for 4 years.") == [("lives_in", "London", "past", day(2022, 5, 13), AT)]
    # Without a range it cannot be held, and stays refused as not current.
    assert propose("I used to live in Miami.") == [("lives_in", "Miami", "past", None, None)]


# ---------------------------------------------------------------------------------------------
# Through real formation into the database.



def observe(project, content, at):
    turn = [{"role": "user", "content": content, "group_ordinal": 0}]
    return services.observe(project=project, messages=turn, data_subject_id="alice", occurred_at=at).id


def stored(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT f.predicate, o.canonical_name, lower(f.valid), upper(f.valid), e.extractor_version"
                       " FROM fact f JOIN fact_evidence e ON e.fact_id = f.fact_id"
                       " LEFT JOIN entity o ON o.entity_id = f.object_entity_id WHERE f.scope = %s"
                       " ORDER BY lower(f.valid)", [project])
        return cursor.fetchall()


@pytest.mark.django_db
@pytest.mark.parametrize("content, at, expected", [
    ("I started a new job as a financial analyst last week.", AT, ("has_role", "financial analyst", day(2026, 5, 4),
                                                                    None)),
    ("I moved to Denver last month.", JAN, ("lives_in", "Denver", day(2025, 12, 1), None)),
    ("I went to a pottery class yesterday.", AT, ("participated_in", "pottery class", day(2026, 5, 12), None)),
    ("Two weekends ago I went camping with my kids.", AT, ("participated_in", "camping", day(2026, 5, 2), None)),
    ("I joined a book club in March.", AT, ("member_of", "book club", day(2026, 3, 1), None)),
    ("I've worked at the library since 2019.", AT, ("works_at", "library", day(2019, 1, 1), None)),
    ("I lived in London for 4 years.", AT, ("lives_in", "London", day(2022, 5, 13), AT)),
    ("I moved to Denver the other day.", AT, ("lives_in", "Denver", AT, None)),
])
def test_formation_stores_the_resolved_valid_time(new_project, content, at, expected):
    project, _ = new_project
    observe(project, content, at)
    assert driver.drain(project, proposer=RulesV2Proposer()).turns_formed == 1
    assert stored(project) == [(*expected, "rules/v2")]


@pytest.mark.django_db
def test_a_move_dated_last_month_closes_the_older_home_at_the_move(new_project):
    project, _ = new_project
    observe(project, "I live in Chicago.", day(2025, 1, 10))
    observe(project, "I moved to Denver last month.", AT)
    driver.drain(project, proposer=RulesV2Proposer())
    assert stored(project) == [("lives_in", "Chicago", day(2025, 1, 10), day(2026, 4, 1), "rules/v2"),
                               ("lives_in", "Denver", day(2026, 4, 1), None, "rules/v2")]

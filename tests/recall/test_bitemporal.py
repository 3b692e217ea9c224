"""Bitemporal recall (recall.md §5): a changed value read as of a past instant and as known at a past
instant, and a knowledge-closed (retracted) fact that leaves the current read but not the past."""
from datetime import UTC, datetime

import pytest
from django.db import connection

from core.encoding import format_ts
from tests.recall.conftest import recall_ok, write_fact

T2020 = datetime(2020, 1, 1, tzinfo=UTC)
T2022 = datetime(2022, 6, 1, tzinfo=UTC)
T2024 = datetime(2024, 1, 1, tzinfo=UTC)


def db_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


@pytest.fixture
def moved(project):
    """Kim lived in Dublin from 2020; we later learned she moved to Paris in 2024."""
    dublin, _ = write_fact(project, content="Kim lives in Dublin.", quote="Kim lives in Dublin",
                           predicate="lives_in", subject="Kim", object="Dublin", valid_from=T2020)
    before_move_known = db_now()
    paris, _ = write_fact(project, content="Kim lives in Paris now.", quote="Kim lives in Paris",
                          predicate="lives_in", subject="Kim", object="Paris", valid_from=T2024)
    return {"dublin": dublin, "paris": paris, "known_before": before_move_known}


def objects(bundle):
    return [(f["object"], f["valid_from"], f["valid_until"]) for f in bundle["facts"]]


def test_current_read_has_only_the_new_value(moved, auth):
    assert objects(recall_ok(auth, question="Kim")) == [("Paris", format_ts(T2024), None)]


def test_as_of_a_past_instant_returns_the_value_then_with_its_end(moved, auth):
    past = recall_ok(auth, question="Kim", as_of=format_ts(T2022))
    assert objects(past) == [("Dublin", format_ts(T2020), format_ts(T2024))]
    assert past["facts"][0]["fact_id"] == moved["dublin"]
    assert objects(recall_ok(auth, question="Kim", as_of="2019-01-01T00:00:00Z")) == []


def test_as_known_at_a_past_instant_returns_what_was_believed(moved, auth):
    known = format_ts(moved["known_before"])
    believed = recall_ok(auth, question="Kim", as_known_at=known)
    # Then, Dublin was believed open-ended and Paris was not yet known.
    assert objects(believed) == [("Dublin", format_ts(T2020), None)]
    both = recall_ok(auth, question="Kim", as_known_at=known, as_of=format_ts(T2024))
    assert objects(both) == [("Dublin", format_ts(T2020), None)]
    latest = recall_ok(auth, question="Kim", as_known_at=format_ts(db_now()), as_of=format_ts(T2024))
    assert objects(latest) == [("Paris", format_ts(T2024), None)]


def test_a_knowledge_closed_fact_disappears_now_but_not_before(project, auth):
    fact_id, _ = write_fact(project, content="Lee uses Vim.", quote="Lee uses Vim", predicate="uses",
                            subject="Lee", object="Vim")
    believed_at = db_now()
    with connection.cursor() as cursor:
        # A retraction closes knowledge; nothing else about the row changes.
        cursor.execute("UPDATE fact SET known = tstzrange(lower(known), clock_timestamp()) WHERE fact_id = %s",
                       [fact_id])
    after = db_now()
    assert recall_ok(auth, question="Lee")["facts"] == []
    assert [f["fact_id"] for f in recall_ok(auth, question="Lee", as_known_at=format_ts(believed_at))["facts"]] == [
        fact_id]
    assert recall_ok(auth, question="Lee", as_known_at=format_ts(after))["facts"] == []
    # As of a valid-time instant, knowledge must still be open: the retracted fact stays out.
    assert recall_ok(auth, question="Lee", as_of=format_ts(after))["facts"] == []


def test_a_fact_not_yet_known_is_absent_from_an_earlier_knowledge_instant(project, auth):
    before = db_now()
    write_fact(project, content="Lee uses Emacs.", quote="Lee uses Emacs", predicate="uses", subject="Lee",
               object="Emacs")
    assert recall_ok(auth, question="Lee", as_known_at=format_ts(before))["facts"] == []
    assert len(recall_ok(auth, question="Lee")["facts"]) == 1


def test_a_future_validity_start_still_shows_in_the_current_read(project, auth):
    future = datetime(2999, 1, 1, tzinfo=UTC)
    write_fact(project, content="Max uses Rust.", quote="Max uses Rust", predicate="uses", subject="Max",
               object="Rust", valid_from=future)
    assert objects(recall_ok(auth, question="Max")) == [("Rust", format_ts(future), None)]

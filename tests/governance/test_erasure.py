"""Erasure rules inside one rolled-back transaction (governance.md §1): the residual check, the registry,
source selectors, supersession cascades, sharing and the selector validation."""
import uuid
from contextlib import contextmanager

import pytest
from django.db import connection, transaction

from core.errors import Invalid
from governance.erasure import erase
from tests.conftest import unique_name
from tests.governance.support import (
    PROJECT_COUNTS,
    fact_of,
    form,
    one,
    project_counts,
    register,
    say,
    word,
)

pytestmark = pytest.mark.django_db


@contextmanager
def rolled_back():
    """A savepoint undone afterwards: registry changes never reach the test's deferred-constraint check."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def _erase(project, **selector):
    return erase(project=project, principal="cli", principal_kind="operator", **selector)


def test_erasing_the_turn_that_closed_a_fact_removes_the_closed_fact_and_counts_it(new_project):
    project, _ = new_project
    subject = word("s")
    first = say(project, subject, f"I live in {word('Dub')}.", minutes_ago=10)
    second = say(project, subject, f"I moved to {word('Cor')}.", minutes_ago=5)
    form(project)
    closed = fact_of(project, first)
    assert one("SELECT supersession_source_id::text FROM fact WHERE fact_id = %s", [closed]) == (second,)
    before = project_counts(project)
    receipt = _erase(project, source_observation_ids=[second.upper()])
    after = project_counts(project)
    assert receipt["clean"] is True
    assert receipt["data_subject_id"] == "" and receipt["source_observation_ids"] == [second]
    assert "data_subject" not in receipt["deleted"]
    # Its own fact and the fact it closed (whose end date is never guessed) both go, evidence included.
    assert receipt["deleted"]["fact"] == 2 and receipt["deleted"]["fact_evidence"] == 2
    assert receipt["deleted"]["observation"] == 1 and receipt["deleted"]["message"] == 1
    keys = set(PROJECT_COUNTS) - {"data_subject"}
    assert {k: before[k] - after[k] for k in keys} == {k: receipt["deleted"][k] for k in keys}
    # The first turn itself stays.
    assert one("SELECT count(*) FROM observation WHERE observation_id = %s", [first]) == (1,)


def test_a_source_erasure_keeps_an_entity_another_source_registered(new_project):
    project, _ = new_project
    org = word("Acm")
    first = say(project, "a", f"I work at {org.upper()}.")
    say(project, "b", f"I work at {org}.")
    form(project)
    receipt = _erase(project, source_observation_ids=[first])
    assert receipt["clean"] is True and receipt["deleted"]["entity_name_receipt"] >= 1
    assert one("SELECT canonical_name, aliases FROM entity WHERE scope = %s AND normalized_name = %s",
               [project, org.lower()]) == (org, [])


def test_a_project_wide_registration_keeps_a_shared_entity(new_project):
    project, _ = new_project
    org = word("Acm")
    say(project, "a", f"I work at {org}.")
    form(project)
    entity = str(one("SELECT entity_id FROM entity WHERE scope = %s AND normalized_name = %s",
                     [project, org.lower()])[0])
    # A turn with no subject that also registered the entity (as formation would for a project-wide turn).
    unattributed = say(project, None, f"{org} is hiring.")
    with connection.cursor() as cursor:
        register(cursor, project, unattributed, "entity", entity, None)
    receipt = _erase(project, data_subject_id="a")
    assert receipt["clean"] is True
    assert one("SELECT count(*) FROM entity WHERE entity_id = %s", [entity]) == (1,)


def test_a_repeated_erasure_is_harmless_and_counts_zero(new_project):
    project, _ = new_project
    say(project, "a", "I live in Paris.")
    form(project)
    first = _erase(project, data_subject_id="a", reason="asked twice")
    second = _erase(project, data_subject_id="a", reason="asked twice")
    assert first["deleted"]["observation"] == 1
    assert set(second["deleted"].values()) == {0} and second["clean"] is True
    assert one("SELECT count(*) FROM erasure_request WHERE scope = %s AND completed_at IS NOT NULL",
               [project]) == (2,)


def test_another_projects_ids_and_subjects_match_nothing(new_project):
    project, _ = new_project
    observation = say(project, "a", "I live in Paris.")
    form(project)
    from governance import services

    other = unique_name()
    services.create_project(name=other, principal="cli")
    by_id = _erase(other, source_observation_ids=[observation])
    by_subject = _erase(other, data_subject_id="a")
    assert set(by_id["deleted"].values()) == {0} and set(by_subject["deleted"].values()) == {0}
    assert one("SELECT count(*) FROM fact WHERE scope = %s", [project]) == (1,)


def test_a_registered_subject_is_deleted_even_without_memory(new_project):
    project, _ = new_project
    from tests.governance.support import register_subject

    subject = register_subject(project, "ref")
    receipt = _erase(project, data_subject_id=subject)
    assert receipt["deleted"]["data_subject"] == 1 and receipt["residual"]["data_subject"] == 0
    # Its text form is what matches: the upper-case spelling names nobody.
    other = register_subject(project, "ref2")
    assert _erase(project, data_subject_id=other.upper())["deleted"]["data_subject"] == 0


@pytest.mark.parametrize("selector, code", [
    ({}, "no_subject"),
    ({"data_subject_id": " \u00a0"}, "no_subject"),
    ({"source_observation_ids": []}, "no_subject"),
    ({"data_subject_id": "", "source_observation_ids": []}, "no_subject"),
    ({"data_subject_id": "a", "source_observation_ids": [str(uuid.uuid4())]}, "invalid_erasure"),
    ({"source_observation_ids": ["not-a-uuid"]}, "invalid_erasure"),
    ({"source_observation_ids": [str(uuid.uuid4()) for _ in range(10_001)]}, "invalid_erasure"),
    ({"data_subject_id": "x" * 1025}, "invalid_erasure"),
    ({"data_subject_id": "a", "reason": "r" * 1025}, "invalid_erasure"),
])
def test_selectors_are_validated_before_anything_happens(new_project, selector, code):
    project, _ = new_project
    with pytest.raises(Invalid) as info:
        _erase(project, **selector)
    assert info.value.code == code
    assert one("SELECT count(*) FROM erasure_request WHERE scope = %s", [project]) == (0,)


def test_a_blank_subject_beside_ids_selects_by_source(new_project):
    project, _ = new_project
    observation = say(project, "a", "I live in Paris.")
    receipt = _erase(project, data_subject_id="  ", source_observation_ids=[observation])
    assert receipt["deleted"]["observation"] == 1 and receipt["data_subject_id"] == ""

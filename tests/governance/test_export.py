"""Subject access export (governance.md §2): every section, raw rows, the 50,000-row limit, the selectors."""
import uuid

import pytest
from django.db import connection

from core.errors import DomainError, Invalid
from governance.export import EXPORT_LIMIT, export, refusal_summary
from tests.governance.support import (
    add_artifact,
    add_curated,
    add_feedback,
    add_retraction,
    add_segment,
    fact_of,
    form,
    one,
    register_subject,
    rows,
    say,
    word,
)

pytestmark = pytest.mark.django_db

SECTIONS = {
    "observation", "message", "fact_evidence", "entity_name_receipt", "record_retraction", "curated_claim",
    "fact", "entity", "rejected_claim", "fact_history", "agent_artifact", "segment", "feedback",
    "data_subject", "subject_retry",
}


def _export(project, **selector):
    return export(project=project, principal="cli", principal_kind="operator", **selector)


def test_an_unregistered_subject_with_no_memory_still_gets_every_section(new_project):
    project, _ = new_project
    result = _export(project, data_subject_id="nobody")
    assert set(result["sections"]) == SECTIONS and set(result["rows"]) == SECTIONS
    assert set(result["rows"].values()) == {0} and all(v == [] for v in result["sections"].values())
    assert result["data_subject_id"] == "nobody" and "source_observation_ids" not in result


def test_a_subject_export_holds_the_raw_rows_of_everything_the_subject_reaches(new_project):
    project, _ = new_project
    subject = register_subject(project, "ref-1")
    dub, cork = word("Dub"), word("Cor")
    first = say(project, subject, f"I live in {dub}.", minutes_ago=10)
    moved = say(project, subject, f"I moved to {cork}.", minutes_ago=5)
    say(project, subject, "I used to live in Amman.", minutes_ago=4)
    say(project, "someone-else", "I live in Oslo.", minutes_ago=3)
    form(project)
    add_artifact(project, subject, b"\x00\x01state")
    add_feedback(project, fact_of(project, moved), "not right")
    add_segment(project, subject, "lived in two places")
    add_curated(project, subject, "I prefer tea.")
    add_retraction(project, first, fact_of(project, first))

    result = _export(project, data_subject_id=subject)
    sections, counts = result["sections"], result["rows"]
    assert set(sections) == SECTIONS
    assert counts == {key: len(value) for key, value in sections.items()}
    assert all(counts[key] > 0 for key in SECTIONS), counts
    # Raw rows: database column names and PostgreSQL's JSON forms, nothing of the other subject.
    assert {m["content"] for m in sections["message"]} == {
        f"I live in {dub}.", f"I moved to {cork}.", "I used to live in Amman.", "I prefer tea."}
    assert {o["data_subject_id"] for o in sections["observation"]} == {subject}
    assert sections["agent_artifact"][0]["content"] == "\\x00017374617465"
    assert sections["data_subject"][0]["subject_id"] == subject
    assert sections["subject_retry"][0]["key_digest"].startswith("\\x")
    assert {e["canonical_name"] for e in sections["entity"]} >= {dub, cork}
    assert "Oslo" not in {e["canonical_name"] for e in sections["entity"]}
    assert [r["reason"] for r in sections["rejected_claim"]] == ["not_current"]
    # Each projection once, however many of the subject's turns registered it.
    assert len({s["segment_id"] for s in sections["segment"]}) == len(sections["segment"]) == 1
    total = sum(counts.values())
    assert one("SELECT principal, magnitude FROM audit_entry WHERE project = %s AND operation = 'export'",
               [project]) == ("cli", total)


def test_a_source_export_holds_only_those_sources(new_project):
    project, _ = new_project
    kept = say(project, "a", "I live in Paris.", minutes_ago=2)
    say(project, "a", "I work at Acme.", minutes_ago=1)
    form(project)
    result = _export(project, source_observation_ids=[kept.upper()])
    assert result["data_subject_id"] == "" and result["source_observation_ids"] == [kept]
    assert [o["observation_id"] for o in result["sections"]["observation"]] == [kept]
    assert [f["statement"] for f in result["sections"]["fact"]] == ["I live in Paris."]
    assert result["sections"]["data_subject"] == [] and result["sections"]["subject_retry"] == []


def test_another_projects_sources_export_nothing(new_project):
    project, _ = new_project
    observation = say(project, "a", "I live in Paris.")
    form(project)
    from governance import services
    from tests.conftest import unique_name

    other = unique_name()
    services.create_project(name=other, principal="cli")
    result = _export(other, source_observation_ids=[observation])
    assert set(result["rows"].values()) == {0}
    assert set(_export(other, data_subject_id="a")["rows"].values()) == {0}


def test_more_than_50000_rows_is_refused_before_any_row_is_read(new_project):
    project, _ = new_project
    observation = say(project, "big", "message 0")
    with connection.cursor() as cursor:
        # One observation holding the rest of the limit in messages: the count alone decides.
        cursor.execute(
            "INSERT INTO turn_message (observation_id, ordinal, role, content, group_ordinal, occurred_at, chunk_id)"
            " SELECT %s, g, 'user', 'm', g, now(), gen_random_uuid() FROM generate_series(1, %s) g",
            [observation, EXPORT_LIMIT - 2])
    assert sum(_export(project, data_subject_id="big")["rows"].values()) == EXPORT_LIMIT
    say(project, "big", "one more")
    with pytest.raises(DomainError) as info:
        _export(project, data_subject_id="big")
    assert (info.value.status, info.value.code) == (422, "export_too_large")
    # A source export of the small turn still works.
    small = rows("SELECT observation_id::text FROM observation WHERE scope = %s ORDER BY log_offset DESC LIMIT 1",
                 [project])[0][0]
    assert _export(project, source_observation_ids=[small])["rows"]["message"] == 1


@pytest.mark.parametrize("selector, code", [
    ({}, "no_subject"),
    ({"data_subject_id": ""}, "no_subject"),
    ({"data_subject_id": "a", "source_observation_ids": [str(uuid.uuid4())]}, "invalid_export"),
    ({"source_observation_ids": ["nope"]}, "invalid_export"),
])
def test_export_selectors_are_validated(new_project, selector, code):
    project, _ = new_project
    with pytest.raises(Invalid) as info:
        _export(project, **selector)
    assert info.value.code == code


def test_the_refusal_summary_counts_by_reason_and_predicate(new_project):
    project, _ = new_project
    say(project, "a", "I used to live in Amman.", minutes_ago=3)
    say(project, "b", "I used to live in Rome.", minutes_ago=2)
    say(project, "a", "I live in Paris.", minutes_ago=1)
    form(project)
    summary = refusal_summary(project=project, limit=100)
    assert summary[0] == {"reason": "not_current", "predicate": "lives_in", "count": 2}
    assert sum(item["count"] for item in summary) == one(
        "SELECT count(*) FROM rejected_claim WHERE scope = %s", [project])[0]
    assert len(refusal_summary(project=project, limit=1)) == 1

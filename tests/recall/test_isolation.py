"""Isolation (recall.md §3, §4, §6): a subject's recall never carries anything derived from another
subject's turns, and one project's token never sees another project's memory."""
import json

from django.db import connection

from governance import services as governance
from tests.conftest import unique_name
from tests.recall.conftest import bulk_edges, form, named_entities, observe_turn, recall_ok


def derived_from(project, observation_ids):
    """Every id and text derived from these observations: facts, entities only they produced, quotes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.fact_id::text, f.statement, ev.quote FROM fact f JOIN fact_evidence ev ON ev.fact_id = f.fact_id"
            " WHERE f.scope = %s AND ev.source_observation_id = ANY(%s::uuid[])", [project, observation_ids])
        facts = cursor.fetchall()
        cursor.execute(
            "SELECT e.entity_id::text, e.canonical_name FROM entity e WHERE e.scope = %s AND NOT EXISTS ("
            " SELECT 1 FROM projection_dependency d WHERE d.entity_ref = e.entity_id"
            " AND NOT d.source_observation_id = ANY(%s::uuid[]))", [project, observation_ids])
        entities = cursor.fetchall()
    return {value for row in facts + entities for value in row} | set(observation_ids)


def test_a_subject_never_sees_another_subjects_memory(project, auth):
    a = [observe_turn(project, "I live in Dublin. I work at Acme.", subject="subject-a").id]
    b = [observe_turn(project, "I live in Paris. I work at Acme.", subject="subject-b").id,
         observe_turn(project, "Bob works at Acme. Bob lives in Cork.", subject="subject-b").id]
    form(project)
    # Identical words said by both (a shared quote, the "speaker" label) are not B's to leak.
    b_only = derived_from(project, b) - derived_from(project, a)
    assert any(value == "Paris" for value in b_only) and any(value == "Bob" for value in b_only) and "Cork" in b_only

    for hops in (1, 2):
        bundle = recall_ok(auth, question="Who is in Paris, Dublin or Acme? Bob? Cork?", data_subject_id="subject-a",
                           hops=hops, source_roles=["user", "assistant", "system", "tool"])
        text = json.dumps(bundle, ensure_ascii=False)
        leaked = sorted(value for value in b_only if value in text)
        assert leaked == [], leaked
        assert "subject-a" not in text and "subject-b" not in text  # raw subject ids never appear
        assert {f["object"] for f in bundle["facts"]} == {"Dublin", "Acme"}
        assert {f["evidence"]["observation_id"] for f in bundle["facts"]} == set(a)
        assert {anchor["name"] for anchor in bundle["anchors"]} == {"speaker", "Dublin", "Acme"}

    # The same question without a subject sees both people (project-wide read).
    wide = recall_ok(auth, question="Acme", hops=2)
    assert {f["object"] for f in wide["facts"]} >= {"Acme", "Dublin", "Paris", "Cork"}


def test_subject_narrowing_applies_to_the_speaker_anchor(project, auth):
    observe_turn(project, "I live in Dublin.", subject="subject-a")
    observe_turn(project, "I live in Paris.", subject="subject-b")
    form(project)
    [fact] = recall_ok(auth, question="Where do I live?", data_subject_id="subject-b")["facts"]
    assert fact["object"] == "Paris"
    assert recall_ok(auth, question="Where do I live?", data_subject_id="nobody")["anchors"] == []


def test_another_projects_token_sees_nothing(project, auth):
    observe_turn(project, "I live in Dublin. I work at Acme.", subject="subject-a")
    form(project)
    assert len(recall_ok(auth, question="Dublin Acme")["facts"]) == 2

    other = unique_name()
    governance.create_project(name=other, principal="cli")
    _, token = governance.issue_credential(project=other, name="other", principal="cli")
    other_auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    for body in ({"question": "Dublin Acme"}, {"question": "Where do I live?", "data_subject_id": "subject-a"}):
        bundle = recall_ok(other_auth, **body, hops=2)
        assert bundle["anchors"] == [] and bundle["facts"] == []
        assert bundle["reach"]["named_nothing_known"] is True


def test_another_subjects_facts_never_take_a_place_under_the_cap(project, auth):
    observe_turn(project, "I work at Acme.", subject="subject-a")
    form(project)
    with connection.cursor() as cursor:
        cursor.execute("SELECT entity_id::text FROM entity WHERE scope = %s AND normalized_name = 'acme'", [project])
        acme = cursor.fetchone()[0]
    others = named_entities(project, [f"N{i}" for i in range(70)])
    # Seventy more recent facts about Acme, all from subject B's turns.
    bulk_edges(project, [(others[f"N{i}"], acme, -1000 - i) for i in range(70)], predicate="works_at",
               data_subject="subject-b")
    mine = recall_ok(auth, question="Acme", data_subject_id="subject-a")
    assert [(f["subject"], f["object"]) for f in mine["facts"]] == [("speaker", "Acme")]
    assert mine["truncated"] is False
    wide = recall_ok(auth, question="Acme")
    assert wide["truncated"] is True and len(wide["facts"]) == 64


def test_a_shared_entity_is_named_in_each_subjects_own_spelling(project, auth):
    # B names the company first, so the entity's canonical name is B's spelling.
    observe_turn(project, "I work at ACME Widgets.", subject="subject-b")
    observe_turn(project, "Bob works at ACME Widgets.", subject="subject-b")
    observe_turn(project, "I work at Acme widgets.", subject="subject-a")
    form(project)
    with connection.cursor() as cursor:
        cursor.execute("SELECT canonical_name FROM entity WHERE scope = %s AND normalized_name = 'acme widgets'",
                       [project])
        assert cursor.fetchone()[0] == "ACME Widgets"
    for hops in (1, 2):
        bundle = recall_ok(auth, question="Who works at acme widgets?", data_subject_id="subject-a", hops=hops)
        text = json.dumps(bundle, ensure_ascii=False)
        assert "ACME" not in text and "Bob" not in text
        assert [f["object"] for f in bundle["facts"]] == ["Acme widgets"]
        assert {a["name"] for a in bundle["anchors"]} == {"speaker", "Acme widgets"}
    own = recall_ok(auth, question="Who works at acme widgets?", data_subject_id="subject-b")
    assert {f["object"] for f in own["facts"]} == {"ACME Widgets"}
    wide = recall_ok(auth, question="acme widgets")
    assert {f["object"] for f in wide["facts"]} == {"ACME Widgets"}  # project-wide reads keep the canonical name

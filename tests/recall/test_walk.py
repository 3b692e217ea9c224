"""Anchoring and the walk (recall.md §3, §4, §6, §7): real formation, hops, paths, fanout caps, the hub,
co-derivation and the anchor limit."""
from django.db import connection

from tests.recall.conftest import (
    bulk_edges,
    form,
    named_entities,
    observe_turn,
    recall_error,
    recall_ok,
    write_fact,
)


def test_formed_turn_is_recalled_with_its_exact_span(project, auth):
    observe_turn(project, "I live in Dublin. I used to work at Acme.", subject="alice")
    stats = form(project)
    assert stats.turns_formed == 1 and stats.facts == 1
    bundle = recall_ok(auth, question="Where do I live?", data_subject_id="alice")
    [anchor] = bundle["anchors"]
    assert (anchor["name"], anchor["type"], anchor["matched"]) == ("speaker", "person", "speaker")
    [fact] = bundle["facts"]
    assert (fact["subject"], fact["predicate"], fact["object"]) == ("speaker", "lives_in", "Dublin")
    assert fact["evidence"]["quote"] == "I live in Dublin"
    assert (fact["evidence"]["byte_start"], fact["evidence"]["byte_end"]) == (0, 16)
    assert fact["evidence"]["context"] == "I live in Dublin. I used to work at Acme."
    assert fact["evidence"]["context_complete"] is True
    assert fact["anchored_on"] == anchor["entity_id"]
    assert bundle["reach"]["facts_per_anchor"] == {anchor["entity_id"]: 1}


def test_without_a_subject_i_anchors_nothing(project, auth):
    observe_turn(project, "I live in Dublin.", subject="alice")
    form(project)
    bundle = recall_ok(auth, question="Where do I live?")
    assert bundle["anchors"] == [] and bundle["facts"] == []
    assert bundle["reach"]["named_nothing_known"] is True
    # The named end still anchors project-wide, and shows the speaker end as "speaker".
    [fact] = recall_ok(auth, question="Who lives in Dublin?")["facts"]
    assert fact["subject"] == "speaker" and fact["object"] == "Dublin"


def test_co_derived_facts_share_message_and_subject(project, auth):
    observe_turn(project, "I live in Dublin. I work at Acme.", subject="alice")
    observe_turn(project, "I work at Globex.", subject="alice")
    form(project)
    facts = {f["object"]: f for f in recall_ok(auth, question="me", data_subject_id="alice")["facts"]}
    assert set(facts) == {"Dublin", "Acme", "Globex"}
    assert facts["Dublin"]["co_derived_with"] == [facts["Acme"]["fact_id"]]
    assert facts["Acme"]["co_derived_with"] == [facts["Dublin"]["fact_id"]]
    assert facts["Globex"]["co_derived_with"] == []


def test_anchor_matching_is_exact_on_the_normalized_key(project, auth):
    write_fact(project, content="The Dublin office uses Slack.", quote="The Dublin office uses Slack",
               predicate="uses", subject="the Dublin office", object="Slack")
    assert recall_ok(auth, question="our Dublin site")["anchors"] == []
    anchors = recall_ok(auth, question="What does THE  DUBLIN\u00a0office use?")["anchors"]
    assert [a["matched"] for a in anchors] == ["the dublin office"]


def test_anchor_display_order(project, auth):
    ids = named_entities(project, ["Beta", "Alpha", "Alpha Beta", "Zeta"])
    anchors = recall_ok(auth, question="zeta alpha beta")["anchors"]
    # Longest term first, then canonical name, then id.
    assert [a["name"] for a in anchors] == ["Alpha Beta", "Alpha", "Beta", "Zeta"]
    assert [a["entity_id"] for a in anchors] == [ids[n] for n in ["Alpha Beta", "Alpha", "Beta", "Zeta"]]
    assert recall_ok(auth, question="zeta alpha beta")["reach"] == {
        "terms": 6, "anchored": 4, "named_nothing_known": False, "facts_per_anchor": {}}


def test_two_hops_report_path_and_via_and_never_revisit(project, auth):
    e = named_entities(project, ["Ann", "Bo", "Cy", "Di"])
    ab, bc, cd, ca = bulk_edges(project, [(e["Ann"], e["Bo"], 4), (e["Bo"], e["Cy"], 3), (e["Cy"], e["Di"], 2),
                                          (e["Cy"], e["Ann"], 1)])
    one = recall_ok(auth, question="Ann")
    assert {f["fact_id"] for f in one["facts"]} == {ab, ca}
    assert all(f["hops"] == 1 and f["path"] == [] and f["via"] == [] for f in one["facts"])

    two = recall_ok(auth, question="Ann", hops=2)
    by_id = {f["fact_id"]: f for f in two["facts"]}
    # Ann→Bo and Cy→Ann at hop 1; Bo→Cy (from Bo) and Cy→Di (from Cy) at hop 2. Ann is never walked again.
    assert set(by_id) == {ab, ca, bc, cd}
    # Bo→Cy is two hops away both from Bo and from Cy: the route through the smaller entity id is kept.
    via_first = min(["Bo", "Cy"], key=lambda name: e[name])
    assert by_id[bc]["hops"] == 2 and by_id[bc]["path"] == ["Ann", via_first] and by_id[bc]["via"] == ["uses"]
    assert by_id[cd]["hops"] == 2 and by_id[cd]["path"] == ["Ann", "Cy"] and by_id[cd]["via"] == ["uses"]
    # A fact reached at hop 1 and again at hop 2 appears once, at its shortest route.
    assert by_id[ab]["hops"] == 1 and by_id[ca]["hops"] == 1
    assert [f["hops"] for f in two["facts"]] == sorted(f["hops"] for f in two["facts"])


def test_unresolved_end_is_returned_with_an_empty_name(project, auth):
    e = named_entities(project, ["Ann", "Bo"])
    dangling, = bulk_edges(project, [(e["Ann"], None, 2)])
    bo_ann, = bulk_edges(project, [(e["Bo"], e["Ann"], 1)])
    facts = recall_ok(auth, question="Ann", hops=2)["facts"]
    assert sorted((f["fact_id"], f["object"], f["hops"]) for f in facts) == sorted(
        [(dangling, "", 1), (bo_ann, "Ann", 1)])


def test_dedup_keeps_the_smallest_anchor_on_equal_hops(project, auth):
    e = named_entities(project, ["Ann", "Bo"])
    ab, = bulk_edges(project, [(e["Ann"], e["Bo"], 1)])
    [fact] = recall_ok(auth, question="Ann Bo")["facts"]
    assert fact["fact_id"] == ab and fact["anchored_on"] == min(e["Ann"], e["Bo"])


def test_final_order_is_hops_then_predicate_then_id(project, auth):
    e = named_entities(project, ["Hubby", "X1", "X2", "X3"])
    uses = bulk_edges(project, [(e["Hubby"], e["X1"], 1), (e["Hubby"], e["X2"], 2)], predicate="uses")
    knows = bulk_edges(project, [(e["Hubby"], e["X3"], 3)], predicate="knows")
    facts = recall_ok(auth, question="hubby")["facts"]
    assert [f["fact_id"] for f in facts] == knows + sorted(uses)


def test_anchor_at_the_cap_is_not_truncated_and_one_more_is(project, auth):
    names = ["Capped", "Over"] + [f"T{i}" for i in range(65)]
    e = named_entities(project, names)
    bulk_edges(project, [(e["Capped"], e[f"T{i}"], i) for i in range(64)])
    over = bulk_edges(project, [(e["Over"], e[f"T{i}"], i) for i in range(65)])
    at_cap = recall_ok(auth, question="capped")
    assert len(at_cap["facts"]) == 64 and at_cap["truncated"] is False
    past = recall_ok(auth, question="over")
    assert len(past["facts"]) == 64 and past["truncated"] is True
    # The cap keeps the most recently recorded: the oldest (65th) is dropped.
    assert {f["fact_id"] for f in past["facts"]} == set(over[:64])


def test_the_65th_row_is_not_walked_from(project, auth):
    names = ["Root"] + [f"B{i}" for i in range(65)] + [f"C{i}" for i in range(65)]
    e = named_entities(project, names)
    first = bulk_edges(project, [(e["Root"], e[f"B{i}"], 1000 + i) for i in range(65)])
    second = bulk_edges(project, [(e[f"B{i}"], e[f"C{i}"], i) for i in range(65)])
    bundle = recall_ok(auth, question="root", hops=2)
    ids = {f["fact_id"] for f in bundle["facts"]}
    assert bundle["truncated"] is True
    assert ids == set(first[:64]) | set(second[:64])
    assert first[64] not in ids and second[64] not in ids


def test_hub_with_10000_facts_returns_at_most_64_per_direction(project, auth):
    names = ["Hub"] + [f"N{i}" for i in range(10_000)]
    e = named_entities(project, names)
    outgoing = bulk_edges(project, [(e["Hub"], e[f"N{i}"], i) for i in range(10_000)])
    incoming = bulk_edges(project, [(e[f"N{i}"], e["Hub"], i) for i in range(100)], predicate="knows")
    bundle = recall_ok(auth, question="hub")
    ids = {f["fact_id"] for f in bundle["facts"]}
    assert bundle["truncated"] is True
    assert len(bundle["facts"]) == 128
    assert ids == set(outgoing[:64]) | set(incoming[:64])
    assert bundle["characters"] < bundle["controls"]["max_characters"]


def test_the_row_cap_keeps_200(project, auth):
    names = [f"A{i}" for i in range(4)] + [f"N{i}" for i in range(64)]
    e = named_entities(project, names)
    bulk_edges(project, [(e[f"A{a}"], e[f"N{i}"], i) for a in range(4) for i in range(51)])
    bundle = recall_ok(auth, question="a0 a1 a2 a3")
    assert len(bundle["facts"]) == 200 and bundle["truncated"] is True
    fits = recall_ok(auth, question="a0 a1 a2")
    assert len(fits["facts"]) == 153 and fits["truncated"] is False


def test_more_than_256_anchor_rows_refuses_the_recall(project, auth):
    words = [f"w{i}" for i in range(129)]  # 510 terms
    singles = words
    pairs = [f"{a} {b}" for a, b in zip(words, words[1:])]
    named_entities(project, singles + pairs[:127])  # 256 matches
    question = " ".join(words)
    assert recall_ok(auth, question=question)["reach"]["anchored"] == 256
    named_entities(project, [pairs[127]])  # 257
    assert recall_error(auth, {"question": question}) == "invalid_question"


def test_the_speaker_counts_toward_the_anchor_limit(project, auth):
    words = [f"w{i}" for i in range(129)]
    pairs = [f"{a} {b}" for a, b in zip(words, words[1:])]
    e = named_entities(project, words + pairs[:127])  # 256 named
    observation_id = observe_turn(project, "I live in Cork.", subject="sam").id
    with connection.cursor() as cursor:
        # Every named entity counts as one of sam's, and sam has a speaker entity.
        cursor.execute(
            "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
            " data_subject_id, pipeline_version, registered_at)"
            " SELECT %s, %s, 'entity', id::text, 'sam', 'v1', now() FROM unnest(%s::uuid[]) id",
            [project, observation_id, list(e.values())])
    question = " ".join(words)
    assert recall_ok(auth, question=question)["reach"]["anchored"] == 256
    form(project)  # creates sam's speaker entity
    assert recall_error(auth, {"question": question, "data_subject_id": "sam"}) == "invalid_question"

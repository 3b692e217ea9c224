"""entities/purge (governance.md §9, api.md §7.6): preview versus confirm, counts, kept source turns."""
import uuid

from .conftest import ledger, one, rows

KINDS = {"fact", "fact_evidence", "fact_history", "feedback", "entity_name_receipt", "entity"}


def _acme_world(api):
    alice = api.assert_record("Alice", "works_at", "Acme", data_subject_id="s1")
    bob = api.assert_record("Bob", "works_at", "ACME")  # project-wide turn, another spelling
    api.post("/feedback/record", {"record_id": alice["id"], "note": "Check this."})
    acme = one("SELECT entity_id::text FROM entity WHERE scope = %s AND normalized_name = 'acme'", [api.project])[0]
    return alice, bob, acme


def test_dry_run_reports_and_rolls_back(api):
    alice, bob, acme = _acme_world(api)
    status, body = api.post("/entities/purge", {"id": acme, "reason": "extraction mistake"})
    assert status == 200, body
    assert (body["entity_id"], body["canonical_name"], body["reason"], body["previewed"]) == (
        acme, "Acme", "extraction mistake", True)
    assert body["removed"] == {"fact": 2, "fact_evidence": 2, "fact_history": 0, "feedback": 1,
                               "entity_name_receipt": 2, "entity": 1}
    assert body["residual"] == dict.fromkeys(KINDS, 0)
    assert (body["contributing_subjects"], body["claims_from_unattributed_turns"], body["source_turns_kept"]) == (
        1, 1, 2)
    assert body["completed_at"].endswith("Z")
    # Nothing changed.
    assert rows("SELECT count(*) FROM fact WHERE fact_id IN (%s, %s)", [alice["id"], bob["id"]]) == [(2,)]
    assert rows("SELECT count(*) FROM entity WHERE entity_id = %s", [acme]) == [(1,)]
    assert rows("SELECT count(*) FROM memory_feedback WHERE scope = %s", [api.project]) == [(1,)]
    assert ledger(api.project, "entity.purge") == [("allowed", 0, api.credential_id, "credential")]


def test_confirmed_purge_removes_the_entity_and_its_facts_but_keeps_the_words(api):
    alice, bob, acme = _acme_world(api)
    status, body = api.post("/entities/purge", {"id": acme, "reason": "extraction mistake", "confirm": True})
    assert status == 200, body
    assert body["previewed"] is False
    assert sum(body["removed"].values()) == 8 and body["residual"] == dict.fromkeys(KINDS, 0)
    assert rows("SELECT count(*) FROM fact WHERE scope = %s", [api.project]) == [(0,)]
    assert rows("SELECT count(*) FROM entity WHERE entity_id = %s", [acme]) == [(0,)]
    assert rows("SELECT count(*) FROM projection_dependency WHERE scope = %s AND projection_kind IN"
                " ('fact', 'feedback')", [api.project]) == [(0,)]
    # The subjects Alice and Bob stay, and so do the source turns and their words.
    assert rows("SELECT count(*) FROM entity WHERE scope = %s", [api.project]) == [(2,)]
    assert rows("SELECT count(*) FROM turn_message m JOIN observation o ON o.observation_id = m.observation_id"
                " WHERE o.scope = %s", [api.project]) == [(2,)]
    assert rows("SELECT count(*) FROM erasure_request WHERE scope = %s", [api.project]) == [(0,)]
    assert ledger(api.project, "entity.purge") == [("allowed", 8, api.credential_id, "credential")]
    status, body = api.post("/entities/purge", {"id": acme, "reason": "again", "confirm": True})
    assert (status, body["error"]["code"]) == (404, "not_found")


def test_purging_a_superseding_value_leaves_the_earlier_fact_closed(api):
    paris = api.assert_record("Alice", "lives_in", "Paris", valid_from="2020-01-01T00:00:00Z")
    rome = api.assert_record("Alice", "lives_in", "Rome", valid_from="2021-01-01T00:00:00Z")
    assert one("SELECT superseded_by_id::text FROM fact WHERE fact_id = %s", [paris["id"]]) == (rome["id"],)
    rome_entity = one("SELECT object_entity_id::text FROM fact WHERE fact_id = %s", [rome["id"]])[0]
    status, body = api.post("/entities/purge", {"id": rome_entity, "reason": "wrong", "confirm": True})
    assert status == 200, body
    assert body["removed"]["fact"] == 1 and body["removed"]["fact_history"] == 0
    superseded_by, upper = one("SELECT superseded_by_id, upper(valid) FROM fact WHERE fact_id = %s", [paris["id"]])
    assert superseded_by is None and upper.year == 2021


def test_speaker_entities_unknown_ids_and_bad_requests_are_refused(api, other_api):
    record = api.assert_record("I", "lives_in", "Dublin", "I live in Dublin.", data_subject_id="sam")
    speaker = one("SELECT subject_entity_id::text FROM fact WHERE fact_id = %s", [record["id"]])[0]
    dublin = one("SELECT object_entity_id::text FROM fact WHERE fact_id = %s", [record["id"]])[0]
    status, body = api.post("/entities/purge", {"id": speaker, "reason": "no", "confirm": True})
    assert (status, body["error"]["code"]) == (400, "invalid_record_mutation")
    for request in ({"id": dublin}, {"id": dublin, "reason": " "}, {"id": "x", "reason": "r"},
                    {"id": dublin, "reason": "r" * 1025}):
        status, body = api.post("/entities/purge", request)
        assert (status, body["error"]["code"]) == (400, "invalid_record_mutation"), request
    status, body = api.post("/entities/purge", {"id": str(uuid.uuid4()), "reason": "r"})
    assert (status, body["error"]["code"]) == (404, "not_found")
    for confirm in (False, True):
        status, body = other_api.post("/entities/purge", {"id": dublin, "reason": "r", "confirm": confirm})
        assert (status, body["error"]["code"]) == (404, "not_found")
    assert rows("SELECT count(*) FROM entity WHERE scope = %s", [api.project]) == [(2,)]
    assert rows("SELECT count(*) FROM fact WHERE scope = %s", [api.project]) == [(1,)]
    assert {row[0] for row in ledger(api.project, "entity.purge")} == {"refused"}

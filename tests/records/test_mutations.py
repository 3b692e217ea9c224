"""records/retract and records/correct (governance.md §7.2–§7.3): version checks, bitemporal ranges
afterwards, retraction rows, the evidence-source bound, and the claim writer's retraction guard."""
import uuid
from datetime import timedelta

from formation import driver, ids
from formation.rules import RulesProposer
from memory import services

from .conftest import fact, ledger, one, rows


def _retract(api, record, version=None):
    return api.post("/records/retract", {"records": [{"id": record["id"],
                                                      "expected_version": version or record["version"]}]})


def test_retract_closes_knowledge_only_and_stores_a_retraction_per_source(api):
    record = api.assert_record("Alice", "works_at", "Acme", valid_from="2020-01-01T00:00:00Z")
    _, valid_before, known_before, *_ = fact(record["id"])
    status, body = _retract(api, record)
    assert status == 200, body
    [out] = body["records"]
    assert set(out) == {"id", "version", "operation_id", "principal_id", "retracted_at"}
    assert out["id"] == record["id"] and out["principal_id"] == api.credential_id
    version, valid, known, *_ = fact(record["id"])
    assert out["version"] == version != record["version"]
    assert valid == valid_before  # validity untouched
    assert known.lower == known_before.lower and known.upper is not None and known.upper > known.lower
    signature, operation, target_version, principal, retracted_at, source, ordinal = one(
        "SELECT claim_signature, operation_id::text, target_version::text, principal_id, retracted_at,"
        " source_observation_id::text, source_ordinal FROM record_retraction WHERE target_fact_id = %s",
        [record["id"]])
    assert bytes(signature) == ids.claim_signature("works_at", ("named", "alice"), ("named", "acme"))
    assert (operation, target_version, principal) == (out["operation_id"], record["version"], api.credential_id)
    assert (source, ordinal) == (record["source_observation_id"], 0)
    assert retracted_at == known.upper
    assert rows("SELECT count(*) FROM fact_evidence WHERE fact_id = %s", [record["id"]]) == [(1,)]
    assert ledger(api.project, "record.retract") == [("allowed", 1, api.credential_id, "credential")]


def test_retract_refuses_stale_versions_and_retracted_records(api):
    record = api.assert_record("Alice", "works_at", "Acme")
    status, body = _retract(api, record, version=str(uuid.uuid4()))
    assert (status, body["error"]["code"]) == (409, "record_conflict")
    assert fact(record["id"])[0] == record["version"]
    _, body = _retract(api, record)
    new_version = body["records"][0]["version"]
    for version in (record["version"], new_version):  # already retracted, whatever version is sent
        status, body = _retract(api, record, version=version)
        assert (status, body["error"]["code"]) == (409, "record_conflict")
    assert rows("SELECT count(*) FROM record_retraction WHERE target_fact_id = %s", [record["id"]]) == [(1,)]


def test_retract_batches_are_atomic_and_validated(api):
    a = api.assert_record("Alice", "works_at", "Acme")
    b = api.assert_record("Bob", "works_at", "Acme")
    status, body = api.post("/records/retract", {"records": [
        {"id": a["id"], "expected_version": a["version"]},
        {"id": b["id"], "expected_version": str(uuid.uuid4())}]})
    assert (status, body["error"]["code"]) == (409, "record_conflict")
    assert fact(a["id"])[2].upper is None  # the first item was not retracted either
    status, body = api.post("/records/retract", {"records": [
        {"id": a["id"], "expected_version": a["version"]}, {"id": a["id"], "expected_version": a["version"]}]})
    assert (status, body["error"]["code"]) == (400, "invalid_record_mutation")
    status, body = api.post("/records/retract", {"records": [{"id": str(uuid.uuid4()),
                                                              "expected_version": a["version"]}]})
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = api.post("/records/retract", {"records": [{"id": a["id"], "expected_version": "v1"}]})
    assert (status, body["error"]["code"]) == (400, "invalid_record_mutation")
    assert rows("SELECT count(*) FROM record_retraction WHERE scope = %s", [api.project]) == [(0,)]


def test_more_than_128_evidence_sources_is_413(api):
    record = api.assert_record("Alice", "works_at", "Acme", "Alice works at Acme.")
    # A record supported by 129 messages: the claim writer adds one, so extra support is written here.
    turn = services.observe(project=api.project, messages=[
        {"role": "user", "content": "Alice works at Acme.", "group_ordinal": i} for i in range(128)])
    rows("INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
         " byte_end, extractor_version) SELECT %s, %s, %s, g, 'Alice works at Acme.', 0, 20, 'rules/v1'"
         " FROM generate_series(0, 127) g RETURNING 1", [api.project, record["id"], turn.id])
    status, body = _retract(api, record)
    assert (status, body["error"]["code"]) == (413, "record_mutation_limit")
    assert fact(record["id"])[2].upper is None
    # 128 is still allowed.
    rows("DELETE FROM fact_evidence WHERE source_observation_id = %s AND source_ordinal = 127 RETURNING 1",
         [turn.id])
    status, body = _retract(api, record)
    assert status == 200, body
    assert rows("SELECT count(*) FROM record_retraction WHERE target_fact_id = %s", [record["id"]]) == [(128,)]


def test_correct_replaces_the_object_with_knowledge_starting_where_the_original_ends(api):
    original = api.assert_record("Alice", "lives_in", "Paris", valid_from="2020-01-01T00:00:00Z")
    status, body = api.post("/records/correct", {"records": [{
        "id": original["id"], "expected_version": original["version"], "object": "Rome",
        "statement": "Alice lives in Rome."}]})
    assert status == 200, body
    [out] = body["records"]
    assert set(out) == {"original_id", "id", "version", "source_observation_id"}
    assert out["original_id"] == original["id"] and out["id"] != original["id"]

    _, valid, known, subject, _, predicate, _ = fact(original["id"])
    assert valid.lower.year == 2020 and valid.upper is None  # backdating nothing: validity untouched
    t_end = known.upper
    assert t_end is not None
    version, new_valid, new_known, new_subject, new_object, new_predicate, statement = fact(out["id"])
    assert version == out["version"]
    assert (new_subject, new_predicate, statement) == (subject, predicate, "Alice lives in Rome.")
    assert one("SELECT canonical_name FROM entity WHERE entity_id = %s", [new_object]) == ("Rome",)
    assert new_known.lower == t_end and new_known.upper is None
    assert new_valid.lower == t_end  # valid_from defaults to now, the moment of the correction
    replacement = one("SELECT replacement_observation_id::text, replacement_fact_id::text FROM record_retraction"
                      " WHERE target_fact_id = %s", [original["id"]])
    assert replacement == (out["source_observation_id"], out["id"])
    assert one("SELECT fact_id::text, claim->>'object' FROM curated_claim WHERE source_observation_id = %s",
               [out["source_observation_id"]]) == (out["id"], "Rome")
    assert one("SELECT kind, formed_at IS NOT NULL FROM observation WHERE observation_id = %s",
               [out["source_observation_id"]]) == ("curated", True)
    assert ledger(api.project, "record.correct") == [("allowed", 1, api.credential_id, "credential")]
    # The original is retracted now: correcting it again is a conflict.
    status, body = api.post("/records/correct", {"records": [{
        "id": original["id"], "expected_version": fact(original["id"])[0], "object": "Oslo", "statement": "x"}]})
    assert (status, body["error"]["code"]) == (409, "record_conflict")


def test_correct_with_a_stale_version_changes_nothing(api):
    original = api.assert_record("Alice", "lives_in", "Paris")
    status, body = api.post("/records/correct", {"records": [{
        "id": original["id"], "expected_version": str(uuid.uuid4()), "object": "Rome", "statement": "Rome."}]})
    assert (status, body["error"]["code"]) == (409, "record_conflict")
    assert fact(original["id"])[0] == original["version"]
    assert rows("SELECT count(*) FROM observation WHERE scope = %s", [api.project]) == [(1,)]
    assert rows("SELECT count(*) FROM record_retraction WHERE scope = %s", [api.project]) == [(0,)]


def test_correct_backdated_valid_from_keeps_what_was_known(api):
    original = api.assert_record("Alice", "lives_in", "Paris", valid_from="2020-01-01T00:00:00Z")
    status, body = api.post("/records/correct", {"records": [{
        "id": original["id"], "expected_version": original["version"], "object": "Rome",
        "statement": "Alice has lived in Rome since 2019.", "valid_from": "2019-06-01T00:00:00Z"}]})
    assert status == 200, body
    _, _, known, *_ = fact(original["id"])
    _, new_valid, new_known, *_ = fact(body["records"][0]["id"])
    assert new_valid.lower.year == 2019 and new_known.lower == known.upper


def test_correct_keeps_a_speaker_subject(api):
    original = api.assert_record("I", "lives_in", "Dublin", "I live in Dublin.", data_subject_id="sam")
    status, body = api.post("/records/correct", {"records": [{
        "id": original["id"], "expected_version": original["version"], "object": "Cork",
        "statement": "I live in Cork."}]})
    assert status == 200, body
    new = body["records"][0]
    assert fact(new["id"])[3] == fact(original["id"])[3]
    assert one("SELECT data_subject_id FROM observation WHERE observation_id = %s",
               [new["source_observation_id"]]) == ("sam",)


def test_foreign_records_are_not_found(api, other_api):
    record = api.assert_record("Alice", "works_at", "Acme")
    target = {"id": record["id"], "expected_version": record["version"]}
    status, body = other_api.post("/records/retract", {"records": [target]})
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = other_api.post("/records/correct", {"records": [{**target, "object": "X", "statement": "X."}]})
    assert (status, body["error"]["code"]) == (404, "not_found")
    assert fact(record["id"])[0] == record["version"]


def _observe_and_form(project, content, subject="s"):
    turn = services.observe(project=project, data_subject_id=subject,
                            messages=[{"role": "user", "content": content, "group_ordinal": 0}])
    stats = driver.drain(project, proposer=RulesProposer())
    assert stats.turns_formed == 1
    return turn.id


def _facts_from(observation_id):
    return rows("SELECT f.fact_id::text, upper_inf(f.known) FROM fact f JOIN fact_evidence e"
                " ON e.fact_id = f.fact_id WHERE e.source_observation_id = %s", [observation_id])


def test_a_retracted_claim_does_not_reform_when_its_message_is_formed_again(api):
    turn = _observe_and_form(api.project, "I live in Dublin.")
    [(fact_id, open_)] = _facts_from(turn)
    assert open_
    status, _ = _retract(api, {"id": fact_id, "version": fact(fact_id)[0]})
    assert status == 200
    version_after = fact(fact_id)[0]

    stats = driver.DrainStats()
    assert driver.form_turn(api.project, turn, RulesProposer(), stats=stats)
    assert stats.facts == 0  # withdrawn, not "already recorded"
    assert _facts_from(turn) == [(fact_id, False)]
    assert fact(fact_id)[0] == version_after

    # Even with the record itself gone (its entity purged), the guard keeps the claim from coming back.
    dublin, = one("SELECT object_entity_id::text FROM fact WHERE fact_id = %s", [fact_id])
    status, body = api.post("/entities/purge", {"id": dublin, "reason": "wrong", "confirm": True})
    assert status == 200, body
    assert _facts_from(turn) == []
    stats = driver.DrainStats()
    driver.form_turn(api.project, turn, RulesProposer(), stats=stats)
    assert stats.facts == 0
    assert _facts_from(turn) == []


def test_an_unretracted_claim_is_still_recreated_after_a_purge(api):
    # The control for the test above: without a retraction, re-forming writes the claim again.
    turn = _observe_and_form(api.project, "I live in Dublin.")
    [(fact_id, _)] = _facts_from(turn)
    dublin, = one("SELECT object_entity_id::text FROM fact WHERE fact_id = %s", [fact_id])
    api.post("/entities/purge", {"id": dublin, "reason": "wrong", "confirm": True})
    stats = driver.DrainStats()
    driver.form_turn(api.project, turn, RulesProposer(), stats=stats)
    assert stats.facts == 1
    assert _facts_from(turn) == [(fact_id, True)]


def test_retraction_of_a_formed_fact_uses_the_speaker_signature(api):
    turn = _observe_and_form(api.project, "I live in Dublin.", subject="s")
    [(fact_id, _)] = _facts_from(turn)
    _retract(api, {"id": fact_id, "version": fact(fact_id)[0]})
    signature, = one("SELECT claim_signature FROM record_retraction WHERE target_fact_id = %s", [fact_id])
    assert bytes(signature) == ids.claim_signature("lives_in", ("speaker", "s"), ("named", "dublin"))
    assert ids.fact_id(api.project, turn, 0, bytes(signature)) == uuid.UUID(fact_id)


def test_retracted_knowledge_never_ends_before_it_began(api):
    # A correction starts the replacement's knowledge at t_end; retracting that at once still leaves
    # a non-empty range.
    original = api.assert_record("Alice", "lives_in", "Paris")
    _, body = api.post("/records/correct", {"records": [{
        "id": original["id"], "expected_version": original["version"], "object": "Rome", "statement": "Rome."}]})
    new = body["records"][0]
    status, _ = _retract(api, new)
    assert status == 200
    _, _, known, *_ = fact(new["id"])
    assert known.upper - known.lower >= timedelta(microseconds=1)

"""records/assert (governance.md §7.1, api.md §5.2, §7.4): curated observations, the claim writer inside
the batch transaction, idempotency keys, and all-or-nothing batches."""
import uuid

import pytest
from django.db import connection, transaction

from core.errors import RateLimited
from memory import services

from .conftest import fact, ledger, one, rows


def _item(subject="Alice", predicate="works_at", obj="Acme", **extra):
    item = {"idempotency_key": str(uuid.uuid4()), "subject": subject, "predicate": predicate, "object": obj,
            "statement": f"{subject} {predicate} {obj}."}
    item.update(extra)
    return item


def _stored_formed(project):
    found = rows("SELECT log_offset, formed_offset FROM watermark WHERE scope = %s", [project])
    return found[0] if found else (None, None)


def test_new_assertion_is_a_born_formed_curated_observation_with_authored_evidence(api):
    statement = "Alice works at Ácme Ltd."
    status, body = api.post("/records/assert", {"records": [_item(statement=statement, obj="Ácme Ltd")]})
    assert status == 200, body
    [record] = body["records"]
    assert set(record) == {"id", "version", "source_observation_id", "replayed"}
    assert record["replayed"] is False

    kind, formed_at, pin, role, offset = one(
        "SELECT kind, formed_at, extractor_version, source_role, log_offset FROM observation"
        " WHERE scope = %s AND observation_id = %s", [api.project, record["source_observation_id"]])
    assert (kind, pin, role, offset) == ("curated", "curated/v1", "user", 0)
    assert formed_at is not None
    assert rows("SELECT ordinal, role, content FROM turn_message WHERE observation_id = %s",
                [record["source_observation_id"]]) == [(0, "user", statement)]

    version, valid, known, subject_entity, object_entity, predicate, stored_statement = fact(record["id"])
    assert version == record["version"]
    assert (predicate, stored_statement) == ("works_at", statement)
    assert valid.upper is None and known.upper is None
    quote, start, end, extractor, authored_by, confidence = one(
        "SELECT e.quote, e.byte_start, e.byte_end, e.extractor_version, e.authored_by, f.confidence"
        " FROM fact_evidence e JOIN fact f ON f.fact_id = e.fact_id WHERE e.fact_id = %s", [record["id"]])
    assert (quote, start, end) == (statement, 0, len(statement.encode()))
    assert (extractor, authored_by, confidence) == ("curated/v1", api.credential_id, 0)
    claim = one("SELECT fact_id::text, principal_id, claim->>'object', claim->>'predicate', claim->>'statement'"
                " FROM curated_claim WHERE source_observation_id = %s", [record["source_observation_id"]])
    assert claim == (record["id"], api.credential_id, "Ácme Ltd", "works_at", statement)
    assert _stored_formed(api.project) == (0, 0)
    assert ledger(api.project, "record.assert") == [("allowed", 1, api.credential_id, "credential")]


def test_replay_returns_the_original_and_stores_nothing(api):
    item = _item()
    _, first = api.post("/records/assert", {"records": [item]})
    status, again = api.post("/records/assert", {"records": [item]})
    assert status == 200
    original = first["records"][0]
    assert again["records"] == [{**original, "replayed": True}]
    assert rows("SELECT count(*) FROM observation WHERE scope = %s", [api.project]) == [(1,)]
    assert _stored_formed(api.project) == (0, 0)


def test_changed_item_under_the_same_key_is_an_idempotency_conflict(api):
    item = _item()
    api.post("/records/assert", {"records": [item]})
    for change in ({"object": "Globex"}, {"statement": "Changed."}, {"data_subject_id": "s1"},
                   {"valid_from": "2020-01-01T00:00:00Z"}):
        status, body = api.post("/records/assert", {"records": [{**item, **change}]})
        assert (status, body["error"]["code"]) == (409, "idempotency_conflict"), change
    assert rows("SELECT count(*) FROM observation WHERE scope = %s", [api.project]) == [(1,)]
    assert [row[0] for row in ledger(api.project, "record.assert")] == ["allowed"] + ["refused"] * 4


def test_replay_after_the_source_was_erased_is_a_conflict_forever(api):
    item = _item()
    _, body = api.post("/records/assert", {"records": [item]})
    source = body["records"][0]["source_observation_id"]
    # As an erasure would: the fact goes with its only source, and the triggers turn the retry row
    # into a tombstone when the observation goes.
    rows("DELETE FROM fact WHERE fact_id = %s RETURNING 1", [body["records"][0]["id"]])
    rows("DELETE FROM observation WHERE observation_id = %s RETURNING 1", [source])
    assert rows("SELECT observation_id, request_digest FROM observation_retry WHERE scope = %s",
                [api.project]) == [(None, None)]
    for _ in range(2):
        status, body = api.post("/records/assert", {"records": [item]})
        assert (status, body["error"]["code"]) == (409, "idempotency_conflict")


def test_a_speaker_subject_needs_a_data_subject_and_binds_to_the_speaker_entity(api):
    status, body = api.post("/records/assert", {"records": [_item(subject="I", predicate="lives_in", obj="Dublin")]})
    assert (status, body["error"]["code"]) == (400, "invalid_record_mutation")
    record = api.assert_record("I", "lives_in", "Dublin", "I live in Dublin.", data_subject_id="sam")
    kind, speaker, data_subject = one(
        "SELECT e.identity_kind, e.speaker_subject_id, f.data_subject_id FROM fact f"
        " JOIN entity e ON e.entity_id = f.subject_entity_id WHERE f.fact_id = %s", [record["id"]])
    assert (kind, speaker, data_subject) == ("speaker", "sam", "sam")


def test_route_validation_refuses_the_whole_batch(api):
    good = _item()
    repeated = _item()
    cases = [
        [good, _item(predicate="lives_near")],  # not in the vocabulary
        [good, _item(subject="it")],  # unresolvable subject
        [good, _item(subject="   ")],  # blank
        [good, _item(statement="a\x00b")],  # NUL
        [good, _item(obj="x" * 1025)],  # oversized object
        [good, _item(idempotency_key="not-a-uuid")],
        [repeated, {**_item(), "idempotency_key": repeated["idempotency_key"].upper()}],  # repeated key
        [_item() for _ in range(21)],
        [],
    ]
    for records in cases:
        status, body = api.post("/records/assert", {"records": records})
        assert (status, body["error"]["code"]) == (400, "invalid_record_mutation"), records[-1:]
    assert rows("SELECT count(*) FROM observation WHERE scope = %s", [api.project]) == [(0,)]
    assert rows("SELECT count(*) FROM fact WHERE scope = %s", [api.project]) == [(0,)]


def test_a_value_that_cannot_be_placed_is_a_record_conflict_and_a_later_one_supersedes(api):
    paris = api.assert_record("Alice", "lives_in", "Paris", valid_from="2020-01-01T00:00:00Z")
    body = api.assert_record("Alice", "lives_in", "Rome", valid_from="2019-01-01T00:00:00Z", expect=409)
    assert body["error"]["code"] == "record_conflict"
    rome = api.assert_record("Alice", "lives_in", "Rome", valid_from="2021-01-01T00:00:00Z")
    _, valid, known, *_ = fact(paris["id"])
    assert valid.upper.year == 2021 and known.upper is None
    superseded_by, = one("SELECT superseded_by_id::text FROM fact WHERE fact_id = %s", [paris["id"]])
    assert superseded_by == rome["id"]


def test_a_batch_is_all_or_nothing(api):
    first = _item(predicate="lives_in", obj="Paris", valid_from="2020-01-01T00:00:00Z")
    clash = _item(predicate="lives_in", obj="Rome", valid_from="2019-01-01T00:00:00Z")
    status, body = api.post("/records/assert", {"records": [first, clash]})
    assert (status, body["error"]["code"]) == (409, "record_conflict")
    for table in ("observation", "fact", "entity", "observation_retry", "curated_claim"):
        assert rows(f"SELECT count(*) FROM {table} WHERE scope = %s", [api.project]) == [(0,)], table
    assert _stored_formed(api.project) == (None, None)
    assert ledger(api.project, "record.assert") == [("refused", 0, api.credential_id, "credential")]
    # The first item's key was never used, so it is new now.
    status, body = api.post("/records/assert", {"records": [first]})
    assert status == 200 and body["records"][0]["replayed"] is False
    assert one("SELECT log_offset FROM observation WHERE scope = %s", [api.project]) == (0,)


def test_many_items_in_request_order_with_magnitude_and_dense_offsets(api):
    items = [_item(subject=f"Person {i}") for i in range(3)]
    status, body = api.post("/records/assert", {"records": items})
    assert status == 200
    offsets = [one("SELECT log_offset FROM observation WHERE observation_id = %s", [r["source_observation_id"]])[0]
               for r in body["records"]]
    assert offsets == [0, 1, 2]
    names = [one("SELECT e.canonical_name FROM fact f JOIN entity e ON e.entity_id = f.subject_entity_id"
                 " WHERE f.fact_id = %s", [r["id"]])[0] for r in body["records"]]
    assert names == ["Person 0", "Person 1", "Person 2"]
    assert ledger(api.project, "record.assert") == [("allowed", 3, api.credential_id, "credential")]


def test_an_assertion_never_moves_formed_past_an_older_unformed_turn(api):
    services.observe(project=api.project, data_subject_id="sam",
                     messages=[{"role": "user", "content": "I live in Dublin.", "group_ordinal": 0}])
    api.assert_record("Alice", "works_at", "Acme")
    assert _stored_formed(api.project) == (1, None)


def test_read_only_credentials_cannot_assert(api):
    from governance import services as governance

    _, token = governance.issue_credential(project=api.project, name="ro", access="read_only", principal="cli")
    api.token = token
    status, body = api.post("/records/assert", {"records": [_item()]})
    assert (status, body["error"]["code"]) == (403, "forbidden")
    assert rows("SELECT count(*) FROM observation WHERE scope = %s", [api.project]) == [(0,)]


def test_assertions_take_no_reservation_and_work_with_the_backlog_full(api):
    rows("UPDATE ingestion_budget SET pending = max_pending RETURNING 1")
    record = api.assert_record("Alice", "works_at", "Acme")
    with connection.cursor() as cursor:
        # Fire the deferred reservation trigger now, as the commit would.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert rows("SELECT 1 FROM ingestion_reservation WHERE observation_id = %s",
                [record["source_observation_id"]]) == []
    # The control: a turn under the same budget is refused.
    with pytest.raises(RateLimited), transaction.atomic():
        services.observe(project=api.project, messages=[{"role": "user", "content": "Hi.", "group_ordinal": 0}])

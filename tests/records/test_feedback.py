"""feedback/record, feedback/list and feedback/promote (governance.md §8, api.md §7.5)."""
import uuid

from .conftest import fact, ledger, one, rows


def _watermark(project):
    return rows("SELECT log_offset, formed_offset FROM watermark WHERE scope = %s", [project])


def test_feedback_lifecycle_with_a_proposed_object(api):
    record = api.assert_record("Alice", "lives_in", "Paris", data_subject_id="alice")
    watermark = _watermark(api.project)
    status, item = api.post("/feedback/record", {"record_id": record["id"], "note": "Alice moved to Rome.",
                                                 "proposed_object": "Rome"})
    assert status == 200, item
    assert set(item) == {"id", "record_id", "note", "proposed_object", "recorded_by", "recorded_at"}
    assert (item["record_id"], item["recorded_by"], item["proposed_object"]) == (
        record["id"], api.credential_id, "Rome")
    # Recording changes nothing a recall could see.
    assert fact(record["id"])[0] == record["version"]
    assert _watermark(api.project) == watermark
    # It is registered wherever the record is, so the same erasures reach it.
    assert one("SELECT count(*), min(data_subject_id) FROM projection_dependency WHERE projection_kind = 'feedback'"
               " AND feedback_ref = %s", [item["id"]]) == (1, "alice")

    status, page = api.post("/feedback/list", {"open_only": True})
    assert status == 200 and page == {"feedback": [item]}

    status, body = api.post("/feedback/promote", {"id": item["id"], "expected_version": str(uuid.uuid4())})
    assert (status, body["error"]["code"]) == (409, "record_conflict")
    assert api.post("/feedback/list", {"open_only": True})[1]["feedback"] == [item]

    status, promoted = api.post("/feedback/promote", {"id": item["id"], "expected_version": record["version"]})
    assert status == 200, promoted
    assert set(promoted) == {"id", "record_id", "operation", "replacement_record_id", "version", "promoted_at"}
    assert (promoted["id"], promoted["record_id"], promoted["operation"]) == (item["id"], record["id"],
                                                                               "record.correct")
    replacement = promoted["replacement_record_id"]
    version, _, known, _, obj, predicate, statement = fact(replacement)
    assert promoted["version"] == version
    assert (predicate, statement, known.upper) == ("lives_in", "Alice moved to Rome.", None)
    assert one("SELECT canonical_name FROM entity WHERE entity_id = %s", [obj]) == ("Rome",)
    assert fact(record["id"])[2].upper == known.lower
    # The new record is credited to the promoter.
    assert one("SELECT authored_by FROM fact_evidence WHERE fact_id = %s", [replacement]) == (api.credential_id,)

    assert api.post("/feedback/list", {"open_only": True})[1] == {"feedback": []}
    _, page = api.post("/feedback/list", {"record_id": record["id"]})
    [listed] = page["feedback"]
    assert (listed["promoted_by"], listed["promoted_at"], listed["replacement_record_id"]) == (
        api.credential_id, promoted["promoted_at"], replacement)

    status, body = api.post("/feedback/promote", {"id": item["id"], "expected_version": promoted["version"]})
    assert (status, body["error"]["code"]) == (409, "feedback_already_promoted")
    assert ledger(api.project, "feedback.record") == [("allowed", 1, api.credential_id, "credential")]
    assert [row[:2] for row in ledger(api.project, "feedback.promote")] == [
        ("refused", 0), ("allowed", 1), ("refused", 0)]
    assert ledger(api.project, "record.correct") == [("allowed", 1, api.credential_id, "credential")]


def test_promoting_feedback_without_an_object_retracts(api):
    record = api.assert_record("Alice", "works_at", "Acme")
    _, item = api.post("/feedback/record", {"record_id": record["id"], "note": "Not true."})
    assert "proposed_object" not in item
    status, promoted = api.post("/feedback/promote", {"id": item["id"], "expected_version": record["version"]})
    assert status == 200, promoted
    assert promoted["operation"] == "record.retract" and "replacement_record_id" not in promoted
    version, _, known, *_ = fact(record["id"])
    assert promoted["version"] == version and known.upper is not None
    assert rows("SELECT count(*) FROM record_retraction WHERE target_fact_id = %s", [record["id"]]) == [(1,)]
    assert one("SELECT promotion_fact_id FROM memory_feedback WHERE feedback_id = %s", [item["id"]]) == (None,)
    assert ledger(api.project, "record.retract") == [("allowed", 1, api.credential_id, "credential")]


def test_feedback_on_any_status_and_paging_newest_first(api):
    record = api.assert_record("Alice", "works_at", "Acme")
    api.post("/records/retract", {"records": [{"id": record["id"], "expected_version": record["version"]}]})
    made = []
    for n in range(3):
        status, item = api.post("/feedback/record", {"record_id": record["id"], "note": f"note {n}"})
        assert status == 200  # a retracted record still takes feedback
        made.append(item["id"])
    status, first = api.post("/feedback/list", {"limit": 2})
    assert status == 200 and len(first["feedback"]) == 2 and set(first["next"]) == {"recorded_at", "id"}
    _, second = api.post("/feedback/list", {"limit": 2, "after": first["next"]})
    assert "next" not in second
    seen = [f["id"] for f in first["feedback"] + second["feedback"]]
    assert sorted(seen) == sorted(made) and len(set(seen)) == 3
    keys = [(f["recorded_at"], f["id"]) for f in first["feedback"] + second["feedback"]]
    assert keys == sorted(keys, reverse=True)
    assert ledger(api.project, "feedback.list")[-2:] == [("allowed", 2, api.credential_id, "credential"),
                                                         ("allowed", 1, api.credential_id, "credential")]


def test_feedback_validation(api):
    record = api.assert_record("Alice", "works_at", "Acme")
    for body in ({"record_id": record["id"], "note": "  "}, {"record_id": record["id"]},
                 {"record_id": "nope", "note": "x"}, {"record_id": record["id"], "note": "x", "proposed_object": ""},
                 {"record_id": record["id"], "note": "x" * 16385}):
        status, answer = api.post("/feedback/record", body)
        assert (status, answer["error"]["code"]) == (400, "invalid_feedback"), body
    for body in ({"limit": 0}, {"limit": 101}, {"record_id": "x"}, {"after": {"id": str(uuid.uuid4())}}):
        status, answer = api.post("/feedback/list", body)
        assert (status, answer["error"]["code"]) == (400, "invalid_feedback"), body
    status, answer = api.post("/feedback/promote", {"id": str(uuid.uuid4())})
    assert (status, answer["error"]["code"]) == (400, "invalid_feedback")
    assert rows("SELECT count(*) FROM memory_feedback WHERE scope = %s", [api.project]) == [(0,)]


def test_feedback_across_projects_is_not_found(api, other_api):
    record = api.assert_record("Alice", "works_at", "Acme")
    _, item = api.post("/feedback/record", {"record_id": record["id"], "note": "Check this."})
    status, body = other_api.post("/feedback/record", {"record_id": record["id"], "note": "Mine now."})
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = other_api.post("/feedback/promote", {"id": item["id"], "expected_version": record["version"]})
    assert (status, body["error"]["code"]) == (404, "not_found")
    assert other_api.post("/feedback/list", {"record_id": record["id"]})[1] == {"feedback": []}
    assert other_api.post("/feedback/list", {})[1] == {"feedback": []}
    assert fact(record["id"])[0] == record["version"]
    status, body = api.post("/feedback/promote", {"id": str(uuid.uuid4()), "expected_version": record["version"]})
    assert (status, body["error"]["code"]) == (404, "not_found")


def test_read_only_credentials_may_list_but_not_record(api):
    from governance import services as governance

    record = api.assert_record("Alice", "works_at", "Acme")
    _, token = governance.issue_credential(project=api.project, name="ro", access="read_only", principal="cli")
    api.token = token
    assert api.post("/feedback/list", {})[0] == 200
    status, body = api.post("/feedback/record", {"record_id": record["id"], "note": "x"})
    assert (status, body["error"]["code"]) == (403, "forbidden")

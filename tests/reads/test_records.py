"""POST /v1/records/list and /v1/records/history: fact-id keyset pages, previews, status, history cursors."""
import uuid

import pytest

from .conftest import at, facts_of, form, insert_retraction, ledger, observe, ok, one, post, query, refused

pytestmark = pytest.mark.django_db
LIST = "/v1/records/list"
HISTORY = "/v1/records/history"


def insert_fact(project, statement="A plain statement.", *, predicate="prefers", cardinality="many"):
    """A fact row written directly, for list shapes that formation cannot produce (long statements)."""
    fact_id = str(uuid.uuid4())
    query(
        "INSERT INTO fact (fact_id, scope, subject_entity_id, object_entity_id, predicate, cardinality, statement,"
        " valid, known, confidence, source_role, data_subject_id, recorded_at, version)"
        " VALUES (%s, %s, NULL, NULL, %s, %s, %s, tstzrange('2026-01-01', NULL), tstzrange(now(), NULL), 0,"
        " 'assistant', NULL, now(), gen_random_uuid())",
        [fact_id, project, predicate, cardinality, statement])
    return fact_id


def test_list_shape_and_status_values(project, auth):
    receipt = observe(project, [("user", "I live in Dublin.")], subject="alice", occurred_at=at(0))
    form(project)
    (formed,) = facts_of(project)
    closed_validity, closed_knowledge, retracted = (insert_fact(project) for _ in range(3))
    query("UPDATE fact SET valid = tstzrange('2026-01-01', '2026-01-02') WHERE fact_id = %s", [closed_validity])
    query("UPDATE fact SET known = tstzrange(lower(known), lower(known) + interval '1 hour') WHERE fact_id = %s",
          [closed_knowledge])
    insert_retraction(project, retracted, receipt.id)
    body = ok(auth, LIST, {})
    assert list(body) == ["records"]
    by_id = {r["id"]: r for r in body["records"]}
    assert [r["id"] for r in body["records"]] == sorted(by_id)
    assert {by_id[f]["status"] for f in by_id} == {"current", "validity_closed", "knowledge_closed", "retracted"}
    assert (by_id[formed]["status"], by_id[closed_validity]["status"], by_id[closed_knowledge]["status"],
            by_id[retracted]["status"]) == ("current", "validity_closed", "knowledge_closed", "retracted")
    record = by_id[formed]
    version, subject_entity, object_entity, recorded = one(
        "SELECT version::text, subject_entity_id::text, object_entity_id::text, recorded_at FROM fact"
        " WHERE fact_id = %s", [formed])
    assert list(record) == ["version", "id", "subject_entity_id", "object_entity_id", "predicate",
                            "statement_preview", "statement_bytes", "preview_truncated", "source_role",
                            "recorded_at", "status"]
    assert record["version"] == version
    assert (record["subject_entity_id"], record["object_entity_id"]) == (subject_entity, object_entity)
    assert (record["predicate"], record["statement_preview"], record["statement_bytes"],
            record["preview_truncated"], record["source_role"]) == \
        ("lives_in", "I live in Dublin.", 17, False, "user")
    assert record["recorded_at"].endswith("Z")
    assert by_id[retracted]["subject_entity_id"] is None and by_id[retracted]["object_entity_id"] is None
    assert ledger(project, "record.list") == [("allowed", 4)]


def test_preview_is_512_characters_of_a_multibyte_statement(project, auth):
    long_id = insert_fact(project, "é" * 600)
    exact_id = insert_fact(project, "ü" * 512)
    by_id = {r["id"]: r for r in ok(auth, LIST, {})["records"]}
    assert by_id[long_id]["statement_preview"] == "é" * 512
    assert (by_id[long_id]["statement_bytes"], by_id[long_id]["preview_truncated"]) == (1200, True)
    assert (by_id[exact_id]["statement_preview"], by_id[exact_id]["preview_truncated"]) == ("ü" * 512, False)


def test_pages_by_fact_id_with_limit_plus_one(project, auth):
    ids = sorted(insert_fact(project) for _ in range(5))
    first = ok(auth, LIST, {"limit": 2})
    assert [r["id"] for r in first["records"]] == ids[:2] and first["next"] == {"id": ids[1]}
    second = ok(auth, LIST, {"limit": 2, "after": first["next"]})
    assert [r["id"] for r in second["records"]] == ids[2:4] and second["next"] == {"id": ids[3]}
    last = ok(auth, LIST, {"limit": 2, "after": second["next"]})
    assert [r["id"] for r in last["records"]] == ids[4:] and "next" not in last
    exact = ok(auth, LIST, {"limit": 5})
    assert len(exact["records"]) == 5 and "next" not in exact


def test_cursor_at_a_deleted_fact_still_pages(project, auth):
    ids = sorted(insert_fact(project) for _ in range(4))
    page = ok(auth, LIST, {"limit": 2})
    query("DELETE FROM fact WHERE fact_id = %s", [page["next"]["id"]])
    rest = ok(auth, LIST, {"after": page["next"]})
    assert [r["id"] for r in rest["records"]] == ids[2:]
    # A cursor id that never existed pages from its position too.
    assert [r["id"] for r in ok(auth, LIST, {"after": {"id": "00000000-0000-0000-0000-000000000000"}})["records"]] \
        == [i for i in ids if i != page["next"]["id"]]


def test_subject_filter_goes_through_registrations_once(project, auth):
    observe(project, [("user", "I live in Dublin.")], subject="alice", occurred_at=at(0))
    observe(project, [("user", "I live in Cork.")], subject="bob", occurred_at=at(1))
    observe(project, [("user", "I like tea.")], subject="alice", occurred_at=at(2))
    form(project)
    insert_fact(project)  # project-wide, registered for no one
    alice_facts = sorted(str(r[0]) for r in query(
        "SELECT fact_id FROM fact WHERE scope = %s AND data_subject_id = 'alice'", [project]))
    assert len(alice_facts) == 2
    # A second registration of the same fact by another of alice's turns must not repeat it.
    extra = observe(project, [("user", "again")], subject="alice", occurred_at=at(3))
    query("INSERT INTO projection_dependency (scope, source_observation_id, projection_kind, projection_id,"
          " data_subject_id, pipeline_version) VALUES (%s, %s, 'fact', %s, 'alice', 'v1')", [project, extra.id, alice_facts[0]])
    assert [r["id"] for r in ok(auth, LIST, {"data_subject_id": "alice"})["records"]] == alice_facts
    assert len(ok(auth, LIST, {"data_subject_id": "bob"})["records"]) == 1
    assert ok(auth, LIST, {"data_subject_id": "nobody"}) == {"records": []}
    assert len(ok(auth, LIST, {})["records"]) == 4


def test_list_never_shows_another_project(project, auth, other):
    insert_fact(project)
    _, other_auth = other
    assert ok(other_auth, LIST, {}) == {"records": []}


@pytest.mark.parametrize("body", [
    {"limit": 0}, {"limit": 101}, {"limit": -5}, {"data_subject_id": ""}, {"data_subject_id": "  \t"},
    {"data_subject_id": "a\u0000b"}, {"after": {}}, {"after": {"id": "x"}}, {"after": {"id": uuid.uuid4().hex}},
])
def test_bad_list_pages_are_invalid_record_page(auth, body):
    assert refused(auth, LIST, body) == "invalid_record_page"


@pytest.mark.parametrize("body", [{"after": "x"}, {"after": {"id": 1}}, {"limit": "5"}, {"cursor": {}}])
def test_list_type_errors_are_invalid_body(auth, body):
    assert refused(auth, LIST, body) == "invalid_body"


def superseded(project):
    observe(project, [("user", "I live in Dublin.")], subject="alice", occurred_at=at(0))
    later = observe(project, [("user", "I live in Cork.")], subject="alice", occurred_at=at(10))
    form(project)
    old = str(one("SELECT fact_id FROM fact WHERE scope = %s AND NOT upper_inf(valid)", [project])[0])
    return old, later


def test_history_of_a_superseded_fact(project, auth):
    old, later = superseded(project)
    body = ok(auth, HISTORY, {"id": old})
    assert list(body) == ["version", "id", "current", "previous"]
    assert body["current"]["valid"]["until"] == "2026-01-05T09:10:00Z"
    assert body["current"]["known"]["until"] is None
    (previous,) = body["previous"]
    history_id, known_until = one("SELECT history_id::text, upper(known) FROM fact_history WHERE fact_id = %s", [old])
    assert previous["history_id"] == history_id
    assert previous["ended_by_observation_id"] == later.id
    assert previous["valid"]["until"] is None and previous["known"]["until"] is not None
    assert ledger(project, "record.history") == [("allowed", 2)]
    current = str(one("SELECT fact_id FROM fact WHERE scope = %s AND upper_inf(valid)", [project])[0])
    assert ok(auth, HISTORY, {"id": current})["previous"] == []


def _with_history(project, n):
    """A fact with n archived intervals, one per day, their knowledge closed at known day i."""
    observe(project, [("user", "I live in Dublin.")], subject="alice", occurred_at=at(0))
    form(project)
    (fact_id,) = facts_of(project)
    source = one("SELECT source_observation_id::text FROM fact_evidence WHERE fact_id = %s", [fact_id])[0]
    for i in range(n):
        query("INSERT INTO fact_history (history_id, scope, fact_id, valid, known, source_observation_id)"
              " VALUES (gen_random_uuid(), %s, %s, tstzrange('2025-01-01', NULL),"
              " tstzrange(%s::timestamptz, %s::timestamptz + interval '1 day'), %s)",
              [project, fact_id, f"2025-02-{i + 1:02d}T00:00:00.5Z", f"2025-02-{i + 1:02d}T00:00:00.5Z", source])
    return fact_id


def test_history_pages_newest_first_with_before_cursor(project, auth):
    fact_id = _with_history(project, 5)
    expected = [str(r[0]) for r in query(
        "SELECT history_id FROM fact_history WHERE fact_id = %s ORDER BY upper(known) DESC, history_id DESC",
        [fact_id])]
    first = ok(auth, HISTORY, {"id": fact_id, "limit": 2})
    assert [p["history_id"] for p in first["previous"]] == expected[:2]
    assert first["next"] == {"known_until": "2025-02-05T00:00:00.5Z", "history_id": expected[1]}
    second = ok(auth, HISTORY, {"id": fact_id, "limit": 2, "before": first["next"]})
    assert [p["history_id"] for p in second["previous"]] == expected[2:4]
    third = ok(auth, HISTORY, {"id": fact_id, "limit": 2, "before": second["next"]})
    assert [p["history_id"] for p in third["previous"]] == expected[4:] and "next" not in third
    assert ledger(project, "record.history") == [("allowed", 3), ("allowed", 3), ("allowed", 2)]


def test_history_cursor_at_a_deleted_row_still_pages(project, auth):
    fact_id = _with_history(project, 4)
    first = ok(auth, HISTORY, {"id": fact_id, "limit": 1})
    query("DELETE FROM fact_history WHERE history_id = %s", [first["next"]["history_id"]])
    rest = ok(auth, HISTORY, {"id": fact_id, "before": first["next"]})
    assert len(rest["previous"]) == 3
    assert all(p["known"]["until"] < first["next"]["known_until"] for p in rest["previous"])


def test_history_shows_retraction(project, auth):
    old, later = superseded(project)
    operation_id = insert_retraction(project, old, later.id)
    body = ok(auth, HISTORY, {"id": old})
    assert list(body)[:3] == ["version", "retraction", "id"]
    assert body["retraction"]["operation_id"] == operation_id


def test_history_unknown_and_foreign_are_the_same_404(project, auth, other):
    old, _ = superseded(project)
    _, other_auth = other
    foreign = post(other_auth, HISTORY, {"id": old})
    unknown = post(other_auth, HISTORY, {"id": str(uuid.uuid4())})
    assert foreign.status_code == unknown.status_code == 404 and foreign.content == unknown.content


@pytest.mark.parametrize("body", [
    {}, {"id": "x"}, {"id": str(uuid.uuid4()), "limit": 0}, {"id": str(uuid.uuid4()), "limit": 101},
    {"id": str(uuid.uuid4()), "before": {}},
    {"id": str(uuid.uuid4()), "before": {"known_until": "2026-01-01T00:00:00Z"}},
    {"id": str(uuid.uuid4()), "before": {"history_id": str(uuid.uuid4())}},
    {"id": str(uuid.uuid4()), "before": {"known_until": "2026-01-01T00:00:00Z", "history_id": "nope"}},
])
def test_bad_history_requests_are_invalid_record_page(auth, body):
    assert refused(auth, HISTORY, body) == "invalid_record_page"


def test_history_cursor_time_must_be_rfc3339(auth):
    body = {"id": str(uuid.uuid4()), "before": {"known_until": "yesterday", "history_id": str(uuid.uuid4())}}
    assert refused(auth, HISTORY, body) == "invalid_body"

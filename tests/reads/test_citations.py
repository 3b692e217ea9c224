"""POST /v1/citations/resolve: the record, its status and retraction, and keyset pages of re-verified evidence."""
import uuid

import pytest

from memory.selectors import CITATION_PAGE_BYTES

from .conftest import (
    at,
    facts_of,
    form,
    insert_evidence,
    insert_retraction,
    ledger,
    observe,
    ok,
    one,
    post,
    query,
    refused,
)

pytestmark = pytest.mark.django_db
ROUTE = "/v1/citations/resolve"


def dublin(project):
    receipt = observe(project, [("user", "Hello. I live in Dublin. Thanks for asking about it.")], subject="alice",
                      occurred_at=at(0))
    form(project)
    (fact_id,) = facts_of(project)
    return fact_id, receipt


def test_resolves_a_formed_fact_with_exact_shape(project, auth):
    fact_id, receipt = dublin(project)
    body = ok(auth, ROUTE, {"id": fact_id.upper()})
    assert list(body) == ["version", "id", "scope", "subject_entity_id", "object_entity_id", "predicate",
                          "statement", "confidence", "source_role", "recorded_at", "valid", "known", "status",
                          "evidence"]
    assert body["id"] == fact_id and body["scope"] == project
    assert (body["predicate"], body["status"], body["source_role"], body["confidence"]) == \
        ("lives_in", "current", "user", 0)
    assert body["valid"] == {"from": "2026-01-05T09:00:00Z", "until": None, "from_inclusive": True,
                             "until_inclusive": False}
    assert body["known"]["until"] is None and body["recorded_at"] == body["known"]["from"]
    subject_entity, object_entity = one(
        "SELECT subject_entity_id::text, object_entity_id::text FROM fact WHERE fact_id = %s", [fact_id])
    assert (body["subject_entity_id"], body["object_entity_id"]) == (subject_entity, object_entity)
    (ev,) = body["evidence"]
    assert ev == {
        "source_observation_id": receipt.id, "source_ordinal": 0, "log_offset": receipt.log_offset, "role": "user",
        "occurred_at": "2026-01-05T09:00:00Z", "quote": "I live in Dublin", "byte_start": 7, "byte_end": 23,
        "extractor_version": "rules/v1", "context": "Hello. I live in Dublin. Thanks for asking about it.",
        "context_byte_start": 0, "context_byte_end": 52, "context_complete": True,
    }
    assert ledger(project, "citation.resolve") == [("allowed", 1)]


def test_curated_evidence_names_its_author(project, auth):
    fact_id, _ = dublin(project)
    curated = observe(project, [("user", "Alice lives in Dublin.")], subject="alice", occurred_at=at(1))
    insert_evidence(project, fact_id, curated.id, "Dublin", 15, version="curated/v1", authored_by="cred-42")
    by_source = {e["source_observation_id"]: e for e in ok(auth, ROUTE, {"id": fact_id})["evidence"]}
    item = by_source[curated.id]
    assert list(item)[:2] == ["authored_by", "source_observation_id"]
    assert (item["authored_by"], item["extractor_version"], item["quote"]) == ("cred-42", "curated/v1", "Dublin")
    assert len([e for e in by_source.values() if "authored_by" in e]) == 1


def test_context_window_is_cut_to_whole_words_and_multibyte_offsets(project, auth):
    pad = "wörd " * 60  # 6 bytes a word: the 160-byte window falls inside a word on both sides
    content = pad + "I live in Dublin. " + pad
    observe(project, [("user", content)], subject="alice", occurred_at=at(0))
    form(project)
    (fact_id,) = facts_of(project)
    (ev,) = ok(auth, ROUTE, {"id": fact_id})["evidence"]
    raw = content.encode()
    assert ev["byte_start"] == raw.index(b"I live")
    assert ev["context_complete"] is False
    context = ev["context"].encode()
    assert raw[ev["context_byte_start"]:ev["context_byte_end"]] == context
    assert ev["context_byte_start"] >= ev["byte_start"] - 160 and ev["context_byte_end"] <= ev["byte_end"] + 160
    assert ev["context"].startswith("wörd ") and ev["context"].endswith("wörd")


def test_status_values_and_retraction_object(project, auth):
    fact_id, receipt = dublin(project)
    assert ok(auth, ROUTE, {"id": fact_id})["status"] == "current"
    query("UPDATE fact SET valid = tstzrange(lower(valid), '2026-01-06T00:00:00Z') WHERE fact_id = %s", [fact_id])
    assert ok(auth, ROUTE, {"id": fact_id})["status"] == "validity_closed"
    query("UPDATE fact SET known = tstzrange(lower(known), lower(known) + interval '1 hour') WHERE fact_id = %s",
          [fact_id])
    body = ok(auth, ROUTE, {"id": fact_id})
    assert body["status"] == "knowledge_closed" and "retraction" not in body
    operation_id = insert_retraction(project, fact_id, receipt.id)
    body = ok(auth, ROUTE, {"id": fact_id})
    assert body["status"] == "retracted"
    assert list(body)[:3] == ["version", "retraction", "id"]
    assert body["retraction"] == {"operation_id": operation_id, "principal_id": "cred-1",
                                  "retracted_at": "2026-02-01T10:00:00Z"}


def test_retraction_is_the_first_rule_even_while_knowledge_is_open(project, auth):
    fact_id, receipt = dublin(project)
    replacement = observe(project, [("user", "I live in Cork.")], subject="alice", occurred_at=at(5))
    replacement_fact = str(uuid.uuid4())
    insert_retraction(project, fact_id, receipt.id, replacement=(replacement.id, replacement_fact))
    body = ok(auth, ROUTE, {"id": fact_id})
    assert body["status"] == "retracted"
    assert body["retraction"]["replacement_source_observation_id"] == replacement.id
    assert body["retraction"]["replacement_record_id"] == replacement_fact


def test_superseded_fact_names_its_successor(project, auth):
    observe(project, [("user", "I live in Dublin.")], subject="alice", occurred_at=at(0))
    later = observe(project, [("user", "I live in Cork.")], subject="alice", occurred_at=at(10))
    form(project)
    old, new = (str(r[0]) for r in query(
        "SELECT fact_id FROM fact WHERE scope = %s ORDER BY lower(valid)", [project]))
    body = ok(auth, ROUTE, {"id": old})
    assert body["status"] == "validity_closed"
    assert (body["superseded_by"], body["supersession_source_observation_id"]) == (new, later.id)
    assert body["valid"]["until"] == "2026-01-05T09:10:00Z"
    current = ok(auth, ROUTE, {"id": new})
    assert "superseded_by" not in current and "supersession_source_observation_id" not in current


def _repeated(project, n):
    """A fact with n evidence rows, all the word Dublin in one message."""
    fact_id, receipt = dublin(project)
    words = observe(project, [("user", " ".join(["Dublin"] * n))], subject="alice", occurred_at=at(1))
    for i in range(n):
        insert_evidence(project, fact_id, words.id, "Dublin", i * 7)
    return fact_id, receipt, words


def test_keyset_pages_fetch_limit_plus_one(project, auth):
    fact_id, first, words = _repeated(project, 5)
    expected = sorted([(first.id, 0, 7)] + [(words.id, 0, i * 7) for i in range(5)])
    seen, after, pages = [], None, 0
    while True:
        body = ok(auth, ROUTE, {"id": fact_id, "limit": 2, **({"after": after} if after else {})})
        pages += 1
        seen += [(e["source_observation_id"], e["source_ordinal"], e["byte_start"]) for e in body["evidence"]]
        if "next" not in body:
            break
        after = body["next"]
        assert after == {"source_observation_id": seen[-1][0], "source_ordinal": seen[-1][1],
                         "byte_start": seen[-1][2]}
    assert seen == expected and pages == 3
    # Exactly `limit` rows left: the last full page has no next.
    body = ok(auth, ROUTE, {"id": fact_id, "limit": 6})
    assert len(body["evidence"]) == 6 and "next" not in body
    assert len(ok(auth, ROUTE, {"id": fact_id})["evidence"]) == 6  # default limit 8


def test_cursor_at_a_deleted_row_still_pages(project, auth):
    fact_id, first, words = _repeated(project, 4)
    body = ok(auth, ROUTE, {"id": fact_id, "limit": 2})
    cursor = body["next"]
    query("DELETE FROM fact_evidence WHERE fact_id = %s AND source_observation_id = %s AND byte_start = %s",
          [fact_id, cursor["source_observation_id"], cursor["byte_start"]])
    rest = ok(auth, ROUTE, {"id": fact_id, "after": cursor, "limit": 32})["evidence"]
    keys = [(e["source_observation_id"], e["byte_start"]) for e in rest]
    assert keys == sorted(keys) and len(keys) == 5 - 2
    assert all((k[0], 0, k[1]) > (cursor["source_observation_id"], 0, cursor["byte_start"]) for k in keys)


def test_page_stops_before_the_byte_cap(project, auth):
    fact_id, _ = dublin(project)
    long_word = "x" * 60_000
    for i in range(4):
        big = observe(project, [("user", long_word)], subject="alice", occurred_at=at(2 + i))
        insert_evidence(project, fact_id, big.id, long_word, 0)
    # Quote and whole-message context cost 120,000 B for each big row; the Dublin row costs little.
    costs = [120_000 if quote == long_word else len(quote) + 52 for (quote,) in query(
        "SELECT quote FROM fact_evidence WHERE fact_id = %s ORDER BY source_observation_id, source_ordinal,"
        " byte_start", [fact_id])]
    fits, spent = 0, 0
    while spent + costs[fits] <= CITATION_PAGE_BYTES:
        spent += costs[fits]
        fits += 1
    body = ok(auth, ROUTE, {"id": fact_id, "limit": 32})
    assert len(body["evidence"]) == fits and fits in (2, 3) and "next" in body
    assert sum(len(e["quote"].encode()) + len(e["context"].encode()) for e in body["evidence"]) == spent
    nxt = ok(auth, ROUTE, {"id": fact_id, "limit": 32, "after": body["next"]})
    assert len(nxt["evidence"]) == 5 - fits and "next" not in nxt


def test_unknown_and_foreign_ids_are_the_same_404(project, auth, other):
    fact_id, _ = dublin(project)
    _, other_auth = other
    foreign = post(other_auth, ROUTE, {"id": fact_id})
    unknown = post(other_auth, ROUTE, {"id": str(uuid.uuid4())})
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.content == unknown.content
    assert foreign.json()["error"]["code"] == "not_found"


def test_expired_fact_is_not_found(project, auth):
    fact_id, _ = dublin(project)
    query("UPDATE fact SET retention_until = now() - interval '1 second' WHERE fact_id = %s", [fact_id])
    assert refused(auth, ROUTE, {"id": fact_id}, 404) == "not_found"


GOOD_AFTER = {"source_observation_id": str(uuid.uuid4()), "source_ordinal": 0, "byte_start": 0}


@pytest.mark.parametrize("body", [
    {},
    {"id": None},
    {"id": ""},
    {"id": "not-a-uuid"},
    {"id": "{" + str(uuid.uuid4()) + "}"},
    {"id": uuid.uuid4().hex},
    {"id": "urn:uuid:" + str(uuid.uuid4())},
    {"id": str(uuid.uuid4()), "limit": 0},
    {"id": str(uuid.uuid4()), "limit": -1},
    {"id": str(uuid.uuid4()), "limit": 33},
    {"id": str(uuid.uuid4()), "after": {}},
    {"id": str(uuid.uuid4()), "after": {**GOOD_AFTER, "source_observation_id": "x"}},
    {"id": str(uuid.uuid4()), "after": {"source_ordinal": 0, "byte_start": 0}},
    {"id": str(uuid.uuid4()), "after": {"source_observation_id": str(uuid.uuid4()), "byte_start": 0}},
    {"id": str(uuid.uuid4()), "after": {**GOOD_AFTER, "source_ordinal": -1}},
    {"id": str(uuid.uuid4()), "after": {**GOOD_AFTER, "byte_start": -1}},
    {"id": str(uuid.uuid4()), "after": {**GOOD_AFTER, "byte_start": 2**31}},
])
def test_bad_requests_are_invalid_citation(auth, body, project):
    assert refused(auth, ROUTE, body) == "invalid_citation"
    assert ledger(project, "citation.resolve") == [("refused", 0)]


@pytest.mark.parametrize("body", [
    {"id": 5}, {"id": str(uuid.uuid4()), "limit": "2"}, {"id": str(uuid.uuid4()), "limit": 2.0},
    {"id": str(uuid.uuid4()), "after": {**GOOD_AFTER, "extra": 1}}, {"id": str(uuid.uuid4()), "after": []},
    {"id": str(uuid.uuid4()), "Limit": 2},
])
def test_type_and_field_errors_are_invalid_body(auth, body):
    assert refused(auth, ROUTE, body) == "invalid_body"

"""POST /v1/contexts: the newest 8 turns verbatim, older stretches as segments, cut from the oldest end."""
import pytest

from formation.compaction import ExtractiveSummariser, compact_project
from memory.selectors import freshness

from .conftest import at, formed_turns, ledger, observe, ok, query, refused

pytestmark = pytest.mark.django_db
ROUTE = "/v1/contexts"


def cost(i):
    return len("user") + len(f"Note {i} is here. Extra words {i}.") + len("assistant") + len(f"Reply {i}.")


def turn(receipt, i):
    return {"log_offset": receipt.log_offset, "occurred_at": at(i).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "messages": [{"role": "user", "content": f"Note {i} is here. Extra words {i}."},
                         {"role": "assistant", "content": f"Reply {i}."}]}


def test_short_history_is_all_verbatim(project, auth):
    receipts = formed_turns(project, "alice", 5)
    body = ok(auth, ROUTE, {"data_subject_id": "alice"})
    assert list(body) == ["segments", "turns", "watermark", "characters", "truncated"]
    assert body["segments"] == []
    assert body["turns"] == [turn(r, i) for i, r in enumerate(receipts)]
    assert body["characters"] == sum(cost(i) for i in range(5)) and body["truncated"] is False
    assert body["watermark"] == freshness(project=project).as_dict()
    assert set(body["watermark"]) == {"scope", "stored", "formed", "parked"}
    assert ledger(project, "context.assemble") == [("allowed", 5)]


def test_only_the_subjects_formed_turns(project, auth):
    formed = formed_turns(project, "alice", 2)
    observe(project, [("user", "unformed")], subject="alice", occurred_at=at(50))
    parked = observe(project, [("user", "parked")], subject="alice", occurred_at=at(51))
    query("UPDATE observation SET formation_attempts = 1, parked_at = now() WHERE observation_id = %s", [parked.id])
    formed_turns(project, "bob", 2, start=60)
    formed_turns(project, "Alice", 1, start=70)  # subjects compare exactly
    body = ok(auth, ROUTE, {"data_subject_id": "alice"})
    assert [t["log_offset"] for t in body["turns"]] == [r.log_offset for r in formed]


def test_unknown_subject_gets_an_empty_context_with_the_watermark(project, auth):
    formed_turns(project, "alice", 3)
    body = ok(auth, ROUTE, {"data_subject_id": "nobody"})
    assert body == {"segments": [], "turns": [], "watermark": freshness(project=project).as_dict(),
                    "characters": 0, "truncated": False}
    assert body["watermark"]["stored"] == 2


@pytest.fixture
def compacted(project):
    """20 formed turns of alice, compacted: one level-1 segment over turns 0-7."""
    receipts = formed_turns(project, "alice", 20)
    assert compact_project(project=project, summariser=ExtractiveSummariser()) == 1
    (segment,) = query("SELECT segment_id::text, summary FROM segment WHERE scope = %s", [project])
    return receipts, segment


def test_segments_stand_for_older_turns(project, auth, compacted):
    receipts, (segment_id, summary) = compacted
    body = ok(auth, ROUTE, {"data_subject_id": "alice"})
    assert body["segments"] == [{"segment_id": segment_id, "level": 1, "from_offset": receipts[0].log_offset,
                                 "to_offset": receipts[7].log_offset, "covered": 8, "summary": summary}]
    # Turns 8-11 are older than the newest 8 but no segment covers them yet: they stay verbatim.
    assert body["turns"] == [turn(r, i) for i, r in enumerate(receipts) if i >= 8]
    assert body["characters"] == len(summary) + sum(cost(i) for i in range(8, 20))
    assert body["truncated"] is False
    assert ledger(project, "context.assemble") == [("allowed", 13)]


def test_budget_cuts_from_the_oldest_end(project, auth, compacted):
    receipts, (_, summary) = compacted
    newest_nine = sum(cost(i) for i in range(11, 20))
    body = ok(auth, ROUTE, {"data_subject_id": "alice", "max_characters": newest_nine + cost(10) - 1})
    assert [t["log_offset"] for t in body["turns"]] == [r.log_offset for r in receipts[11:]]
    assert (body["segments"], body["characters"], body["truncated"]) == ([], newest_nine, True)
    # Everything but the oldest item (the segment) fits: only the segment is cut.
    everything = len(summary) + sum(cost(i) for i in range(8, 20))
    body = ok(auth, ROUTE, {"data_subject_id": "alice", "max_characters": everything - 1})
    assert body["segments"] == [] and len(body["turns"]) == 12 and body["truncated"] is True
    body = ok(auth, ROUTE, {"data_subject_id": "alice", "max_characters": everything})
    assert len(body["segments"]) == 1 and body["truncated"] is False
    # The newest turn alone does not fit: nothing is returned, and that is a truncation.
    body = ok(auth, ROUTE, {"data_subject_id": "alice", "max_characters": cost(19) - 1})
    assert (body["segments"], body["turns"], body["characters"], body["truncated"]) == ([], [], 0, True)


def test_highest_level_segment_wins(project, auth):
    receipts = formed_turns(project, "alice", 72)
    summariser = ExtractiveSummariser()
    while compact_project(project=project, summariser=summariser):
        pass
    body = ok(auth, ROUTE, {"data_subject_id": "alice"})
    assert [(s["level"], s["covered"]) for s in body["segments"]] == [(2, 64)]
    assert [t["log_offset"] for t in body["turns"]] == [r.log_offset for r in receipts[64:]]


@pytest.mark.parametrize("body", [
    {}, {"data_subject_id": None}, {"data_subject_id": ""}, {"data_subject_id": " \u3000 "},
    {"data_subject_id": "a\u0000"}, {"data_subject_id": "alice", "max_characters": 0},
    {"data_subject_id": "alice", "max_characters": -1}, {"data_subject_id": "alice", "max_characters": 16_001},
])
def test_bad_requests_are_invalid_context(auth, body, project):
    assert refused(auth, ROUTE, body) == "invalid_context"
    assert ledger(project, "context.assemble") == [("refused", 0)]


@pytest.mark.parametrize("body", [
    {"data_subject_id": 7}, {"data_subject_id": "alice", "max_characters": "10"},
    {"data_subject_id": "alice", "Max_characters": 10}, {"data_subject_id": "alice", "project": "x"},
])
def test_type_and_field_errors_are_invalid_body(auth, body):
    assert refused(auth, ROUTE, body) == "invalid_body"


def test_read_only_credentials_may_call_every_inspection_route(project):
    from governance import services

    _, token = services.issue_credential(project=project, name="ro", access="read_only", principal="cli")
    read_only = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    formed_turns(project, "alice", 1)
    assert len(ok(read_only, ROUTE, {"data_subject_id": "alice"})["turns"]) == 1
    for route, code in [("/v1/citations/resolve", "invalid_citation"), ("/v1/messages/get", "invalid_message_window"),
                        ("/v1/records/history", "invalid_record_page"), ("/v1/entities/get", "invalid_entity_page")]:
        assert refused(read_only, route, {}) == code
    assert ok(read_only, "/v1/records/list", {}) == {"records": []}
    assert ok(read_only, "/v1/entities/list", {}) == {"entities": []}

"""POST /v1/messages/get: byte windows over one stored message, whole characters only, bound to a digest."""
import hashlib
import uuid

import pytest

from .conftest import at, chunk_of, ledger, observe, ok, post, refused

pytestmark = pytest.mark.django_db
ROUTE = "/v1/messages/get"
CONTENT = "héllo wörld 日本語 🎉 end"  # 1-, 2-, 3- and 4-byte characters
RAW = CONTENT.encode()
DIGEST = hashlib.sha256(RAW).hexdigest()


@pytest.fixture
def message(project):
    receipt = observe(project, [("system", "first"), ("assistant", CONTENT)], subject="alice", occurred_at=at(3))
    return receipt, chunk_of(receipt.id, 1)


def test_whole_message_in_one_window(auth, message, project):
    receipt, chunk = message
    body = ok(auth, ROUTE, {"chunk_id": chunk.upper()})
    assert body == {
        "chunk_id": chunk, "source_id": receipt.id, "ordinal": 1, "role": "assistant",
        "occurred_at": "2026-01-05T09:03:00Z", "content_digest": DIGEST, "message_bytes": len(RAW),
        "byte_start": 0, "byte_end": len(RAW), "text": CONTENT, "complete": True,
    }
    assert ledger(project, "message.get") == [("allowed", 1)]


def test_small_windows_never_split_a_character_and_walk_the_message(auth, message):
    _, chunk = message
    pieces, start, windows = [], 0, 0
    while True:
        body = {"chunk_id": chunk, "byte_start": start, "byte_limit": 4}
        if start:
            body["expected_digest"] = DIGEST
        window = ok(auth, ROUTE, body)
        windows += 1
        assert window["byte_start"] == start
        assert 0 < window["byte_end"] - start <= 4
        assert RAW[start:window["byte_end"]].decode() == window["text"]
        assert window["complete"] is False
        pieces.append(window["text"])
        if "next_byte_start" not in window:
            assert window["byte_end"] == len(RAW)
            break
        assert window["next_byte_start"] == window["byte_end"] < len(RAW)
        start = window["next_byte_start"]
    assert "".join(pieces) == CONTENT and windows > len(RAW) // 4


def test_window_end_moves_back_to_a_character_boundary(auth, message):
    _, chunk = message
    start = RAW.index("日".encode())
    # 5 bytes from 日 would end inside 本 (3 bytes each): the window keeps 日 alone.
    window = ok(auth, ROUTE, {"chunk_id": chunk, "byte_start": start, "byte_limit": 5, "expected_digest": DIGEST})
    assert (window["text"], window["byte_end"], window["next_byte_start"]) == ("日", start + 3, start + 3)
    emoji = RAW.index("🎉".encode())
    window = ok(auth, ROUTE, {"chunk_id": chunk, "byte_start": emoji, "byte_limit": 4, "expected_digest": DIGEST})
    assert window["text"] == "🎉"


def test_start_at_the_end_is_an_empty_final_window(auth, message):
    _, chunk = message
    window = ok(auth, ROUTE, {"chunk_id": chunk, "byte_start": len(RAW), "expected_digest": DIGEST})
    assert (window["text"], window["byte_end"], window["complete"]) == ("", len(RAW), False)
    assert "next_byte_start" not in window


@pytest.mark.parametrize("where", ["inside é", "inside 日", "inside 🎉"])
def test_start_inside_a_character_is_refused(auth, message, where):
    _, chunk = message
    char = where.split()[-1]
    start = RAW.index(char.encode()) + 1
    body = {"chunk_id": chunk, "byte_start": start, "expected_digest": DIGEST}
    assert refused(auth, ROUTE, body) == "invalid_message_window"


def test_start_past_the_end_is_refused(auth, message):
    _, chunk = message
    assert refused(auth, ROUTE, {"chunk_id": chunk, "byte_start": len(RAW) + 1, "expected_digest": DIGEST}) \
        == "invalid_message_window"


def test_digest_mismatch_is_source_changed(auth, message, project):
    _, chunk = message
    wrong = hashlib.sha256(b"other").hexdigest()
    assert refused(auth, ROUTE, {"chunk_id": chunk, "byte_start": 2, "expected_digest": wrong}, 409) \
        == "source_changed"
    assert refused(auth, ROUTE, {"chunk_id": chunk, "expected_digest": wrong}, 409) == "source_changed"
    # The right digest on a first window is accepted too.
    assert ok(auth, ROUTE, {"chunk_id": chunk, "expected_digest": DIGEST})["complete"] is True
    assert [outcome for outcome, _ in ledger(project, "message.get")] == ["refused", "refused", "allowed"]


def test_unknown_and_foreign_chunks_are_the_same_404(auth, message, other):
    _, chunk = message
    _, other_auth = other
    foreign = post(other_auth, ROUTE, {"chunk_id": chunk})
    unknown = post(other_auth, ROUTE, {"chunk_id": str(uuid.uuid4())})
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.content == unknown.content


CHUNK = str(uuid.uuid4())


@pytest.mark.parametrize("body", [
    {},
    {"chunk_id": None},
    {"chunk_id": "nope"},
    {"chunk_id": "00000000-0000-0000-0000-000000000000"},
    {"chunk_id": "{" + CHUNK + "}"},
    {"chunk_id": CHUNK, "byte_start": -1},
    {"chunk_id": CHUNK, "byte_start": 65_537, "expected_digest": DIGEST},
    {"chunk_id": CHUNK, "byte_limit": 3},
    {"chunk_id": CHUNK, "byte_limit": 0},
    {"chunk_id": CHUNK, "byte_limit": 4097},
    {"chunk_id": CHUNK, "byte_start": 1},
    {"chunk_id": CHUNK, "byte_start": 1, "expected_digest": ""},
    {"chunk_id": CHUNK, "expected_digest": DIGEST.upper()},
    {"chunk_id": CHUNK, "expected_digest": DIGEST[:-1]},
    {"chunk_id": CHUNK, "expected_digest": "g" * 64},
])
def test_bad_windows_are_invalid_message_window(auth, body):
    assert refused(auth, ROUTE, body) == "invalid_message_window"


def test_wrong_types_are_invalid_body(auth):
    assert refused(auth, ROUTE, {"chunk_id": CHUNK, "byte_start": "0"}) == "invalid_body"
    assert refused(auth, ROUTE, {"chunk_id": CHUNK, "byte_limit": True}) == "invalid_body"

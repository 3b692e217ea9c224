"""A body sent with Transfer-Encoding: chunked (no Content-Length) is read like any other, within the same
1 MiB limit (api.md §3), against the real server (gunicorn de-chunks; Django alone would read it as empty)."""
import json
import uuid

import pytest

pytestmark = pytest.mark.live


def _chunks(data, size=7):
    for start in range(0, len(data), size):
        yield data[start:start + size]


def test_a_chunked_observe_is_stored_and_replays_like_a_sized_one(api):
    turn = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": "alice",
            "messages": [{"role": "user", "content": "I live in Tralee."}]}
    body = json.dumps(turn).encode()
    chunked = api.post("/v1/observations", content=_chunks(body))
    assert chunked.request.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in chunked.request.headers
    assert chunked.status_code == 201, chunked.text
    sized = api.post("/v1/observations", content=body)
    assert sized.status_code == 201 and sized.json() == chunked.json()


def test_a_chunked_body_keeps_the_strict_rules_and_the_size_limit(api):
    duplicate = b'{"question": "a", "question": "b"}'
    refused = api.post("/v1/recalls", content=_chunks(duplicate))
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_body"
    oversize = json.dumps({"question": "x" * (1_048_576 + 16)}).encode()
    refused = api.post("/v1/recalls", content=_chunks(oversize, size=65_536))
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_body"
    empty = api.post("/v1/recalls", content=_chunks(b""))
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "invalid_body"
    fine = api.post("/v1/recalls", content=_chunks(b'{"question": "Where do I live?"}'))
    assert fine.status_code == 200, fine.text

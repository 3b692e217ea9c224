"""The official `taisce` client (0.1.2) against a live Memoir server process."""
import uuid

import pytest
from taisce.client import Client, TaisceError

from tests.support.aio import run_async

pytestmark = pytest.mark.live


def run(coro):
    return run_async(coro)


async def _observe_twice(url, token):
    async with Client(url, token) as client:
        key = str(uuid.uuid4())
        messages = [{"role": "user", "content": "I live in Dublin."}]
        first = await client.observe(idempotency_key=key, messages=messages, data_subject_id="alice",
                                     occurred_at="2026-03-04T10:12:00Z")
        again = await client.observe(idempotency_key=key, messages=messages, data_subject_id="alice",
                                     occurred_at="2026-03-04T10:13:30.5Z")
        fresh = await client.freshness()
        return first, again, fresh


def test_observe_replay_and_freshness(live_server_url, live_project):
    project, token = live_project
    first, again, fresh = run(_observe_twice(live_server_url, token))
    assert first["scope"] == project and first["log_offset"] == 0
    assert again == first
    assert (fresh.scope, fresh.stored, fresh.formed, fresh.parked) == (project, 0, None, 0)


async def _conflict(url, token):
    async with Client(url, token) as client:
        key = str(uuid.uuid4())
        await client.observe(idempotency_key=key, messages=[{"role": "user", "content": "one"}])
        await client.observe(idempotency_key=key, messages=[{"role": "user", "content": "two"}])


def test_conflicting_replay_raises_the_contract_code(live_server_url, live_project):
    _, token = live_project
    with pytest.raises(TaisceError) as info:
        run(_conflict(live_server_url, token))
    assert (info.value.status, info.value.code) == (409, "idempotency_conflict")


def test_bad_token_is_a_401_with_the_contract_code(live_server_url):
    async def call():
        async with Client(live_server_url, "mem_" + "Z" * 43) as client:
            await client.freshness()

    with pytest.raises(TaisceError) as info:
        run(call())
    assert (info.value.status, info.value.code) == (401, "unauthenticated")


def test_passage_search_answers_200(live_server_url, live_project):
    _, token = live_project

    async def call():
        async with Client(live_server_url, token) as client:
            await client.observe(idempotency_key=str(uuid.uuid4()), data_subject_id="zoe",
                                 messages=[{"role": "user", "content": "I finally moved to Galway in May."}])
            return await client.search_passages(question="where do I live? galway?", limit=5)

    answer = run(call())
    assert answer["build_state"] == "lexical_only" and answer["approximate"] is False
    assert [p["preview"] for p in answer["passages"]] == ["I finally moved to Galway in May."]

"""The official Agent Framework adapter (`taisce-agent-framework` 0.1.2) keeps sessions in a live Memoir with its
own defaults: a save over an existing session and a delete, neither naming a version (docs/decisions.md)."""
import uuid

import pytest
import taisce
from taisce_agent_framework.session import SessionStore

from tests.support.aio import run_async

pytestmark = pytest.mark.live


def test_session_store_save_over_load_and_delete_with_its_defaults(live_server_url, live_project):
    _, token = live_project
    session_id = str(uuid.uuid4())

    async def scenario():
        async with taisce.Client(live_server_url, token) as client:
            store = SessionStore(client)
            first = await store.save(session_id, "alice", {"turns": 1})
            second = await store.save(session_id, "alice", {"turns": 2})
            loaded = await store.load(session_id, "alice")
            someone_else = await store.load(session_id, "bob")
            await store.delete(session_id, "alice")
            after = await store.load(session_id, "alice")
            await store.delete(session_id, "alice")  # already removed: the adapter treats the 404 as done
            return first, second, loaded, someone_else, after

    first, second, loaded, someone_else, after = run_async(scenario())
    assert first.session_id == second.session_id == session_id
    assert first.version and second.version and first.version != second.version
    assert loaded.state == {"turns": 2} and loaded.version == second.version
    assert someone_else is None and after is None


def test_session_store_still_refuses_a_stale_version_when_one_is_named(live_server_url, live_project):
    _, token = live_project
    session_id = str(uuid.uuid4())

    async def scenario():
        async with taisce.Client(live_server_url, token) as client:
            store = SessionStore(client)
            first = await store.save(session_id, "alice", {"turns": 1})
            await store.save(session_id, "alice", {"turns": 2}, expected_version=first.version)
            try:
                await store.save(session_id, "alice", {"turns": 3}, expected_version=first.version)
            except taisce.client.TaisceError as exc:
                return exc.status, exc.code, (await store.load(session_id, "alice")).state
            return None

    assert run_async(scenario()) == (409, "artifact_conflict", {"turns": 2})


def test_text_search_maps_live_passages_with_their_citation_identity(live_server_url, live_project):
    """The adapter's grounding on-ramp (`text_search.search`) over a live passage search."""
    from taisce_agent_framework.text_search import search

    _, token = live_project
    said = "Our allotment is plot 14 behind the old mill; the gate code is the year the mill closed."

    async def scenario():
        async with taisce.Client(live_server_url, token) as client:
            await client.observe(idempotency_key=str(uuid.uuid4()), messages=[{"role": "user", "content": said}],
                                 data_subject_id="alice")
            return await search(client, limit=3, data_subject_id="alice")("where is the allotment plot?")

    results = run_async(scenario())
    assert results and results[0].text == said
    assert results[0].source_name.startswith("turn ") and results[0].source_name.endswith(" message 0")
    assert results[0].raw["preview_complete"] is True

"""`GET /v1/freshness` while an extractor rebuild runs (issue 12): the `rebuilding` object appears, the official
`taisce` client still parses the answer, the contexts watermark carries it too, and it is gone afterwards."""
import httpx
import pytest
from taisce.client import Client

from formation import rebuild
from tests.formation.rebuild_support import seed
from tests.support.aio import run_async

pytestmark = pytest.mark.live


async def _client_freshness(url, token):
    async with Client(url, token) as client:
        return await client.freshness()


def test_freshness_shows_rebuilding_only_while_a_job_runs(live_server_url, live_project, committed):
    project, token = live_project
    seed(committed, project, ["I live in Dublin.", "Hello there."])
    auth = {"Authorization": f"Bearer {token}"}
    assert "rebuilding" not in httpx.get(live_server_url + "/v1/freshness", headers=auth).json()
    with committed():
        job = rebuild.start(project=project, target="rules/v1", principal="cli")
    try:
        body = httpx.get(live_server_url + "/v1/freshness", headers=auth).json()
        assert body["rebuilding"] == {"reinterpreted_through": None, "reinterpreting_through": 1,
                                      "sources_acknowledged": 0, "sources_skipped": 0}
        assert job["reinterpreting_through"] == 1
        fresh = run_async(_client_freshness(live_server_url, token))
        assert (fresh.scope, fresh.stored, fresh.formed, fresh.parked) == (project, 1, 1, 0)
        context = httpx.post(live_server_url + "/v1/contexts", headers=auth, json={"data_subject_id": "alice"})
        assert context.status_code == 200 and "rebuilding" in context.json()["watermark"]
    finally:
        with committed():
            rebuild.cancel(project=project, principal="cli")
    body = httpx.get(live_server_url + "/v1/freshness", headers=auth).json()
    assert "rebuilding" not in body and body["formed"] == 1

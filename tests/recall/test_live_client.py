"""The official `taisce` client against a real gunicorn server: observe, form, recall, and render the
bundle into the memory message adapters inject."""
import dataclasses
import json
import uuid

import pytest
import taisce
from taisce.client import TaisceError
from taisce.memory import MEMORY_MESSAGE_PREFIX, render_memory_message

from formation.driver import drain
from formation.rules import RulesProposer
from governance import services as governance
from tests.support.aio import run_async

pytestmark = pytest.mark.live


def test_client_recall_round_trip(live_server_url, live_project, committed):
    project, token = live_project
    with committed():
        _, read_only = governance.issue_credential(project=project, name="reader", access="read_only",
                                                   principal="cli")

    async def observe():
        async with taisce.Client(live_server_url, token) as client:
            await client.observe(idempotency_key=str(uuid.uuid4()), data_subject_id="alice",
                                 messages=[{"role": "user", "content": "I live in Dublin. I work at Acme."}])
            await client.observe(idempotency_key=str(uuid.uuid4()), data_subject_id="bob",
                                 messages=[{"role": "user", "content": "I live in Paris."}])

    async def ask():
        async with taisce.Client(live_server_url, token) as client:
            watermark = await client.freshness()
            bundle = await client.recall(question="Where do I live and work?", data_subject_id="alice", hops=2,
                                         max_characters=4000)
            with pytest.raises(TaisceError) as refused:
                await client.recall(question="Dublin", source_roles=[])
            unavailable = await client.search_passages(question="Where is Dublin?", limit=5)
        async with taisce.Client(live_server_url, read_only) as reader:
            read = await reader.recall(question="Dublin")
        return watermark, bundle, refused.value, unavailable, read

    run_async(observe())
    with committed():
        assert drain(project, proposer=RulesProposer()).turns_formed == 2
    watermark, bundle, refused, unavailable, read = run_async(ask())
    assert (refused.status, refused.code) == (400, "invalid_recall_controls")
    # No embedder in this server: passages answer from the lexical index alone.
    assert unavailable["build_state"] == "lexical_only"
    assert "I live in Dublin. I work at Acme." in [p["preview"] for p in unavailable["passages"]]

    assert {(f["subject"], f["predicate"], f["object"]) for f in bundle["facts"]} == {
        ("speaker", "lives_in", "Dublin"), ("speaker", "works_at", "Acme")}
    assert bundle["controls"]["hops"] == 2 and bundle["controls"]["max_characters"] == 4000
    assert [f["object"] for f in read["facts"]] == ["Dublin"]

    text = render_memory_message(dataclasses.asdict(watermark), bundle)
    first_line, document = text.split("\n", 1)
    assert first_line == MEMORY_MESSAGE_PREFIX
    parsed = json.loads(document)
    assert parsed["watermark"] == {"stored": 1, "formed": 1, "parked": 0}
    assert parsed["facts"] == bundle["facts"]
    assert parsed["plan"] == {"controls": bundle["controls"], "degraded": [], "reach": bundle["reach"]}
    assert parsed["reports"] == [] and parsed["passages"] == bundle["passages"]

"""The official `taisce` client against a live server: context() and resolve_citation() over turns formed
by the rules proposer and rolled up by the compaction task, and the adapters' memory message renderer."""
import json
import uuid

import pytest
from django.db import connection
from taisce.client import Client, TaisceError
from taisce.memory import MEMORY_MESSAGE_PREFIX, render_context_message

from formation import driver, tasks
from formation.rules import RulesProposer
from tests.support.aio import run_async

pytestmark = pytest.mark.live


async def _observe(url, token, turns):
    async with Client(url, token) as client:
        for i, content in enumerate(turns):
            await client.observe(idempotency_key=str(uuid.uuid4()), data_subject_id="alice",
                                 messages=[{"role": "user", "content": content},
                                           {"role": "assistant", "content": f"Noted {i}."}],
                                 occurred_at=f"2026-02-01T10:{i:02d}:00Z")


async def _read(url, token, fact_id, max_characters=None):
    async with Client(url, token) as client:
        context = await client.context(data_subject_id="alice", max_characters=max_characters)
        citation = await client.resolve_citation(fact_id=fact_id, limit=1)
        return context, citation


def test_context_and_citation_through_the_official_client(live_server_url, live_project, committed):
    project, token = live_project
    turns = ["I live in Dublin. It rains."] + [f"Day {i} was fine. Nothing else." for i in range(1, 20)]
    run_async(_observe(live_server_url, token, turns))
    with committed():
        stats = driver.drain(project, proposer=RulesProposer())
        assert stats.turns_formed == 20
        with connection.cursor() as cursor:
            cursor.execute("SELECT fact_id::text FROM fact WHERE scope = %s AND predicate = 'lives_in'", [project])
            (fact_id,) = cursor.fetchone()
    # The beat task body itself: it manages its own connections, so it runs outside any transaction.
    with committed():
        written = tasks.compaction_pass()
    assert written.get(project) == 1

    context, citation = run_async(_read(live_server_url, token, fact_id))
    assert context["watermark"] == {"scope": project, "stored": 19, "formed": 19, "parked": 0}
    (segment,) = context["segments"]
    assert (segment["level"], segment["from_offset"], segment["to_offset"], segment["covered"]) == (1, 0, 7, 8)
    assert segment["summary"].startswith("I live in Dublin. Day 1 was fine. Day 2 was fine.")
    assert [t["log_offset"] for t in context["turns"]] == list(range(8, 20))
    assert context["truncated"] is False

    assert citation["id"] == fact_id and citation["status"] == "current" and citation["scope"] == project
    (evidence,) = citation["evidence"]
    assert (evidence["quote"], evidence["byte_start"], evidence["byte_end"]) == ("I live in Dublin", 0, 16)
    assert evidence["context"] == "I live in Dublin. It rains." and evidence["context_complete"] is True
    assert "next" not in citation

    rendered = render_context_message(context)
    head, document = rendered.split("\n", 1)
    assert head == MEMORY_MESSAGE_PREFIX
    parsed = json.loads(document)
    assert parsed["segments"] == context["segments"] and parsed["turns"] == context["turns"]
    assert parsed["plan"] == {"characters": context["characters"], "truncated": False}
    assert parsed["watermark"] == {"stored": 19, "formed": 19, "parked": 0}

    small, _ = run_async(_read(live_server_url, token, fact_id, max_characters=50))
    assert small["truncated"] is True and small["characters"] <= 50


def test_client_sees_contract_errors(live_server_url, live_project):
    _, token = live_project

    async def call(**kwargs):
        async with Client(live_server_url, token) as client:
            return await client.resolve_citation(**kwargs)

    with pytest.raises(TaisceError) as unknown:
        run_async(call(fact_id=str(uuid.uuid4())))
    assert (unknown.value.status, unknown.value.code) == (404, "not_found")
    with pytest.raises(TaisceError) as bad:
        run_async(call(fact_id=str(uuid.uuid4()), limit=33))
    assert (bad.value.status, bad.value.code) == (400, "invalid_citation")

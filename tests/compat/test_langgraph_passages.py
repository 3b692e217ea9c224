"""The real LangGraph adapter against a live server: a question whose answer is only in an earlier message (no
fact was formed from it) gets that message as a passage in the injected memory; the official client's
search_passages() answers 200."""
import json

import pytest
from taisce import MEMORY_MESSAGE_PREFIX, Client

from tests.compat.test_langgraph_adapter import Run, live  # noqa: F401 - `live` is a fixture
from tests.support.aio import run_async

pytestmark = pytest.mark.live

EARLIER = "The wedding venue is the old lighthouse at Hook Head, booked for the twelfth."


def test_injected_memory_holds_the_earlier_message_as_a_passage(live):  # noqa: F811
    url, project, token = live
    first = Run(url, token, user=EARLIER, subject="alice", run_id="s1").go()
    assert first.raised is None
    later = Run(url, token, user="Where is the wedding venue?", subject="alice", run_id="s2").go()
    assert later.raised is None
    memory = [m for m in later.handed if isinstance(m.content, str) and m.content.startswith(MEMORY_MESSAGE_PREFIX)]
    assert len(memory) == 1
    document = json.loads(memory[0].content.split("\n", 1)[1])
    assert EARLIER in [p["quote"] for p in document["passages"]]
    assert document["facts"] == []  # the answer is only in the message itself

    async def search():
        async with Client(url, token) as client:
            return await client.search_passages(question="lighthouse booking", limit=3, data_subject_id="alice")

    answer = run_async(search())
    assert answer["passages"][0]["preview"] == EARLIER and answer["build_state"] == "lexical_only"

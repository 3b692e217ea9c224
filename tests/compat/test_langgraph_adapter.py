"""The real LangGraph adapter (`taisce-langgraph` 0.1.2) against a live Memoir server: a retried turn is
one observation, a recall that fails for real does not stop the agent, and memory reaches the model as
one untrusted user message that is never stored. The adapter's own conformance driver is run too."""
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, SystemMessage
from taisce import MEMORY_MESSAGE_PREFIX, Client, TaisceError, turn_key
from taisce_langgraph import UNTRUSTED_KEY, TaisceMemory
from taisce_langgraph.conformance import ScriptedModel, act

from formation.driver import drain
from formation.rules import RulesProposer
from memory import services
from tests.conftest import make_project
from tests.support.aio import run_async
from tests.support.db import rows

pytestmark = pytest.mark.live
ROOT = Path(__file__).resolve().parent.parent.parent


class RecordingModel(ScriptedModel):
    """The conformance suite's scripted model, keeping the message objects it was handed."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self._report.setdefault("handed", []).append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


class Run:
    """One agent invocation through the adapter, with what it sent, what it reported and what the model saw."""

    def __init__(self, url, token, *, user, assistant="Noted.", subject=None, run_id="run", history=()):
        self.url, self.token = url, token
        self.user, self.assistant, self.subject, self.run_id = user, assistant, subject, run_id
        self.history = list(history)
        self.sent = []  # (path, body) of every request the adapter's client made
        self.errors = []  # (stage, exception) the adapter reported and swallowed or raised
        self.report = {}
        self.result = None
        self.raised = None

    async def _go(self):
        async def record(request):
            self.sent.append((request.url.path, json.loads(request.content) if request.content else None))

        http = httpx.AsyncClient(timeout=30, event_hooks={"request": [record]})
        memory = TaisceMemory(Client(self.url, self.token, http=http), data_subject_id=self.subject,
                              run_id=self.run_id, on_error=lambda stage, exc: self.errors.append((stage, exc)))
        model = RecordingModel(turn={"assistant": self.assistant}).attach(self.report)
        agent = create_agent(model, tools=[act], middleware=[memory])
        try:
            self.result = await agent.ainvoke({"messages": [*self.history, HumanMessage(content=self.user)]})
        except Exception as exc:  # noqa: BLE001 - which stage raised is what the tests look at
            self.raised = exc
        finally:
            await http.aclose()
        return self

    def go(self):
        return run_async(self._go())

    @property
    def handed(self):
        """The messages the model received on its first call."""
        return self.report["handed"][0]

    def bodies(self, path):
        return [body for sent_path, body in self.sent if sent_path == path]


def stored_turns(project):
    """[(occurred_at, [(role, content), ...])] oldest first."""
    out = []
    for observation_id, occurred_at in rows("SELECT observation_id, occurred_at FROM observation WHERE scope = %s"
                                            " AND kind = 'turn' ORDER BY log_offset", [project]):
        messages = rows("SELECT role, content FROM turn_message WHERE observation_id = %s ORDER BY ordinal",
                        [observation_id])
        out.append((occurred_at, messages))
    return out


@pytest.fixture
def live(live_server_url, test_database_name, committed):
    assert test_database_name == settings.DATABASES["default"]["TEST"]["NAME"], "no test database was set up"
    project, token, _ = make_project(committed)
    return live_server_url, project, token


def test_the_adapter_key_replays_in_the_observe_service(new_project):
    """The adapter derives one key per turn; the service replays it whatever occurred_at says (api.md §5.1)."""
    project, _ = new_project
    messages = [{"role": "user", "content": "I live in Dublin."}, {"role": "assistant", "content": "Noted."}]
    key = turn_key("alice", "run-1", messages)
    assert uuid.UUID(key).version == 5
    grouped = [{**m, "group_ordinal": i} for i, m in enumerate(messages)]  # as the view cleans them
    first = services.observe(project=project, messages=grouped, data_subject_id="alice",
                             occurred_at=None, idempotency_key=key)
    again = services.observe(project=project, messages=grouped, data_subject_id="alice",
                             occurred_at=None, idempotency_key=key)
    assert (again.id, again.log_offset, again.replayed, first.replayed) == (first.id, first.log_offset, True, False)
    other = turn_key("alice", "run-2", messages)
    assert other != key


def test_a_retried_turn_is_stored_once(live, committed):
    url, project, token = live
    first = Run(url, token, user="I live in Dublin.", subject="alice", run_id="session-7").go()
    time.sleep(1.1)  # the adapter stamps whole seconds: the retry carries a later occurred_at
    retry = Run(url, token, user="I live in Dublin.", subject="alice", run_id="session-7").go()
    assert first.raised is None and retry.raised is None
    (sent_first,), (sent_retry,) = first.bodies("/v1/observations"), retry.bodies("/v1/observations")
    assert sent_first["idempotency_key"] == sent_retry["idempotency_key"]
    assert sent_first["occurred_at"] != sent_retry["occurred_at"]
    assert sent_first["messages"] == sent_retry["messages"] == [
        {"role": "user", "content": "I live in Dublin."}, {"role": "assistant", "content": "Noted."}]
    with committed():
        turns = stored_turns(project)
        observes = rows("SELECT magnitude, outcome FROM audit_entry WHERE project = %s AND operation = 'observe'"
                        " ORDER BY entry_id", [project])
    assert len(turns) == 1
    occurred_at, messages = turns[0]
    assert occurred_at.strftime("%Y-%m-%dT%H:%M:%SZ") == sent_first["occurred_at"]  # the first time stands
    assert messages == [("user", "I live in Dublin."), ("assistant", "Noted.")]
    # Both attempts answered 201; the replay used no offset and counted no messages.
    assert observes == [(2, "allowed"), (0, "allowed")]
    # A different run is a different turn, even with the same words.
    Run(url, token, user="I live in Dublin.", subject="alice", run_id="session-8").go()
    with committed():
        assert len(stored_turns(project)) == 2


def test_a_recall_the_server_refuses_does_not_stop_the_agent(live, committed):
    url, project, token = live
    # 600 distinct terms: the server refuses the whole question (400 invalid_question), never truncates it.
    question = " ".join(f"w{i}" for i in range(600)) + "?"
    run = Run(url, token, user=question, assistant="Answered without memory.", subject="alice").go()
    assert run.raised is None
    assert [(stage, type(exc), exc.status, exc.code) for stage, exc in run.errors] == [
        ("recall", TaisceError, 400, "invalid_question")]
    assert run.bodies("/v1/recalls") == [{"question": question, "data_subject_id": "alice"}]
    assert [m.content for m in run.handed] == [question]  # no memory injected, the model still ran
    assert run.result["messages"][-1].content == "Answered without memory."
    with committed():
        assert stored_turns(project)[0][1] == [("user", question), ("assistant", "Answered without memory.")]


def test_a_suspended_project_fails_recall_softly_and_the_store_loudly(live, committed):
    from governance import services as governance

    url, project, token = live
    with committed():
        governance.suspend_project(name=project, principal="cli")
    run = Run(url, token, user="Where do I live?", assistant="I do not know.", subject="alice").go()
    # Recall's 401 was reported and swallowed: the model was called, without memory.
    assert [m.content for m in run.handed] == ["Where do I live?"]
    assert [(stage, exc.status, exc.code) for stage, exc in run.errors] == [
        ("recall", 401, "unauthenticated"), ("observe", 401, "unauthenticated")]
    # Only the lost store reaches the application (the adapter's asymmetric policy); nothing was kept.
    assert isinstance(run.raised, TaisceError) and run.raised.code == "unauthenticated"
    with committed():
        assert stored_turns(project) == []


def _seed_memory(url, project, token, committed):
    seeded = httpx.post(url + "/v1/observations", headers={"Authorization": f"Bearer {token}"}, json={
        "idempotency_key": str(uuid.uuid4()), "data_subject_id": "alice",
        "messages": [{"role": "user", "content": "I live in Dublin."}]}, timeout=30)
    assert seeded.status_code == 201, seeded.text
    with committed():
        drain(project, proposer=RulesProposer())


def test_memory_is_one_untrusted_user_message_and_is_not_stored(live, committed):
    url, project, token = live
    _seed_memory(url, project, token, committed)
    run = Run(url, token, user="Where do I live?", assistant="In Dublin.", subject="alice",
              history=[SystemMessage(content="You are helpful.")]).go()
    assert run.raised is None and run.errors == []
    handed = run.handed
    untrusted = [m for m in handed if (m.additional_kwargs or {}).get(UNTRUSTED_KEY)]
    assert len(untrusted) == 1
    memory = untrusted[0]
    # A user-role message, never a system one; the only system message is the application's own.
    assert isinstance(memory, HumanMessage) and memory.name == "taisce"
    assert [type(m) for m in handed] == [SystemMessage, HumanMessage, HumanMessage]
    assert [m.content for m in handed if isinstance(m, SystemMessage)] == ["You are helpful."]
    # Placed right before the person's question, which is unchanged.
    assert handed.index(memory) == len(handed) - 2 and handed[-1].content == "Where do I live?"
    prefix, document = memory.content.split("\n", 1)
    assert prefix == MEMORY_MESSAGE_PREFIX
    document = json.loads(document)
    assert [(f["predicate"], f["object"], f["evidence"]["quote"]) for f in document["facts"]] == [
        ("lives_in", "Dublin", "I live in Dublin")]
    assert document["watermark"] == {"stored": 0, "formed": 0, "parked": 0}
    # Injected into the request only: not in the graph's state and not stored as anybody's words.
    assert not any((m.additional_kwargs or {}).get(UNTRUSTED_KEY) for m in run.result["messages"])
    with committed():
        turns = stored_turns(project)
    assert turns[-1][1] == [("user", "Where do I live?"), ("assistant", "In Dublin.")]
    assert not any(MEMORY_MESSAGE_PREFIX in content for _, messages in turns for _, content in messages)


def _conformance(instructions):
    """The adapter's own conformance driver, over its subprocess protocol: one JSON line per turn."""
    done = subprocess.run([sys.executable, "-m", "taisce_langgraph.conformance"], cwd=ROOT,
                          input="".join(json.dumps(i) + "\n" for i in instructions), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_the_adapter_conformance_driver_against_memoir(live, committed):
    url, project, token = live
    _seed_memory(url, project, token, committed)

    def case(name, turn, subject="alice"):
        return {"case": name, "api": url, "token": token, "data_subject_id": subject, "turn": turn}

    long_question = " ".join(f"w{i}" for i in range(600))
    reports = dict(zip(["plain", "plain-retry", "tools", "model-failure", "memory", "recall-refused", "compact"],
                       _conformance([
                           case("plain", {"user": "I work at Acme.", "assistant": "Noted."}, subject=None),
                           case("plain", {"user": "I work at Acme.", "assistant": "Noted."}, subject=None),
                           case("tools", {"user": "What is six times seven?", "assistant": "It is 42.",
                                          "tool_calls": [{"call": "multiply", "result": "42"}]}),
                           case("model-failure", {"user": "I have a cat.", "model_failure": True}),
                           case("memory", {"user": "Where do I live?", "assistant": "Dublin."}),
                           case("recall-refused", {"user": long_question, "assistant": "Fine."}),
                           case("compact", {"user": "What did I say?", "assistant": "That you live in Dublin.",
                                            "history": [{"role": "user", "content": "Hello there."},
                                                        {"role": "assistant", "content": "Hi."}],
                                            "compact": True}),
                       ])))
    for name, report in reports.items():
        assert ("store_error" in report) is False, (name, report)
        assert report["fatal"] is (name == "model-failure"), (name, report)
        assert report["observed"] is (name != "model-failure"), (name, report)

    def untrusted(name):
        return [m for m in reports[name]["model_messages"] if m["untrusted"]]

    # Memory: one untrusted user-role message carrying the recalled fact, before the question.
    (memory,) = untrusted("memory")
    assert memory["role"] == "user" and memory["content"].startswith(MEMORY_MESSAGE_PREFIX + "\n")
    assert '"object":"Dublin"' in memory["content"]
    assert reports["memory"]["model_messages"][-2:] == [memory, {"role": "user", "content": "Where do I live?",
                                                                 "untrusted": False}]
    assert untrusted("plain") == untrusted("recall-refused") == []
    # Compaction replaced the history with one untrusted message holding our /v1/contexts answer; recall's
    # memory message follows it. Both are user-role and untrusted, and the history itself is gone.
    documents = [json.loads(m["content"].split("\n", 1)[1]) for m in untrusted("compact")]
    assert [m["role"] for m in untrusted("compact")] == ["user", "user"]
    assert [sorted(d) for d in documents] == [["plan", "segments", "turns", "watermark"],
                                               ["facts", "passages", "plan", "reports", "watermark"]]
    assert documents[0]["turns"][0]["messages"] == [{"role": "user", "content": "I live in Dublin."}]
    assert [m["content"] for m in reports["compact"]["model_messages"] if not m["untrusted"]] == ["What did I say?"]

    with committed():
        turns = [messages for _, messages in stored_turns(project)]
    assert turns.count([("user", "I work at Acme."), ("assistant", "Noted.")]) == 1  # the retry replayed
    assert [("user", "What is six times seven?"), ("assistant", "It is 42.")] in turns  # no tool traffic
    assert not any(content == "I have a cat." for messages in turns for _, content in messages)
    assert [("user", long_question), ("assistant", "Fine.")] in turns
    assert not any(MEMORY_MESSAGE_PREFIX in content for messages in turns for _, content in messages)
    # Every test above (seed, plain, tools, memory, recall-refused, compact) is one stored turn.
    assert len(turns) == 6


def test_the_retry_is_a_replay_on_the_wire(live):
    """What the adapter relies on, seen by its client: the replay answers 201 with the original receipt."""
    url, _, token = live

    async def twice():
        async with Client(url, token) as client:
            messages = [{"role": "user", "content": "I like tea."}]
            key = turn_key(None, "r", messages)
            first = await client.observe(idempotency_key=key, messages=messages, occurred_at="2026-01-01T00:00:00Z")
            again = await client.observe(idempotency_key=key, messages=messages, occurred_at="2026-01-01T00:00:01Z")
            return first, again

    first, again = run_async(twice())
    assert first == again

"""The official MCP client (`mcp` streamable HTTP) against a live gunicorn server: each tool answers what its
/v1 route answers, refusals included, and each call leaves the route's ledger row."""
import json
import uuid

import httpx
import httpx2
import pytest
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

from api import mcp as memoir_mcp
from formation.driver import drain
from formation.rules import RulesProposer
from governance import services as governance
from tests.conftest import make_project
from tests.support.aio import run_async

pytestmark = pytest.mark.live

SEVEN = {"recall", "observe", "freshness", "context", "resolve_citation", "report_feedback", "search_passages"}


def mcp_client(url, token):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return Client(streamable_http_client(url + "/mcp", http_client=http))


async def call_all(url, token, calls):
    """Connect once, run each (tool, arguments) and return the results in order."""
    async with mcp_client(url, token) as client:
        return [await client.call_tool(name, arguments) for name, arguments in calls]


def rest(url, token, path, body=None):
    headers = {"Authorization": f"Bearer {token}"}
    if body is None:
        return httpx.get(url + path, headers=headers, timeout=30)
    return httpx.post(url + path, content=json.dumps(body), headers=headers, timeout=30)


def refusal_text(response):
    error = response.json()["error"]
    return f"{response.status_code} {error['code']}: {error['message']}"


def last_entry(committed):
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(entry_id), 0) FROM audit_entry")
        return cursor.fetchone()[0]


def entries_since(committed, project, mark):
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT operation, outcome FROM audit_entry WHERE project = %s AND entry_id > %s"
                       " ORDER BY entry_id", [project, mark])
        return cursor.fetchall()


def text_of(result):
    return result.content[0].text


def test_initialize_and_exactly_the_seven_tools_with_the_route_schemas(mcp_server_url, committed):
    _, token, _ = make_project(committed)

    async def go():
        async with mcp_client(mcp_server_url, token) as client:
            return client.session.protocol_version, client.server_info, await client.list_tools()

    version, info, listing = run_async(go())
    assert version in HANDSHAKE_PROTOCOL_VERSIONS and info.name == "memoir"
    tools = {tool.name: tool for tool in listing.tools}
    assert set(tools) == SEVEN
    # The input schemas are the OpenAPI document's request bodies, as the live server publishes them.
    document = httpx.get(mcp_server_url + "/v1/schema", timeout=30).json()
    for tool in memoir_mcp.TOOLS:
        operation = document["paths"][tool.path]
        if "post" in operation:
            published = operation["post"]["requestBody"]["content"]["application/json"]["schema"]
            assert tools[tool.name].input_schema == memoir_mcp._json_schema(published), tool.name
        else:
            assert tools[tool.name].input_schema == memoir_mcp.EMPTY_SCHEMA
    assert {name for name, tool in tools.items() if tool.annotations.read_only_hint} == SEVEN - {
        "observe", "report_feedback"}
    assert not any(tool.annotations.destructive_hint for tool in tools.values())


def test_observe_form_recall_cite_search_and_feedback(mcp_server_url, committed):
    project, token, _ = make_project(committed)
    mark = last_entry(committed)
    observed, before = run_async(call_all(mcp_server_url, token, [
        ("observe", {"idempotency_key": str(uuid.uuid4()), "data_subject_id": "alice",
                     "messages": [{"role": "user", "content": "I live in Dublin."}]}),
        ("freshness", {}),
    ]))
    assert not observed.is_error and observed.structured_content["scope"] == project
    assert observed.structured_content["log_offset"] == 0
    assert before.structured_content == {"scope": project, "stored": 0, "formed": None, "parked": 0}

    formed, polls = None, 0
    for _ in range(5):  # bounded: drain in this process, then ask over MCP until the watermark says formed
        with committed():
            drain(project, proposer=RulesProposer())
        formed = run_async(call_all(mcp_server_url, token, [("freshness", {})]))[0].structured_content
        polls += 1
        if formed["formed"] == 0:
            break
    assert formed == {"scope": project, "stored": 0, "formed": 0, "parked": 0}

    search = {"question": "Dublin", "limit": 5}
    recalled, context = run_async(call_all(mcp_server_url, token, [
        ("recall", {"question": "Where do I live?", "data_subject_id": "alice"}),
        ("context", {"data_subject_id": "alice"}),
    ]))
    facts = recalled.structured_content["facts"]
    assert [(f["predicate"], f["object"], f["evidence"]["quote"]) for f in facts] == [
        ("lives_in", "Dublin", "I live in Dublin")]
    assert json.loads(text_of(recalled)) == recalled.structured_content
    assert context.structured_content["turns"][0]["messages"][0]["content"] == "I live in Dublin."
    fact_id = facts[0]["fact_id"]
    cited, passages, feedback = run_async(call_all(mcp_server_url, token, [
        ("resolve_citation", {"id": fact_id}),
        ("search_passages", search),
        ("report_feedback", {"record_id": fact_id, "note": "moved last year"}),
    ]))
    assert cited.structured_content["id"] == fact_id
    assert [e["quote"] for e in cited.structured_content["evidence"]] == ["I live in Dublin"]
    assert feedback.structured_content["record_id"] == fact_id

    # search_passages answers exactly what the route answers for the same body, before and after passages land.
    routed = rest(mcp_server_url, token, "/v1/passages/search", search)
    if routed.status_code == 200:
        assert not passages.is_error
        assert passages.structured_content == routed.json()
        assert any("Dublin" in p["preview"] for p in passages.structured_content["passages"])
    else:
        assert passages.is_error and text_of(passages) == refusal_text(routed)

    search_outcome = "allowed" if routed.status_code == 200 else "refused"
    assert entries_since(committed, project, mark) == [
        ("observe", "allowed"), ("freshness", "allowed"), *[("freshness", "allowed")] * polls,
        ("recall", "allowed"), ("context.assemble", "allowed"),
        ("citation.resolve", "allowed"), ("embedding.search", search_outcome), ("feedback.record", "allowed"),
        ("embedding.search", search_outcome),
    ]


def test_each_call_leaves_exactly_the_routes_ledger_rows(mcp_server_url, committed):
    project, token, _ = make_project(committed)
    mark = last_entry(committed)
    results = run_async(call_all(mcp_server_url, token, [
        ("freshness", {}),
        ("recall", {"question": "anything"}),
        ("recall", {"question": "   "}),
        ("search_passages", {"question": "anything"}),
        ("observe", {"messages": [{"role": "narrator", "content": "x"}]}),
        ("context", {"data_subject_id": "alice", "surprise": 1}),
    ]))
    routed = rest(mcp_server_url, token, "/v1/passages/search", {"question": "anything"})
    search_outcome = "allowed" if routed.status_code == 200 else "refused"
    assert [r.is_error for r in results] == [False, False, True, routed.status_code != 200, True, True]
    assert text_of(results[2]) == "400 invalid_question: a question is required"
    assert text_of(results[4]) == refusal_text(rest(mcp_server_url, token, "/v1/observations", {
        "messages": [{"role": "narrator", "content": "x"}]}))
    assert text_of(results[5]) == "400 invalid_body: the request body could not be read"
    assert entries_since(committed, project, mark) == [
        ("freshness", "allowed"), ("recall", "allowed"), ("recall", "refused"), ("embedding.search", search_outcome),
        ("observe", "refused"), ("context.assemble", "refused"),
        ("embedding.search", search_outcome), ("observe", "refused"),
    ]
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM observation WHERE scope = %s", [project])
        assert cursor.fetchone()[0] == 0


def test_a_wrong_token_is_the_routes_401_before_any_mcp(mcp_server_url, committed):
    mark = last_entry(committed)
    wrong = "mem_" + "Z" * 43
    with pytest.raises((MCPError, ExceptionGroup)):
        run_async(call_all(mcp_server_url, wrong, [("freshness", {})]))
    raw = httpx.post(mcp_server_url + "/mcp", headers={"Authorization": f"Bearer {wrong}"}, timeout=30,
                     json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    routed = rest(mcp_server_url, wrong, "/v1/recalls", {"question": "x"})
    assert (raw.status_code, raw.json()) == (routed.status_code, routed.json()) == (
        401, {"error": {"code": "unauthenticated", "message": "a credential is required"}})
    assert raw.headers["WWW-Authenticate"] == "Bearer"
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT operation, outcome, principal, project FROM audit_entry WHERE entry_id > %s"
                       " AND operation = 'authenticate'", [mark])
        rows = cursor.fetchall()
    # The client's connect attempts (discover, then initialize), the raw call and the REST call: one row each.
    assert len(rows) >= 3 and set(rows) == {("authenticate", "refused", "unresolved", "")}


def test_a_foreign_citation_id_is_indistinguishable_from_an_unknown_one(mcp_server_url, committed):
    owner, owner_token, _ = make_project(committed)
    run_async(call_all(mcp_server_url, owner_token, [("observe", {
        "idempotency_key": str(uuid.uuid4()), "data_subject_id": "alice",
        "messages": [{"role": "user", "content": "I live in Cork."}]})]))
    with committed():
        assert drain(owner, proposer=RulesProposer()).turns_formed == 1
    recalled = run_async(call_all(mcp_server_url, owner_token, [
        ("recall", {"question": "Where do I live?", "data_subject_id": "alice"})]))[0]
    fact_id = recalled.structured_content["facts"][0]["fact_id"]

    other, other_token, _ = make_project(committed)
    mark = last_entry(committed)
    foreign, unknown = run_async(call_all(mcp_server_url, other_token, [
        ("resolve_citation", {"id": fact_id}), ("resolve_citation", {"id": str(uuid.uuid4())})]))
    assert foreign.is_error and unknown.is_error
    assert text_of(foreign) == text_of(unknown) == "404 not_found: not found"
    assert text_of(foreign) == refusal_text(rest(mcp_server_url, other_token, "/v1/citations/resolve", {"id": fact_id}))
    assert entries_since(committed, other, mark) == [("citation.resolve", "refused")] * 3


def test_a_read_only_token_cannot_observe_or_report_feedback(mcp_server_url, committed):
    project, _, _ = make_project(committed)
    with committed():
        _, reader = governance.issue_credential(project=project, name="reader", access="read_only", principal="cli")
    mark = last_entry(committed)
    observed, feedback, fresh = run_async(call_all(mcp_server_url, reader, [
        ("observe", {"idempotency_key": str(uuid.uuid4()), "messages": [{"role": "user", "content": "I live in Oslo."}]}),
        ("report_feedback", {"record_id": str(uuid.uuid4()), "note": "wrong"}),
        ("freshness", {}),
    ]))
    routed = rest(mcp_server_url, reader, "/v1/observations", {
        "idempotency_key": str(uuid.uuid4()), "messages": [{"role": "user", "content": "I live in Oslo."}]})
    assert observed.is_error and feedback.is_error and not fresh.is_error
    assert text_of(observed) == text_of(feedback) == refusal_text(routed) == (
        "403 forbidden: this credential may not call this route")
    assert entries_since(committed, project, mark) == [
        ("observe", "refused"), ("feedback.record", "refused"), ("freshness", "allowed"), ("observe", "refused")]
    with committed(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM observation WHERE scope = %s", [project])
        assert cursor.fetchone()[0] == 0

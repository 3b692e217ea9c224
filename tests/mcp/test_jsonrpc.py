"""POST /mcp at the JSON-RPC level against a live server: every malformed message gets the right JSON-RPC
error (validated with the official `mcp` types), protocol versions are negotiated, GET is 405."""
import httpx
import mcp.types as types
import pytest
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from tests.conftest import make_project

pytestmark = pytest.mark.live

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}


@pytest.fixture(scope="module")
def post(mcp_server_url, committed):
    _, token, _ = make_project(committed)

    def send(body, *, raw=None, headers=None):
        sent = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", **(headers or {})}
        if raw is not None:
            return httpx.post(mcp_server_url + "/mcp", content=raw, headers=sent, timeout=30)
        return httpx.post(mcp_server_url + "/mcp", json=body, headers=sent, timeout=30)

    return send


def parsed(response):
    assert response.headers["Content-Type"].startswith("application/json")
    return types.jsonrpc_message_adapter.validate_json(response.content)


def error_of(response):
    message = parsed(response)
    assert isinstance(message, types.JSONRPCError), message
    return message.id, message.error.code


def test_parse_error_is_minus_32700_with_a_null_id(post):
    for raw in (b"{", b"\xff\xfe", b"", b'{"jsonrpc": "2.0", "id": 1, "method": NaN}'):
        response = post(None, raw=raw)
        assert response.status_code == 400
        assert error_of(response) == (None, types.PARSE_ERROR)


@pytest.mark.parametrize("body", [
    [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],  # batches are not served
    "ping", 7,
    {"jsonrpc": "1.0", "id": 3, "method": "ping"},
    {"jsonrpc": "2.0", "id": 3, "method": 5},
    {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1, 2]},
    {"jsonrpc": "2.0", "id": True, "method": "ping"},
])
def test_invalid_requests_are_minus_32600(post, body):
    response = post(body)
    assert response.status_code == 400
    request_id, code = error_of(response)
    assert code == types.INVALID_REQUEST
    assert request_id in (None, 3)


def test_unknown_methods_are_minus_32601_with_the_request_id(post):
    for method in ("resources/list", "server/discover", "tools/erase"):
        response = post({"jsonrpc": "2.0", "id": "abc", "method": method})
        assert response.status_code == 200
        assert error_of(response) == ("abc", types.METHOD_NOT_FOUND)


@pytest.mark.parametrize("params", [
    {}, {"name": 5}, {"name": "erase", "arguments": {}}, {"name": "export"}, {"name": "recall", "arguments": [1]},
])
def test_bad_tool_calls_are_minus_32602(post, params):
    response = post({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params})
    assert error_of(response) == (9, types.INVALID_PARAMS)


def test_bad_initialize_params_are_minus_32602(post):
    response = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2}})
    assert error_of(response) == (1, types.INVALID_PARAMS)


@pytest.mark.parametrize(("offered", "answered"), [
    *[(version, version) for version in HANDSHAKE_PROTOCOL_VERSIONS],
    ("1999-01-01", LATEST_HANDSHAKE_VERSION), ("2026-07-28", LATEST_HANDSHAKE_VERSION),
])
def test_initialize_negotiates_the_protocol_version(post, offered, answered):
    response = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {**INIT, "protocolVersion": offered}})
    message = parsed(response)
    assert isinstance(message, types.JSONRPCResponse)
    result = types.InitializeResult.model_validate(message.result)
    assert result.protocol_version == answered
    assert result.capabilities.tools is not None and result.server_info.name == "memoir"


def test_an_unsupported_protocol_version_header_is_refused(post):
    response = post({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, headers={"MCP-Protocol-Version": "1999-01-01"})
    assert response.status_code == 400
    assert error_of(response) == (4, types.INVALID_REQUEST)
    fine = post({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, headers={"MCP-Protocol-Version": "2025-06-18"})
    assert len(types.ListToolsResult.model_validate(parsed(fine).result).tools) == 7


def test_notifications_and_responses_are_accepted_without_an_answer(post):
    for body in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 1, "result": {}},
                 {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "x"}}):
        response = post(body)
        assert (response.status_code, response.content) == (202, b"")


def test_ping_answers_an_empty_result(post):
    message = parsed(post({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    assert isinstance(message, types.JSONRPCResponse) and message.result == {}


def test_get_and_other_methods_are_405(mcp_server_url):
    for method in ("GET", "PUT", "DELETE"):
        response = httpx.request(method, mcp_server_url + "/mcp", timeout=30)
        assert response.status_code == 405 and response.headers["Allow"] == "POST"
        assert response.json()["error"]["code"] == "method_not_allowed"

"""POST /mcp: the Model Context Protocol over streamable HTTP, stateless, with JSON answers only (docs/mcp.md).

Each tool is one /v1 route, called through that route's own view with the caller's token, so admission,
access modes, the ledger row and every refusal are the route's. Messages are checked and written with the
official `mcp` types; the tools' input schemas come from the same route declarations as the OpenAPI document."""
import io
import json
import logging
from dataclasses import dataclass

import mcp.types as types
from django.core.handlers.wsgi import WSGIRequest
from django.db import DatabaseError
from django.http import HttpResponse
from django.urls import resolve
from django.views.decorators.csrf import csrf_exempt
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from . import authentication, openapi
from .errors import ApiError, error_response
from .parsers import chunked_body
from .permissions import READ_ONLY_OPS

logger = logging.getLogger(__name__)

SERVER_NAME = "memoir"
SERVER_VERSION = "1"
PROTOCOL_HEADER = "HTTP_MCP_PROTOCOL_VERSION"
MAX_MESSAGE_BYTES = 2 * 1_048_576
# What the inner route request keeps of the outer one: where it came from and the credential, nothing else.
_COPIED_META = ("SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL", "REMOTE_ADDR", "HTTP_HOST", "HTTP_AUTHORIZATION",
                "wsgi.url_scheme", "wsgi.errors", "wsgi.version", "wsgi.multithread", "wsgi.multiprocess",
                "wsgi.run_once")


@dataclass(frozen=True)
class McpTool:
    name: str
    path: str
    title: str
    description: str


# The reference's six and passage search. Erasure, export, artifacts and record mutations are not tools: an
# agent must not be able to delete or copy out someone's data because some text in its context asked it to.
TOOLS = (
    McpTool("recall", "/v1/recalls", "Recall",
            "Ask memory a question; facts come back with the quoted words they came from. Same as POST /v1/recalls."),
    McpTool("observe", "/v1/observations", "Observe",
            "Store one conversation turn. Retry with the same idempotency_key. Same as POST /v1/observations."),
    McpTool("freshness", "/v1/freshness", "Freshness",
            "How far formation has caught up with stored turns. Same as GET /v1/freshness."),
    McpTool("context", "/v1/contexts", "Context",
            "One subject's recent history under a character budget. Same as POST /v1/contexts."),
    McpTool("resolve_citation", "/v1/citations/resolve", "Resolve citation",
            "A fact with a page of its verified evidence. Same as POST /v1/citations/resolve."),
    McpTool("report_feedback", "/v1/feedback/record", "Report feedback",
            "Flag a record as wrong without changing it. Same as POST /v1/feedback/record."),
    McpTool("search_passages", "/v1/passages/search", "Search passages",
            "Stored message passages similar to a question. Same as POST /v1/passages/search."),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
EMPTY_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}


def route_view(tool):
    """The routed view function and its V1View class for a tool's path (whatever the URLconf routes now)."""
    view = resolve(tool.path).func
    return view, view.cls


def _json_schema(node):
    """OpenAPI 3.0's `nullable` as JSON Schema's null type, which MCP clients read."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _json_schema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def input_schema(view_cls):
    """The tool's input schema: the route's request body schema from api.openapi, converted."""
    if view_cls.method != "POST":
        return dict(EMPTY_SCHEMA)
    return _json_schema(openapi.request_body_schema(view_cls.op))


def tool_definition(tool):
    _, view_cls = route_view(tool)
    read_only = view_cls.op in READ_ONLY_OPS
    return types.Tool(
        name=tool.name, title=tool.title, description=tool.description, input_schema=input_schema(view_cls),
        annotations=types.ToolAnnotations(title=tool.title, read_only_hint=read_only, destructive_hint=False,
                                          idempotent_hint=read_only or tool.name == "observe",
                                          open_world_hint=False))


def _route_request(outer, tool, view_cls, arguments):
    body = b"" if view_cls.method != "POST" else json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    environ = {key: outer.META[key] for key in _COPIED_META if key in outer.META}
    environ.update({
        "REQUEST_METHOD": view_cls.method, "PATH_INFO": tool.path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
    })
    return WSGIRequest(environ)


def call_tool(outer, tool, arguments):
    """Run the tool's route with the caller's own request credential; its answer as a CallToolResult."""
    view, view_cls = route_view(tool)
    response = view(_route_request(outer, tool, view_cls, arguments or {}))
    text = response.content.decode("utf-8")
    data = json.loads(text)
    if 200 <= response.status_code < 300:
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=data,
                                    is_error=False)
    error = data.get("error", {})
    message = f"{response.status_code} {error.get('code', 'internal')}: {error.get('message', '')}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


# ---------------------------------------------------------------------------------------------
# JSON-RPC.


class RpcError(Exception):
    def __init__(self, code, message, *, http_status=200):
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status


def _dump(model):
    return model.model_dump_json(by_alias=True, exclude_none=True, exclude_unset=True)


def _answer(request_id, result):
    message = types.JSONRPCResponse(jsonrpc="2.0", id=request_id,
                                    result=result.model_dump(by_alias=True, mode="json", exclude_none=True,
                                                             exclude_unset=True))
    return HttpResponse(_dump(message), content_type="application/json")


def _error(request_id, code, message, *, status=200):
    envelope = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
    # Unset fields are left out but a null id is kept: JSON-RPC requires it when the id could not be read.
    body = envelope.model_dump_json(by_alias=True, exclude_unset=True)
    response = HttpResponse(body, status=status, content_type="application/json")
    response["Cache-Control"] = "no-store"
    return response


def _params(model, params):
    try:
        return model.model_validate(params or {})
    except ValidationError:
        raise RpcError(types.INVALID_PARAMS, "invalid params") from None


def _initialize(request, params):
    params = _params(types.InitializeRequestParams, params)
    # The client's version when this server speaks it, else the newest this server speaks; the client decides.
    version = params.protocol_version if params.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS \
        else LATEST_HANDSHAKE_VERSION
    return types.InitializeResult(
        protocol_version=version,
        capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
        server_info=types.Implementation(name=SERVER_NAME, version=SERVER_VERSION),
        instructions="Governed memory: recall answers with cited evidence; observe stores a turn.")


def _list_tools(request, params):
    _params(types.PaginatedRequestParams, params)
    return types.ListToolsResult(tools=[tool_definition(tool) for tool in TOOLS])


def _call(request, params):
    params = _params(types.CallToolRequestParams, params)
    tool = TOOLS_BY_NAME.get(params.name)
    if tool is None:
        raise RpcError(types.INVALID_PARAMS, "unknown tool")
    return call_tool(request, tool, params.arguments)


def _ping(request, params):
    return types.EmptyResult()


METHODS = {"initialize": _initialize, "tools/list": _list_tools, "tools/call": _call, "ping": _ping}


def _decode(raw):
    """The one JSON-RPC message in the body, validated with the mcp types; RpcError otherwise."""
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise RpcError(types.PARSE_ERROR, "parse error", http_status=400) from None
    if not isinstance(value, dict):
        raise RpcError(types.INVALID_REQUEST, "one JSON-RPC message per request; batches are not served",
                       http_status=400)
    # A present id must be a string or an integer (null only on an error response); otherwise the envelope
    # would read as a notification and go unanswered.
    if "id" in value and not _is_id(value["id"]) and not (value["id"] is None and "error" in value):
        raise RpcError(types.INVALID_REQUEST, "invalid request", http_status=400)
    try:
        return types.jsonrpc_message_adapter.validate_python(value)
    except ValidationError:
        raise RpcError(types.INVALID_REQUEST, "invalid request", http_status=400) from None


def _refuse_constant(_name):
    raise ValueError("non-finite number")


def _is_id(value):
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _request_id(raw):
    """The id of a request whose envelope was refused, when it can be read; else null."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    request_id = value.get("id") if isinstance(value, dict) else None
    return request_id if _is_id(request_id) else None


@csrf_exempt
def endpoint(request):
    """POST /mcp. GET gets 405: a stateless server has no stream to open."""
    if request.method != "POST":
        response = error_response(ApiError(405, "method_not_allowed"))
        response["Allow"] = "POST"
        return response
    try:
        caller = authentication.authenticate(request)
    except DatabaseError:
        return error_response(ApiError(503, "no_database_capacity", retry_after=1))
    if caller is None:
        # The same refusal and rate-limited ledger row as any /v1 route, before any MCP happens.
        authentication.record_refused_authentication()
        response = error_response(ApiError(401, "unauthenticated"))
        response["WWW-Authenticate"] = "Bearer"
        return response
    try:
        raw = chunked_body(request)
        if raw is None:
            raw = request.body
    except Exception:  # noqa: BLE001 - RequestDataTooBig and friends
        return _error(None, types.INVALID_REQUEST, "the request could not be read", status=413)
    if len(raw) > MAX_MESSAGE_BYTES:
        return _error(None, types.INVALID_REQUEST, "the request is too large", status=413)
    try:
        message = _decode(raw)
    except RpcError as err:
        return _error(_request_id(raw) if err.code == types.INVALID_REQUEST else None, err.code, err.message,
                      status=err.http_status)
    if not isinstance(message, types.JSONRPCRequest):
        return HttpResponse(status=202)  # notifications and responses need no answer
    method = METHODS.get(message.method)
    if method is None:
        # server/discover included: this is a handshake-era server, and an `auto` client falls back to initialize.
        return _error(message.id, types.METHOD_NOT_FOUND, "method not found")
    version = request.META.get(PROTOCOL_HEADER)
    if message.method != "initialize" and version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return _error(message.id, types.INVALID_REQUEST, "unsupported protocol version", status=400)
    try:
        return _answer(message.id, method(request, message.params))
    except RpcError as err:
        return _error(message.id, err.code, err.message, status=err.http_status)
    except Exception:
        logger.exception("unhandled error in mcp %s", message.method)
        return _error(message.id, types.INTERNAL_ERROR, "internal error", status=500)

"""schemathesis against a live server with notifications on: the four notification routes with both tokens
(the /v1 fuzzer's rules: declared answers only, no server error, a refusal writes nothing but its ledger row),
and /mcp's JSON-RPC envelope: every answer a JSON-RPC message (or 202), never a server error."""
import os

import mcp.types as types
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, Verbosity, given
from hypothesis import settings as hsettings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import status_code_conformance

from api import openapi
from tests.api.test_fuzz import Fuzzer, fuzz_with_both_tokens
from tests.conftest import make_project
from tests.support.processes import WebServer, service_env

pytestmark = pytest.mark.live

MAX_EXAMPLES = int(os.environ.get("MEMOIR_FUZZ_EXAMPLES", "12"))
_JSON = {"application/json": {"schema": {"type": "object"}}}
MCP_DOCUMENT = {
    "openapi": "3.0.3", "info": {"title": "Memoir MCP envelope", "version": "1"},
    "paths": {"/mcp": {"post": {
        "operationId": "mcp",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["jsonrpc", "method"], "additionalProperties": False,
            "properties": {
                "jsonrpc": {"type": "string", "enum": ["2.0"]},
                "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "method": {"type": "string", "enum": [
                    "initialize", "ping", "tools/list", "tools/call", "server/discover", "resources/list"]},
                "params": {"type": "object"},
            }}}}},
        "responses": {"200": {"description": "a JSON-RPC answer", "content": _JSON},
                      "202": {"description": "a notification or a response, accepted"},
                      "400": {"description": "a JSON-RPC error", "content": _JSON},
                      "413": {"description": "too large", "content": _JSON}},
    }}},
}


@pytest.fixture(scope="module")
def enabled_server_url(test_database_name, session_redis):
    env = service_env(test_database_name, session_redis.url, MEMOIR_NOTIFY_DESTINATIONS="localhost,.hooks.example",
                      MEMOIR_NOTIFY_ALLOW_PRIVATE="true")
    server = WebServer(env, workers=1, threads=4).start()
    yield server.url
    server.stop()


def test_fuzz_the_notification_routes_with_both_tokens(enabled_server_url, committed):
    from governance import services

    project, rw_token, _ = make_project(committed)
    with committed():
        _, ro_token = services.issue_credential(project=project, name="fuzz-ro", access="read_only", principal="cli")
    schema = schemathesis.openapi.from_dict(openapi.build_document())
    operations = [result.ok() for result in schema.get_all_operations()]
    operations = [op for op in operations if op.definition.raw.get("x-memoir-op", "").startswith("notification.")]
    assert len(operations) == 4
    fuzzer = Fuzzer(enabled_server_url, project, committed)
    fuzz_with_both_tokens(fuzzer, operations, project, committed, rw_token=rw_token, ro_token=ro_token)
    print(f"\nnotification fuzz: {fuzzer.cases} cases; statuses {dict(sorted(fuzzer.statuses.items()))}")
    assert not fuzzer.failures, f"{len(fuzzer.failures)} failures:\n" + "\n".join(fuzzer.failures[:40])
    assert fuzzer.cases >= len(operations) * 4 and 200 in fuzzer.statuses and 501 not in fuzzer.statuses


def test_fuzz_the_mcp_envelope(enabled_server_url, committed):
    _, token, _ = make_project(committed)
    operation = next(result.ok() for result in schemathesis.openapi.from_dict(MCP_DOCUMENT).get_all_operations())
    failures, statuses = [], {}

    def send(case):
        response = case.call(base_url=enabled_server_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        try:
            case.validate_response(response, checks=[not_a_server_error, status_code_conformance])
            if response.status_code != 202:
                types.jsonrpc_message_adapter.validate_json(response.content)
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - every broken case is reported together
            failures.append(f"{response.status_code} {type(exc).__name__}: {str(exc)[:300]}\n    {case.body!r}")

    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        @hsettings(max_examples=MAX_EXAMPLES * 4, derandomize=True, database=None, deadline=None,
                   phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                   verbosity=Verbosity.quiet)
        @given(case=operation.as_strategy(generation_mode=mode))
        def fuzz(case):
            send(case)

        fuzz()
    print(f"\nmcp fuzz: statuses {dict(sorted(statuses.items()))}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40])
    assert sum(statuses.values()) >= MAX_EXAMPLES * 2 and not any(status >= 500 for status in statuses)

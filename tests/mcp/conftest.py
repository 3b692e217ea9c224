"""A gunicorn process of its own for the MCP tests: its refused-authentication ledger budget (16 rows a minute
per process) is not shared with other tests, so every refused call here leaves its own row."""
import pytest

from tests.support.processes import WebServer, service_env


@pytest.fixture(scope="module")
def mcp_server_url(test_database_name, session_redis):
    server = WebServer(service_env(test_database_name, session_redis.url), workers=1, threads=4).start()
    yield server.url
    server.stop()

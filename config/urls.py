"""Top-level URLs: the /v1 API, the MCP endpoint, health probes and the operator console."""
from django.urls import include, path

from api import docs, fallback, health, mcp
from config import metrics

urlpatterns = [
    path("health", health.health),
    path("ready", health.ready),
    path("metrics", metrics.metrics_view),
    # The API's documentation page, outside api.urls: it is no /v1 route (no credential, no ledger row).
    path("v1/docs", docs.docs_view),
    path("v1", include("api.urls")),
    path("mcp", mcp.endpoint),
    path("", include("console.urls")),
]

handler400 = fallback.bad_request
handler404 = fallback.page_not_found
handler500 = fallback.server_error

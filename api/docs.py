"""GET /v1/docs: Swagger UI over /v1/schema, its assets served locally (drf-spectacular-sidecar). A module of its own:
drf-spectacular's views load DEFAULT_GENERATOR_CLASS, api.openapi's generator, when they are imported."""
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularSwaggerView

from .openapi import refuse_unless_get

_swagger_ui = SpectacularSwaggerView.as_view(url="/v1/schema", title="Memoir v1 API")


@csrf_exempt
def docs_view(request):
    """A plain function, like schema_view: it is public, takes no credential and writes no ledger row."""
    return refuse_unless_get(request) or _swagger_ui(request)

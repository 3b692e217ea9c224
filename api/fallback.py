"""Django's last-resort error views (a disallowed Host, an error outside any view): /v1 requests get the
API's JSON envelope (api.md §2); every other path keeps Django's own pages."""
from django.views import defaults

from .errors import ApiError, error_response


def _is_api(request):
    return request.path == "/v1" or request.path.startswith("/v1/")


def bad_request(request, exception, template_name=defaults.ERROR_400_TEMPLATE_NAME):
    if _is_api(request):
        return error_response(ApiError(400, "invalid_body", "the request could not be read"))
    return defaults.bad_request(request, exception, template_name)


def page_not_found(request, exception, template_name=defaults.ERROR_404_TEMPLATE_NAME):
    if _is_api(request):
        return error_response(ApiError(404, "not_found"))
    return defaults.page_not_found(request, exception, template_name)


def server_error(request, template_name=defaults.ERROR_500_TEMPLATE_NAME):
    if _is_api(request):
        return error_response(ApiError(500, "internal"))
    return defaults.server_error(request, template_name)

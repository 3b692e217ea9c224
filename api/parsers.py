"""The strict JSON body (api.md §3) as DRF's parser for /v1: every body goes through decode_body(), whatever its
Content-Type, and an empty or chunked body reaches it too (V1Request)."""
import io

from django.utils.datastructures import MultiValueDict
from rest_framework.parsers import BaseParser
from rest_framework.request import Request

from .errors import ApiError
from .jsonbody import MAX_BODY_BYTES, decode_body


class StrictJSONParser(BaseParser):
    """One JSON object or 400 invalid_body. The media type is not checked: clients send bodies as
    application/x-www-form-urlencoded (curl -d) or with none, and the contract reads them all as JSON."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return decode_body(stream.read(MAX_BODY_BYTES + 1))


def chunked_body(request):
    """The body of a chunked request (no Content-Length), which Django reads as empty; None otherwise.

    Only when the server has de-chunked the stream and marks it terminated (gunicorn does), so reading to
    the end is safe; one byte past the limit is read so an oversize body is still refused."""
    meta = request.META
    if meta.get("CONTENT_LENGTH") or not meta.get("wsgi.input_terminated"):
        return None
    if "chunked" not in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None
    return meta["wsgi.input"].read(MAX_BODY_BYTES + 1)


class V1Request(Request):
    """DRF's request, except that the body always goes to the view's one parser: DRF would answer an empty body
    with {} and never read a chunked one (DRF 3.18's `_parse` is the one hook for that)."""

    def _parse(self):
        try:
            raw = chunked_body(self._request)
            if raw is None:
                raw = self._request.body
        except Exception as exc:  # RequestDataTooBig, RawPostDataException and friends
            raise ApiError(400, "invalid_body") from exc
        return self.parsers[0].parse(io.BytesIO(raw), self.content_type, self.parser_context), MultiValueDict()

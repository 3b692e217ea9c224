"""Helpers for the security tests: a /v1 client inside the test transaction, the routed views, and a
normaliser that lets two answers be compared while their generated ids and times differ."""
import json
import re

from django.test import Client

from tests.conftest import unique_name

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")


def routes():
    """(path, view class or None for a plain function view) for every /v1 route in api/urls.py, the catch-all
    excluded."""
    from api import urls

    out = []
    for pattern in urls.urlpatterns:
        view = getattr(pattern.callback, "view_class", None)
        if view is not None and view.op == "route.unknown":
            continue
        out.append(("/v1" + str(pattern.pattern), view))
    return out


def new_project(access="read_write"):
    from governance import services

    name = unique_name()
    services.create_project(name=name, principal="cli")
    credential, token = services.issue_credential(project=name, name="sec", access=access, principal="cli")
    return name, token, str(credential.credential_id)


def call(token, method, path, body=None, *, raw=None):
    """One /v1 request through the whole Django stack; returns (status, parsed body or raw text, response)."""
    data = raw if raw is not None else (b"" if body is None else json.dumps(body))
    response = Client().generic(method, path, data=data, content_type="application/json",
                                HTTP_AUTHORIZATION=f"Bearer {token}")
    try:
        parsed = json.loads(response.content)
    except ValueError:
        parsed = response.content.decode(errors="replace")
    return response.status_code, parsed, response


def normalise(value, names=()):
    """Generated ids, times and the caller's own project names replaced, so equal behaviour compares equal."""
    text = json.dumps(value, sort_keys=True)
    for name in names:
        text = text.replace(name, "<project>")
    text = UUID_RE.sub("<uuid>", text)
    text = TS_RE.sub("<ts>", text)
    return _unordered(json.loads(text))


def _unordered(value):
    # Lists ordered by generated ids cannot keep their order across projects: compare them as multisets.
    if isinstance(value, dict):
        return {key: _unordered(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted((_unordered(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return value

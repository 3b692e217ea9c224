"""The OpenAPI document (api.md §7.10): the checked-in copy is what the code generates, every /v1 route is
in it with a request schema taken from its contract Body, real responses conform to it, GET /v1/schema serves it
without a credential or a ledger row, and the API refuses to start when a route's op is not in the ledger's
closed list (data-model.md §6)."""
import json
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import schemathesis
from django.conf import settings
from django.db import connection
from django.test import Client, override_settings
from openapi_spec_validator import validate

from api import contract, openapi
from api.apps import check_route_ops, route_views
from api.base import UnknownRouteView, V1View
from core.audit import OPERATIONS
from formation.driver import drain
from formation.rules import RulesProposer
from memory import embedders, generations
from tests.fakeembeddings import fake_embeddings

ROOT = Path(__file__).resolve().parent.parent.parent
CHECKED_IN = ROOT / "docs" / "openapi.json"


@pytest.fixture(scope="module")
def document():
    return openapi.build_document()


def _routes():
    """(path, method, view class) for every routed V1View but the catch-all."""
    from api import urls

    out = []
    for pattern in urls.urlpatterns:
        cls = getattr(pattern.callback, "cls", None)
        if isinstance(cls, type) and issubclass(cls, V1View) and not issubclass(cls, UnknownRouteView):
            out.append(("/v1" + str(pattern.pattern), cls.method.lower(), cls))
    return out


def test_the_checked_in_copy_is_what_the_code_generates(document):
    assert CHECKED_IN.read_bytes() == openapi.render(document), (
        "docs/openapi.json is stale: if the contract change is intended, run "
        "`.venv/bin/python manage.py memoir_openapi --write` and commit the result")


def test_the_refresh_command_checks_and_writes(tmp_path):
    done = subprocess.run([sys.executable, "manage.py", "memoir_openapi", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = subprocess.run([sys.executable, "manage.py", "memoir_openapi"], cwd=ROOT, capture_output=True,
                             timeout=120).stdout
    assert printed == CHECKED_IN.read_bytes()


def test_the_document_is_valid_openapi_3(document):
    assert document["openapi"] == "3.0.3"
    validate(document)  # raises on any structural error


def test_every_v1_route_is_documented_with_its_op_and_method(document):
    routes = _routes()
    assert len(routes) >= 34
    documented = {(path, method): item for path, methods in document["paths"].items()
                  for method, item in methods.items()}
    for path, method, cls in routes:
        assert (path, method) in documented, f"{method.upper()} {path} is missing from the document"
        operation = documented[path, method]
        assert operation["x-memoir-op"] == cls.op
        assert operation["security"] == [{"bearerAuth": []}]
        assert operation["x-memoir-read-only"] == (cls.op in openapi.READ_ONLY_OPS)
    v1 = {key for key in documented if key[0].startswith("/v1/") and key[0] != "/v1/schema"}
    assert v1 == {(path, method) for path, method, _ in routes}
    for path in ("/health", "/ready", "/v1/schema"):
        assert documented[path, "get"]["security"] == []
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http", "scheme": "bearer", "description": "mem_ followed by 43 base64url characters"}


def _shape_names(spec):
    """The field tree of a contract body: {name: subtree}, arrays as {"[]": subtree}, scalars as None."""
    if isinstance(spec, type) and issubclass(spec, contract.Body):
        spec = spec()
    if isinstance(spec, contract.Body):
        return {name: _shape_names(field) for name, field in spec.fields.items()}
    if isinstance(spec, contract.ListOf):
        return {"[]": _shape_names(spec.child)}
    return None


def _schema_names(schema):
    if schema.get("type") == "object":
        assert schema["additionalProperties"] is False  # unknown fields are invalid_body at every level
        return {name: _schema_names(sub) for name, sub in schema["properties"].items()}
    if schema.get("type") == "array":
        return {"[]": _schema_names(schema["items"])}
    return None


def test_request_bodies_are_the_view_shapes(document):
    for path, method, cls in _routes():
        operation = document["paths"][path][method]
        if method == "get" or not cls.reads_body:
            assert "requestBody" not in operation
            continue
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
        assert _schema_names(schema) == _shape_names(cls.request_body), path
        # null means omitted: exactly the fields that are not required accept it.
        for name, sub in schema["properties"].items():
            assert sub.get("nullable", False) == (name not in schema.get("required", ())), (path, name)


def test_every_documented_error_uses_the_one_error_shape(document):
    responses = document["components"]["responses"]
    for path, methods in document["paths"].items():
        for operation in methods.values():
            for status, response in operation["responses"].items():
                if int(status) < 400 or path == "/ready":
                    continue
                if "$ref" in response:
                    response = responses[response["$ref"].rsplit("/", 1)[1]]
                schema = response["content"]["application/json"]["schema"]
                assert schema["required"] == ["error"] and schema["additionalProperties"] is False
                error = schema["properties"]["error"]
                assert error["required"] == ["code", "message"]
                assert error["properties"]["code"]["enum"], (path, status)
            codes = {int(s) for s in operation["responses"]}
            if path.startswith("/v1/") and path != "/v1/schema":
                assert {401, 405, 429, 500, 503} <= codes, path


def test_documented_5xx_are_exactly_the_contract_ones(document):
    """501 only on notifications; 503 *_unavailable only on the three search routes (api.md §2)."""
    def codes(path, status):
        response = document["paths"][path]["post"]["responses"][status]
        if "$ref" in response:
            response = document["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
        return response["content"]["application/json"]["schema"]["properties"]["error"]["properties"]["code"]["enum"]

    assert codes("/v1/notifications/endpoints/list", "501") == ["notifications_unavailable"]
    assert codes("/v1/passages/search", "503") == ["no_database_capacity", "passage_unavailable"]
    assert codes("/v1/reports/candidates", "503") == ["no_database_capacity", "report_candidates_unavailable"]
    assert codes("/v1/recalls", "503") == ["no_database_capacity"]
    assert "501" not in document["paths"]["/v1/recalls"]["post"]["responses"]


def test_every_routed_op_is_in_the_ledger_list():
    views = route_views(__import__("config.urls").urls.urlpatterns)
    assert {cls.op for cls in views} <= set(OPERATIONS)
    check_route_ops()  # the real URLconf passes


def test_the_check_names_an_op_the_ledger_cannot_record():
    from django.core.exceptions import ImproperlyConfigured
    from django.urls import path

    class Rogue(V1View):
        op = "rogue.op"

    with pytest.raises(ImproperlyConfigured, match="'rogue.op'"):
        check_route_ops([path("v1/rogue", Rogue.as_view())])


_ROGUE_URLS = """
from django.urls import include, path

from api.base import V1View


class Rogue(V1View):
    op = "rogue.op"


urlpatterns = [path("v1/rogue", Rogue.as_view()), path("", include("config.urls"))]
"""
_START = """
import django
from django.conf import settings

settings.ROOT_URLCONF = "{urlconf}"
django.setup()
print("started")
"""


def _start(tmp_path, urlconf):
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.test", "PATH": "/usr/bin:/bin",
           "PYTHONPATH": f"{ROOT}:{tmp_path}"}
    return subprocess.run([sys.executable, "-c", _START.format(urlconf=urlconf)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_api_refuses_to_start_with_a_route_op_missing_from_the_ledger_list(tmp_path):
    (tmp_path / "rogue_urls.py").write_text(_ROGUE_URLS)
    rogue = _start(tmp_path, "rogue_urls")
    assert rogue.returncode != 0 and "started" not in rogue.stdout
    assert "ImproperlyConfigured" in rogue.stderr and "'rogue.op'" in rogue.stderr
    # The same start with the real URLconf succeeds, so the refusal is the op check's.
    clean = _start(tmp_path, "config.urls")
    assert clean.returncode == 0 and "started" in clean.stdout, clean.stderr


# --- real responses conform ------------------------------------------------------------------


class Conformance:
    """Calls /v1 in-process and checks each answer against the document: a declared status and a body
    that validates against that status's schema."""

    def __init__(self, document, token):
        self.schema = schemathesis.openapi.from_dict(document)
        self.token = token
        self.client = Client()
        self.seen = set()

    def call(self, path, body=None, *, method="POST", expect=200):
        if method == "GET":
            response = self.client.get("/v1" + path, HTTP_AUTHORIZATION=f"Bearer {self.token}")
        else:
            response = self.client.post("/v1" + path, data=json.dumps(body), content_type="application/json",
                                        HTTP_AUTHORIZATION=f"Bearer {self.token}")
        operation = self.schema["/v1" + path][method]
        assert str(response.status_code) in operation.definition.raw["responses"], (path, response.status_code)
        assert response.status_code == expect, (path, response.content)
        converted = httpx.Response(response.status_code, headers=list(response.headers.items()),
                                   content=response.content,
                                   request=httpx.Request(method, "http://testserver/v1" + path))
        converted.elapsed = timedelta(0)
        operation.validate_response(converted)
        self.seen.add((path, response.status_code))
        return response.json()


def test_real_responses_conform_to_the_document(document, new_project):
    project, token = new_project
    api = Conformance(document, token)
    subject = "alice"
    turn = api.call("/observations", {
        "idempotency_key": str(uuid.uuid4()), "data_subject_id": subject,
        "messages": [{"role": "user", "content": "I live in Dublin. I work at Acme."},
                     {"role": "assistant", "content": "Noted."}]}, expect=201)
    drain(project, proposer=RulesProposer())
    api.call("/freshness", method="GET")
    bundle = api.call("/recalls", {"question": "Where do I live and where do I work?", "data_subject_id": subject})
    assert bundle["facts"] and bundle["anchors"]
    fact_id = bundle["facts"][0]["fact_id"]
    api.call("/recalls", {"question": "Dublin", "surfaces": ["facts", "reports", "passages"], "themes": True})
    context = api.call("/contexts", {"data_subject_id": subject})
    assert context["turns"]
    citation = api.call("/citations/resolve", {"id": fact_id, "limit": 1})
    assert citation["evidence"] and citation["status"] == "current"
    with connection.cursor() as cursor:
        cursor.execute("SELECT chunk_id::text FROM turn_message WHERE observation_id = %s AND ordinal = 0",
                       [turn["id"]])
        chunk_id = cursor.fetchone()[0]
    window = api.call("/messages/get", {"chunk_id": chunk_id, "byte_limit": 8})
    assert "next_byte_start" in window
    api.call("/messages/get", {"chunk_id": chunk_id, "byte_start": window["next_byte_start"],
                               "expected_digest": window["content_digest"]})
    api.call("/messages/get", {"chunk_id": chunk_id, "expected_digest": "0" * 64}, expect=409)
    records = api.call("/records/list", {"limit": 1})
    assert records["records"] and "next" in records
    api.call("/records/list", {"data_subject_id": subject, "after": records["next"]})
    api.call("/records/history", {"id": fact_id})
    api.call("/entities/list", {"limit": 1})
    entities = api.call("/entities/list", {})["entities"]
    for entity in entities:
        api.call("/entities/get", {"id": entity["id"]})  # named and speaker entities
    named = [e["id"] for e in entities if e["identity_kind"] == "named"]
    api.call("/entities/purge", {"id": named[0], "reason": "conformance preview"})

    asserted = api.call("/records/assert", {"records": [
        {"idempotency_key": str(uuid.uuid4()), "subject": "Bob", "predicate": "lives_in", "object": "Paris",
         "statement": "Bob lives in Paris.", "data_subject_id": "bob"},
        {"idempotency_key": str(uuid.uuid4()), "subject": "Carol", "predicate": "lives_in", "object": "Rome",
         "statement": "Carol lives in Rome.", "valid_from": "2026-01-01T00:00:00Z"}]})["records"]
    bob, carol = asserted
    api.call("/citations/resolve", {"id": bob["id"]})  # curated evidence carries authored_by
    feedback = api.call("/feedback/record", {"record_id": bob["id"], "note": "Bob moved.",
                                             "proposed_object": "Lyon"})
    api.call("/feedback/list", {"record_id": bob["id"], "open_only": True})
    promoted = api.call("/feedback/promote", {"id": feedback["id"], "expected_version": bob["version"]})
    api.call("/feedback/list", {"limit": 1})
    api.call("/feedback/promote", {"id": feedback["id"], "expected_version": bob["version"]}, expect=409)
    history = api.call("/records/history", {"id": bob["id"]})
    assert history["previous"] or history["current"]
    api.call("/citations/resolve", {"id": promoted["replacement_record_id"]})
    corrected = api.call("/records/correct", {"records": [
        {"id": carol["id"], "expected_version": carol["version"], "object": "Milan",
         "statement": "Carol lives in Milan."}]})["records"][0]
    api.call("/records/retract", {"records": [{"id": corrected["id"], "expected_version": corrected["version"]}]})
    api.call("/citations/resolve", {"id": corrected["id"]})  # a retracted record shows its retraction
    api.call("/records/history", {"id": corrected["id"]})

    registered = api.call("/subjects/register", {"idempotency_key": str(uuid.uuid4()),
                                                 "external_reference": "crm:1", "label": "Alice"})
    api.call("/subjects/get", {"external_reference": "crm:1"})
    api.call("/subjects/update", {"id": registered["id"], "expected_version": registered["version"],
                                  "label": "Alice A."})
    api.call("/subjects/list", {"limit": 0})
    artifact_id = str(uuid.uuid4())
    put = api.call("/artifacts/put", {"id": artifact_id, "data_subject_id": subject, "kind": "state",
                                      "name": "session", "content": "aGVsbG8="})
    api.call("/artifacts/get", {"id": artifact_id, "data_subject_id": subject})
    api.call("/artifacts/list", {"kind": "state", "name_prefix": "sess"})
    api.call("/artifacts/delete", {"id": artifact_id, "expected_version": put["version"]})
    api.call("/artifacts/get", {"id": artifact_id}, expect=404)

    api.call("/passages/search", {"question": "Dublin"})
    api.call("/entities/candidates", {"question": "Dublin"}, expect=503)  # no generation yet
    with fake_embeddings() as fake, override_settings(
            MEMOIR_EMBEDDER="endpoint", MEMOIR_EMBEDDING_ENDPOINT=fake.base_url, MEMOIR_EMBEDDING_MODEL="fake-bag",
            MEMOIR_EMBEDDING_ALLOWLIST=fake.authority):
        embedders.reset_configured()
        try:
            generations.start(project=project, principal="cli", principal_kind="operator", auto_activate=True)
            while generations.follow(project, budget=30):
                pass
            api.call("/entities/candidates", {"question": "Dublin", "limit": 3})
            api.call("/entities/candidates", {"question": "Dublin", "limit": 1, "candidates": 5})
            api.call("/recalls", {"question": "which city?", "surfaces": ["facts", "passages"]})
        finally:
            embedders.reset_configured()
    api.call("/notifications/endpoints/list", {}, expect=501)
    with override_settings(MEMOIR_NOTIFY_DESTINATIONS=["localhost"], MEMOIR_NOTIFY_ALLOW_PRIVATE=True):
        endpoint = api.call("/notifications/endpoints/register", {"url": "https://localhost:9/conformance"})
        api.call("/notifications/endpoints/register", {"url": "https://localhost:9/conformance"}, expect=409)
        api.call("/notifications/endpoints/register", {"url": "http://localhost:9/conformance"}, expect=400)
        api.call("/notifications/endpoints/list", {})
        api.call("/notifications/deliveries/list", {"limit": 5})
        api.call("/notifications/endpoints/disable", {"id": endpoint["id"]})
        api.call("/notifications/endpoints/disable", {"id": str(uuid.uuid4())}, expect=404)
    api.call("/exports", {"data_subject_id": subject})
    api.call("/exports", {"source_observation_ids": [turn["id"]]})
    receipt = api.call("/erasures", {"data_subject_id": subject, "reason": "conformance"})
    assert receipt["clean"] is True
    api.call("/citations/resolve", {"id": fact_id}, expect=404)
    api.call("/recalls", {"question": ""}, expect=400)
    api.call("/records/assert", {"records": []}, expect=400)
    # Every route with a success answer in v1 was answered successfully at least once and conformed.
    ok = {path for path, status in api.seen if status < 300}
    unavailable = {path for path, _, cls in _routes() if cls.doc.success is None}
    assert ok == {path[len("/v1"):] for path, _, _ in _routes()} - {p[len("/v1"):] for p in unavailable}


# --- served ----------------------------------------------------------------------------------


def _ledger_size():
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM audit_entry")
        return cursor.fetchone()[0]


@pytest.mark.live
def test_the_schema_is_served_without_a_credential_or_a_ledger_row(live_server_url, test_database_name,
                                                                   committed):
    assert test_database_name == settings.DATABASES["default"]["TEST"]["NAME"]
    with committed():
        before = _ledger_size()
    plain = httpx.get(live_server_url + "/v1/schema", timeout=30)
    bad_token = httpx.get(live_server_url + "/v1/schema", headers={"Authorization": "Bearer nope"}, timeout=30)
    refused = httpx.post(live_server_url + "/v1/schema", content=b"{}", timeout=30)
    with committed():
        after = _ledger_size()
    slashed = httpx.get(live_server_url + "/v1/schema/", headers={"Authorization": "Bearer nope"}, timeout=30)
    assert plain.status_code == 200 and bad_token.status_code == 200
    assert plain.headers["content-type"] == "application/json; charset=utf-8"
    assert plain.content == CHECKED_IN.read_bytes() == bad_token.content
    assert (refused.status_code, refused.json()["error"]["code"], refused.headers["allow"]) == (
        405, "method_not_allowed", "GET")
    assert after == before
    assert slashed.status_code == 401  # the slashed form is an unknown path, answered after authentication

"""The request-contract layer (api.contract): what each field refuses and with which code, check order, and that the
JSON schema a Body publishes accepts and refuses what the Body itself does."""
import jsonschema
import pytest
from drf_spectacular.plumbing import ComponentRegistry
from rest_framework.views import APIView

from api import contract
from api.contract import Body, Integer, ListOf, Text, Timestamp, Uuid
from api.errors import ApiError
from api.openapi import V1AutoSchema

UUID = "0b5e4a3c-9a1d-4c7e-8f00-123456789abc"


class Item(Body):
    role = Text(required=True, choices=("user", "tool"))
    n = Integer(min_value=0, max_value=3)


class Sample(Body):
    code = "invalid_subject"
    one_of = (("id", "reference"),)
    id = Uuid(empty_ok=True)
    reference = Text(max_bytes=4, empty_or_non_blank=True)
    items = ListOf(Item(), max_items=2)
    at = Timestamp()
    late = Text(max_bytes=3, late=True, code="no_subject")


def refused(body_class, data):
    with pytest.raises(ApiError) as caught:
        contract.validate(body_class, data)
    return caught.value.code


def test_valid_bodies_come_back_converted_with_nulls_left_out():
    body = contract.validate(Sample, {"id": UUID, "reference": None, "at": "2026-01-02T03:04:05.1234567Z",
                                      "items": [{"role": "tool", "n": 3}]})
    assert body["id"] == UUID and "reference" not in body
    assert body["at"].isoformat() == "2026-01-02T03:04:05.123456+00:00"
    assert body["items"] == [{"role": "tool", "n": 3}]


@pytest.mark.parametrize("data", [
    {"id": UUID, "unknown": 1},
    {"id": 7},
    {"id": UUID, "items": [None]},
    {"id": UUID, "items": [{"role": "user", "extra": True}]},
    {"id": UUID, "items": [{"role": "user", "n": True}]},
    {"id": UUID, "at": "2026-02-30T00:00:00Z"},
    # a type error anywhere beats a broken rule anywhere else
    {"id": "not-a-uuid", "reference": "", "items": [{"role": 5}]},
], ids=["unknown field", "wrong type", "null element", "unknown nested field", "bool is not int", "bad timestamp",
        "type error wins"])
def test_shape_errors_are_invalid_body(data):
    assert refused(Sample, data) == "invalid_body"


@pytest.mark.parametrize("data,code", [
    ({"id": "not-a-uuid"}, "invalid_subject"),
    ({"reference": "12345"}, "invalid_subject"),  # 5 bytes over a 4-byte cap
    ({"reference": "é" * 3}, "invalid_subject"),  # 6 bytes in 3 characters
    ({"reference": " \u3000"}, "invalid_subject"),
    ({"reference": "a\x00"}, "invalid_subject"),
    ({"id": UUID, "items": [{"role": "bot"}]}, "invalid_subject"),  # a nested Body's rules are the route's too
    ({"id": UUID, "items": [{}]}, "invalid_subject"),
    ({"id": UUID, "items": [{"role": "user"}] * 3}, "invalid_subject"),
    ({}, "invalid_subject"),  # neither of one_of
    ({"id": UUID, "reference": "ab"}, "invalid_subject"),  # both
    ({"id": UUID, "late": "abcd"}, "no_subject"),  # a field may name its own code
])
def test_broken_rules_are_the_route_code(data, code):
    assert refused(Sample, data) == code


def test_a_late_rule_waits_for_every_other_field():
    # The late field's cap is broken and so is an ordinary rule: the ordinary one answers first.
    assert refused(Sample, {"id": "nope", "late": "abcdef"}) == "invalid_subject"
    assert refused(Sample, {"id": UUID, "late": "abcdef"}) == "no_subject"


SCHEMA_CASES = [
    {"id": UUID}, {"reference": "ab"}, {"id": "", "reference": "ab"}, {"id": UUID, "reference": ""},
    {}, {"id": UUID, "reference": "ab"}, {"id": "", "reference": ""}, {"id": None, "reference": "ab"},
    {"id": UUID, "items": []}, {"id": UUID, "items": [{"role": "user", "n": 4}]}, {"reference": "12345"},
    {"id": UUID, "at": "2026-01-02T03:04:05Z"},
]


@pytest.mark.parametrize("data", SCHEMA_CASES)
def test_the_published_schema_agrees_with_the_body(data):
    auto = V1AutoSchema()
    auto.registry = ComponentRegistry()
    auto.view = APIView()
    auto.view.request = None
    schema = auto._map_serializer(Sample, "request")
    try:
        contract.validate(Sample, data)
        accepted = True
    except ApiError:
        accepted = False
    valid = jsonschema.Draft4Validator(_as_json_schema(schema)).is_valid(data)
    assert valid == accepted, data


def _as_json_schema(node):
    if isinstance(node, list):
        return [_as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _as_json_schema(value) for key, value in node.items() if key not in ("nullable", "format")}
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("nullable") and "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out

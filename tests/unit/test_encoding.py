"""Unit tests for core.encoding (api.md §4) and the api.errors response writers.

Pure Python, no database. The response tests need only django.http, which builds these
responses without settings; they skip cleanly if that ever changes.
"""

import json
import math
import random
import struct
from datetime import UTC, datetime, timedelta, timezone

import pytest
from psycopg.types.range import Range

from api.errors import DEFAULT_MESSAGES, ApiError
from core.encoding import format_float32, format_range, format_ts

# --- timestamps ------------------------------------------------------------------------------


def test_format_ts_whole_seconds():
    assert format_ts(datetime(2026, 3, 4, 10, 12, tzinfo=UTC)) == "2026-03-04T10:12:00Z"


@pytest.mark.parametrize(
    ("micro", "text"),
    [
        (500000, "2026-03-04T10:12:00.5Z"),
        (120000, "2026-03-04T10:12:00.12Z"),
        (123456, "2026-03-04T10:12:00.123456Z"),
        (1, "2026-03-04T10:12:00.000001Z"),
        (10, "2026-03-04T10:12:00.00001Z"),
    ],
)
def test_format_ts_fraction_without_trailing_zeros(micro, text):
    assert format_ts(datetime(2026, 3, 4, 10, 12, 0, micro, tzinfo=UTC)) == text


def test_format_ts_converts_to_utc():
    ist = timezone(timedelta(hours=5, minutes=30))
    assert format_ts(datetime(2026, 3, 4, 15, 42, tzinfo=ist)) == "2026-03-04T10:12:00Z"
    west = timezone(timedelta(hours=-3))
    assert (
        format_ts(datetime(2026, 12, 31, 22, 0, tzinfo=west)) == "2027-01-01T01:00:00Z"
    )


def test_format_ts_naive_taken_as_utc():
    assert format_ts(datetime(2026, 3, 4, 10, 12)) == "2026-03-04T10:12:00Z"


def test_format_ts_pads_small_years():
    assert format_ts(datetime(9, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0009-01-02T03:04:05Z"


def test_format_ts_none():
    assert format_ts(None) is None


def test_format_ts_round_trips_through_request_parser():
    from api.jsonbody import parse_timestamp

    for text in [
        "2026-03-04T10:12:00Z",
        "2026-03-04T10:12:00.5Z",
        "1999-12-31T23:59:59.999999Z",
    ]:
        assert format_ts(parse_timestamp(text)) == text


# --- float32 ---------------------------------------------------------------------------------


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


@pytest.mark.parametrize(
    ("stored", "printed"),
    [
        (0.9, "0.9"),
        (0.1, "0.1"),
        (0.75, "0.75"),
        (0.95, "0.95"),
        (0.123, "0.123"),
        (1 / 3, "0.33333334"),
        (0.0, "0"),
        (1.0, "1"),
        (16777217.0, "16777216"),  # not a float32; the nearest one is printed
        (1e-45, "1e-45"),  # smallest subnormal
        (3.4028234663852886e38, "3.4028235e+38"),
    ],
)
def test_format_float32_examples(stored, printed):
    value = format_float32(f32(stored))
    assert json.dumps(value) == printed
    assert f32(value) == f32(stored)


def test_format_float32_from_postgres_real_readback():
    assert format_float32(0.8999999761581421) == 0.9
    assert (
        json.dumps(
            {"confidence": format_float32(0.8999999761581421)}, separators=(",", ":")
        )
        == '{"confidence":0.9}'
    )


def test_format_float32_integral_values_are_ints():
    assert type(format_float32(0.0)) is int
    assert type(format_float32(1.0)) is int
    assert type(format_float32(0.5)) is float


def test_format_float32_is_shortest_round_trip():
    rng = random.Random(20260304)
    for _ in range(3000):
        bits = rng.getrandbits(32)
        (value,) = struct.unpack("<f", struct.pack("<I", bits))
        if not math.isfinite(value):
            continue
        out = format_float32(value)
        assert f32(out) == value
        digits = len(
            f"{out:.9e}".split("e")[0].replace(".", "").replace("-", "").rstrip("0")
        )
        if digits > 1:  # one digit fewer must not identify the same float32
            assert f32(float(f"{value:.{digits - 1}g}")) != value


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_format_float32_refuses_non_finite(bad):
    with pytest.raises(ValueError):
        format_float32(bad)


# --- ranges ----------------------------------------------------------------------------------

T0 = datetime(2026, 3, 4, 10, 12, tzinfo=UTC)
T1 = datetime(2026, 3, 5, 0, 0, 0, 250000, tzinfo=UTC)


def test_format_range_closed_half_open():
    assert format_range(Range(T0, T1, "[)")) == {
        "from": "2026-03-04T10:12:00Z",
        "until": "2026-03-05T00:00:00.25Z",
        "from_inclusive": True,
        "until_inclusive": False,
    }


def test_format_range_open_upper_has_null_until():
    out = format_range(Range(T0, None, "[)"))
    assert out == {
        "from": "2026-03-04T10:12:00Z",
        "until": None,
        "from_inclusive": True,
        "until_inclusive": False,
    }
    assert list(out) == ["from", "until", "from_inclusive", "until_inclusive"]


@pytest.mark.parametrize(
    ("bounds", "from_inc", "until_inc"),
    [
        ("[]", True, True),
        ("(]", False, True),
        ("()", False, False),
        ("[)", True, False),
    ],
)
def test_format_range_bounds(bounds, from_inc, until_inc):
    out = format_range(Range(T0, T1, bounds))
    assert (out["from_inclusive"], out["until_inclusive"]) == (from_inc, until_inc)


def test_format_range_unbounded_lower():
    out = format_range(Range(None, T1, "[)"))
    assert out["from"] is None and out["from_inclusive"] is False


def test_format_range_empty():
    out = format_range(Range(empty=True))
    assert out == {
        "from": None,
        "until": None,
        "from_inclusive": False,
        "until_inclusive": False,
    }


def test_format_range_none():
    assert format_range(None) is None


# --- error and JSON responses ----------------------------------------------------------------


def test_api_error_defaults():
    err = ApiError(400, "invalid_body")
    assert (err.status, err.code, err.retry_after) == (400, "invalid_body", None)
    assert err.message == "the request body could not be read"
    assert ApiError(401, "unauthenticated").message == "a credential is required"
    assert ApiError(429, "rate_limited").retry_after == 1
    assert ApiError(503, "no_database_capacity").retry_after == 1
    assert ApiError(429, "storage_capacity").retry_after is None
    assert ApiError(400, "invalid_turn", "custom").message == "custom"
    assert ApiError(500, "internal", retry_after=7).retry_after == 7


def test_every_spec_error_code_has_a_message():
    codes = [
        "invalid_body",
        "invalid_turn",
        "invalid_question",
        "invalid_recall_controls",
        "invalid_context",
        "no_subject",
        "invalid_erasure",
        "invalid_export",
        "invalid_citation",
        "invalid_record_page",
        "invalid_entity_page",
        "invalid_message_window",
        "invalid_passage_query",
        "invalid_entity_candidate_query",
        "invalid_report_candidate_query",
        "invalid_record_mutation",
        "invalid_feedback",
        "invalid_subject",
        "invalid_artifact",
        "invalid_destination",
        "unauthenticated",
        "forbidden",
        "not_found",
        "method_not_allowed",
        "idempotency_conflict",
        "record_conflict",
        "subject_conflict",
        "artifact_conflict",
        "source_changed",
        "feedback_already_promoted",
        "record_mutation_limit",
        "citation_limit",
        "export_too_large",
        "rate_limited",
        "storage_capacity",
        "internal",
        "notifications_unavailable",
        "no_database_capacity",
        "passage_unavailable",
        "entity_candidates_unavailable",
        "report_candidates_unavailable",
    ]
    assert set(codes) <= set(DEFAULT_MESSAGES)


@pytest.fixture
def responses():
    """The response writers, or a clean skip if django.http cannot build them here."""
    from django.core.exceptions import ImproperlyConfigured

    from api import errors

    try:
        errors.json_response({})
    except ImproperlyConfigured:
        pytest.skip("Django settings are not available")
    return errors


def test_error_response_shape(responses):
    response = responses.error_response(ApiError(404, "not_found"))
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Cache-Control"] == "no-store"
    assert not response.has_header("Retry-After")
    assert not response.has_header("WWW-Authenticate")
    assert json.loads(response.content) == {
        "error": {"code": "not_found", "message": "not found"}
    }


def test_error_response_retry_after(responses):
    response = responses.error_response(ApiError(429, "rate_limited"))
    assert response.status_code == 429
    assert response["Retry-After"] == "1"
    body = json.loads(response.content)
    assert body == {"error": {"code": "rate_limited", "message": "too many requests"}}


def test_json_response_compact_utf8(responses):
    response = responses.json_response({"a": "é", "b": [1, None]}, status=201)
    assert response.status_code == 201
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response.content == '{"a":"é","b":[1,null]}'.encode()


def test_json_response_refuses_nan(responses):
    with pytest.raises(ValueError):
        responses.json_response({"confidence": math.nan})

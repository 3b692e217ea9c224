"""Unit tests for api.jsonbody and the type layer of api.contract: every invalid_body case of api.md §3 and the
route helpers."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from api import contract
from api.contract import Body, Boolean, Integer, ListOf, Text, Timestamp
from api.errors import ApiError
from api.jsonbody import MAX_BODY_BYTES, decode_body, parse_timestamp
from core.strings import canonical_uuid, has_nul, is_blank, utf8_len
from core.text import WHITE_SPACE


def assert_invalid_body(raw: bytes) -> None:
    with pytest.raises(ApiError) as info:
        decode_body(raw)
    assert (info.value.status, info.value.code) == (400, "invalid_body")
    assert info.value.message == "the request body could not be read"


def check_shape(value, shape):
    """The type layer alone: a contract whose fields carry no rules (TURN and PAGE below)."""
    return contract.validate(shape, value)


def assert_shape_refused(value: dict, shape: type[Body]) -> None:
    with pytest.raises(ApiError) as info:
        check_shape(value, shape)
    assert (info.value.status, info.value.code) == (400, "invalid_body")


def nested(depth: int) -> bytes:
    """An object whose nesting depth (counting the top object as 1) is exactly `depth`."""
    return b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


# --- §3 item 1: exactly one JSON object -------------------------------------------------------


def test_empty_body_refused():
    assert_invalid_body(b"")


def test_whitespace_only_body_refused():
    assert_invalid_body(b"  \n\t ")


def test_null_refused():
    assert_invalid_body(b"null")


def test_array_refused():
    assert_invalid_body(b'[{"question":"x"}]')


@pytest.mark.parametrize("raw", [b"1", b'"text"', b"true", b"false", b"1.5"])
def test_scalar_refused(raw):
    assert_invalid_body(raw)


@pytest.mark.parametrize("raw", [b"{}{}", b'{"a":1} x', b"{} null", b"{},"])
def test_trailing_data_refused(raw):
    assert_invalid_body(raw)


def test_bom_refused():
    assert_invalid_body(b"\xef\xbb\xbf{}")


def test_non_json_whitespace_after_object_refused():
    # Only JSON whitespace may follow; U+00A0 is not JSON whitespace.
    assert_invalid_body("{}\u00a0".encode())


def test_object_with_surrounding_whitespace_accepted():
    assert decode_body(b' \r\n\t{"a": 1} \n') == {"a": 1}


def test_empty_object_accepted():
    assert decode_body(b"{}") == {}


# --- §3 item 2: size -------------------------------------------------------------------------


def test_body_over_one_mib_refused():
    filler = b" " * (MAX_BODY_BYTES - 1)
    assert_invalid_body(b"{}" + filler)  # 1 MiB + 1 byte


def test_body_of_exactly_one_mib_accepted():
    head = b'{"a":"'
    tail = b'"}'
    raw = head + b"x" * (MAX_BODY_BYTES - len(head) - len(tail)) + tail
    assert len(raw) == MAX_BODY_BYTES
    assert len(decode_body(raw)["a"]) == MAX_BODY_BYTES - 8


# --- §3 item 3: UTF-8 and surrogates ---------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":"\xff"}',  # never valid in UTF-8
        b'{"a":"\xc3"}',  # truncated sequence
        b'{"a":"\xc0\xaf"}',  # overlong encoding of "/"
        b'{"a":"\xed\xa0\x80"}',  # a surrogate encoded directly
    ],
)
def test_invalid_utf8_refused(raw):
    assert_invalid_body(raw)


def test_lone_surrogate_in_value_refused():
    assert_invalid_body(b'{"a":"x\\ud800y"}')


def test_lone_low_surrogate_in_nested_value_refused():
    assert_invalid_body(b'{"a":[{"b":["\\udc00"]}]}')


def test_lone_surrogate_in_key_refused():
    assert_invalid_body(b'{"\\ud83d":1}')


def test_surrogate_pair_escape_accepted():
    assert decode_body(b'{"a":"\\ud83d\\ude00"}') == {"a": "\U0001f600"}


def test_raw_control_character_in_string_refused():
    assert_invalid_body(b'{"a":"line\nbreak"}')


# --- §3 item 4: non-finite constants ---------------------------------------------------------


def test_nan_refused():
    assert_invalid_body(b'{"a":NaN}')


def test_infinity_refused():
    assert_invalid_body(b'{"a":Infinity}')


def test_negative_infinity_refused():
    assert_invalid_body(b'{"a":-Infinity}')


# --- §3 item 5: duplicate keys ---------------------------------------------------------------


def test_duplicate_key_exact_refused():
    assert_invalid_body(b'{"question":"a","question":"b"}')


def test_duplicate_key_casefolded_refused():
    assert_invalid_body(b'{"question":"a","QUESTION":"b"}')


def test_duplicate_key_full_casefold_refused():
    # casefold(), not lower(): "STRASSE" and "straße" fold to the same key.
    assert_invalid_body('{"straße":1,"STRASSE":2}'.encode())


def test_duplicate_key_nested_refused():
    assert_invalid_body(b'{"messages":[{"role":"user","Role":"tool"}]}')


def test_same_key_in_sibling_objects_accepted():
    body = decode_body(b'{"m":[{"role":"user"},{"role":"tool"}]}')
    assert body == {"m": [{"role": "user"}, {"role": "tool"}]}


# --- §3 item 6: depth ------------------------------------------------------------------------


def test_depth_128_accepted():
    body = decode_body(nested(128))
    depth, node = 2, body["a"]  # the top object is 1, its array 2
    while node:
        depth, node = depth + 1, node[0]
    assert depth == 128


def test_depth_129_refused():
    assert_invalid_body(nested(129))


def test_depth_counts_objects_too():
    assert_invalid_body(b'{"a":' * 129 + b"1" + b"}" * 129)
    assert decode_body(b'{"a":' * 128 + b"1" + b"}" * 128)


def test_brackets_inside_strings_do_not_count():
    raw = b'{"a":"' + b"[" * 500 + b'\\"' + b"{" * 500 + b'"}'
    assert decode_body(raw)["a"].startswith("[[[")


def test_very_deep_input_refused_without_recursion_error():
    assert_invalid_body(b"[" * 100_000 + b"]" * 100_000)
    assert_invalid_body(b'{"a":' + b"[" * 100_000)


def test_hostile_unterminated_string_is_fast():
    # Must not rescan from every quote (quadratic); a timeout would show up as a slow test.
    assert_invalid_body(b'{"a":"' + b'\\"' * 400_000)


# --- §3 item 8 (at decode time): signed 64-bit integers ---------------------------------------


def test_int64_bounds_accepted():
    body = decode_body(b'{"a":9223372036854775807,"b":-9223372036854775808}')
    assert body == {"a": 2**63 - 1, "b": -(2**63)}


def test_int_above_int64_refused():
    assert_invalid_body(b'{"a":9223372036854775808}')


def test_int_below_int64_refused():
    assert_invalid_body(b'{"a":[-9223372036854775809]}')


def test_absurdly_long_int_refused():
    assert_invalid_body(b'{"a":' + b"9" * 5000 + b"}")


def test_huge_float_is_just_a_float():
    assert decode_body(b'{"a":1e300}') == {"a": 1e300}


# --- §3 items 7-9: shapes --------------------------------------------------------------------

class _Message(Body):
    role = Text(nul_ok=True)
    content = Text(nul_ok=True)
    group_ordinal = Integer()
    occurred_at = Timestamp()


class TURN(Body):
    messages = ListOf(_Message())
    idempotency_key = Text(nul_ok=True)  # the type only: a UUID's spelling is a route rule
    data_subject_id = Text(nul_ok=True)
    occurred_at = Timestamp()


class _After(Body):
    id = Text(nul_ok=True)


class PAGE(Body):
    limit = Integer()
    after = _After()
    flag = Boolean()


def test_shape_accepts_and_converts():
    value = {
        "messages": [
            {"role": "user", "content": "hi", "group_ordinal": 0},
            {"role": "tool", "content": "ok", "occurred_at": "2026-03-04T10:12:00Z"},
        ],
        "idempotency_key": "0B6F4A52-3C1E-4D7A-9F10-2A7C5E9D8B31",
    }
    out = check_shape(value, TURN)
    assert out["messages"][0] == {"role": "user", "content": "hi", "group_ordinal": 0}
    assert out["messages"][1]["occurred_at"] == datetime(2026, 3, 4, 10, 12, tzinfo=UTC)
    # The shape only checks the type; canonical_uuid() is the route's job.
    assert out["idempotency_key"] == value["idempotency_key"]
    assert out is not value and out["messages"] is not value["messages"]
    # The input is left untouched.
    assert value["messages"][1]["occurred_at"] == "2026-03-04T10:12:00Z"


def test_shape_null_means_omitted():
    out = check_shape({"limit": None, "after": {"id": None}, "flag": None}, PAGE)
    assert out == {"after": {}}


def test_shape_empty_body_accepted():
    assert check_shape({}, PAGE) == {}


def test_unknown_top_level_field_refused():
    assert_shape_refused({"scope": "demo"}, TURN)


def test_unknown_field_is_case_sensitive():
    assert_shape_refused({"Limit": 5}, PAGE)


def test_unknown_field_in_nested_object_refused():
    assert_shape_refused({"after": {"id": "x", "recorded_at": "y"}}, PAGE)


def test_unknown_field_in_array_of_objects_refused():
    value = {
        "messages": [{"role": "user", "content": "a"}, {"role": "user", "name": "x"}]
    }
    assert_shape_refused(value, TURN)


def test_unknown_field_refused_even_when_null():
    assert_shape_refused({"project": None}, PAGE)


@pytest.mark.parametrize("bad", [True, False, 1.0, 1.5, "1", [1], {"v": 1}])
def test_int_field_wrong_type_refused(bad):
    assert_shape_refused({"limit": bad}, PAGE)


def test_bool_for_int_refused():
    assert_shape_refused({"limit": True}, PAGE)


def test_float_for_int_refused():
    assert_shape_refused({"limit": 1.0}, PAGE)


def test_string_for_int_refused():
    assert_shape_refused({"limit": "1"}, PAGE)


def test_out_of_int64_int_refused_by_shape():
    # decode_body already refuses these; the shape checks again for values built in code.
    assert_shape_refused({"limit": 2**63}, PAGE)


@pytest.mark.parametrize("bad", [1, 0, "true", [], {}])
def test_bool_field_wrong_type_refused(bad):
    assert_shape_refused({"flag": bad}, PAGE)


@pytest.mark.parametrize("bad", [1, True, 1.5, [], {}])
def test_string_field_wrong_type_refused(bad):
    assert_shape_refused({"data_subject_id": bad}, TURN)


@pytest.mark.parametrize("bad", [1, True, [], {}])
def test_uuid_field_wrong_type_refused(bad):
    assert_shape_refused({"idempotency_key": bad}, TURN)


@pytest.mark.parametrize("bad", ["x", {"role": "user"}, 1, True])
def test_array_field_wrong_type_refused(bad):
    assert_shape_refused({"messages": bad}, TURN)


@pytest.mark.parametrize("bad", ["x", [], 1, True])
def test_object_field_wrong_type_refused(bad):
    assert_shape_refused({"after": bad}, PAGE)


def test_array_element_wrong_type_refused():
    assert_shape_refused({"messages": ["hello"]}, TURN)


def test_null_array_element_refused():
    assert_shape_refused({"messages": [None]}, TURN)


def test_wrong_type_inside_array_object_refused():
    assert_shape_refused({"messages": [{"role": "user", "group_ordinal": "0"}]}, TURN)


def test_shape_rejects_non_object_root():
    assert_shape_refused([], TURN)  # type: ignore[arg-type]


# --- §3 item 9: timestamps -------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "2026-01-01 10:00:00Z",  # space instead of T
        "2026-02-30T00:00:00Z",  # no such day
        "2026-13-01T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T10:60:00Z",
        "2026-12-31T23:59:60Z",  # leap second: not representable
        "2026-01-01T10:00:00",  # no offset
        "2026-01-01t10:00:00z",  # lowercase not in the contract's pattern
        "2026-01-01T10:00Z",  # no seconds
        "2026-01-01T10:00:00.Z",  # empty fraction
        "2026-01-01T10:00:00.1234567890Z",  # ten fraction digits
        "2026-01-01T10:00:00+0530",  # offset without colon
        "2026-01-01T10:00:00+05:60",
        "2026-01-01T10:00:00+24:00",
        "2026-01-01T10:00:00Z\n",  # trailing newline ($ would allow it)
        " 2026-01-01T10:00:00Z",
        "26-01-01T10:00:00Z",
        "0000-01-01T00:00:00Z",  # year 0 does not exist
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "9999-12-31T23:59:59-01:00",  # after year 9999 in UTC
        "\u0662\u0660\u0662\u0666-01-01T10:00:00Z",  # Arabic-Indic digits are not \d here
        "",
    ],
)
def test_bad_timestamp_refused(bad):
    assert parse_timestamp(bad) is None
    assert_shape_refused({"occurred_at": bad}, TURN)


@pytest.mark.parametrize("bad", [1767225600, True, ["2026-01-01T00:00:00Z"]])
def test_non_string_timestamp_refused(bad):
    assert_shape_refused({"occurred_at": bad}, TURN)


def test_timestamp_fraction_truncated_not_rounded():
    out = check_shape({"occurred_at": "2026-01-01T10:00:00.1234567Z"}, TURN)
    assert out["occurred_at"].microsecond == 123456
    assert parse_timestamp("2026-01-01T10:00:00.999999999Z").microsecond == 999999
    assert parse_timestamp("2026-01-01T10:00:00.5Z").microsecond == 500000


def test_timestamp_offset_honoured_and_stored_as_utc():
    dt = parse_timestamp("2026-03-04T15:42:00+05:30")
    assert dt == datetime(2026, 3, 4, 10, 12, tzinfo=UTC)
    assert dt.utcoffset() == timedelta(0)
    assert parse_timestamp("2026-03-04T09:12:00-01:00").hour == 10
    assert parse_timestamp("2026-03-04T10:12:00-00:00").hour == 10


def test_timestamp_leap_day_accepted():
    assert parse_timestamp("2028-02-29T00:00:00Z") == datetime(2028, 2, 29, tzinfo=UTC)


# --- helpers ---------------------------------------------------------------------------------


def test_white_space_set_is_exactly_unicode_white_space():
    expected = {chr(c) for c in range(0x09, 0x0E)} | {
        "\u0020",
        "\u0085",
        "\u00a0",
        "\u1680",
        "\u2028",
        "\u2029",
        "\u202f",
        "\u205f",
        "\u3000",
    }
    expected |= {chr(c) for c in range(0x2000, 0x200B)}
    assert WHITE_SPACE == expected
    assert len(WHITE_SPACE) == 25


@pytest.mark.parametrize(
    "s", ["", " ", "\t\n\r\x0b\x0c", "\u3000\u00a0\u2028", "\u205f "]
)
def test_is_blank_true(s):
    assert is_blank(s)


@pytest.mark.parametrize(
    "s",
    [
        "a",
        " a ",
        "\x1c",  # str.isspace() says True; Unicode White_Space says no
        "\x1f\x1e\x1d",
        "\u200b",  # zero-width space is not White_Space
        "\ufeff",
        "\x00",
    ],
)
def test_is_blank_false(s):
    assert not is_blank(s)


def test_has_nul():
    assert has_nul("a\x00b")
    assert not has_nul("a\\u0000b")
    # A NUL arriving through a JSON escape is still a NUL.
    assert has_nul(decode_body(b'{"a":"x\\u0000"}')["a"])


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        (
            "0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31",
            "0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31",
        ),
        (
            "0B6F4A52-3C1E-4D7A-9F10-2A7C5E9D8B31",
            "0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31",
        ),
        (
            "00000000-0000-0000-0000-000000000000",
            "00000000-0000-0000-0000-000000000000",
        ),
        ("{0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31}", None),
        ("urn:uuid:0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31", None),
        ("0b6f4a523c1e4d7a9f102a7c5e9d8b31", None),
        ("0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b3", None),
        ("0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31\n", None),
        (" 0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8b31", None),
        ("0b6f4a52-3c1e-4d7a-9f10-2a7c5e9d8g31", None),
        ("0b6f4a5-23c1e-4d7a-9f10-2a7c5e9d8b31", None),
        ("", None),
        (None, None),
        (123, None),
    ],
)
def test_canonical_uuid(s, expected):
    assert canonical_uuid(s) == expected


def test_utf8_len():
    assert utf8_len("") == 0
    assert utf8_len("abc") == 3
    assert utf8_len("é") == 2
    assert utf8_len("€") == 3
    assert utf8_len("\U0001f600") == 4


# --- end to end ------------------------------------------------------------------------------


def test_decode_then_shape():
    raw = json.dumps(
        {
            "messages": [{"role": "user", "content": "I live in Dublin."}],
            "data_subject_id": "alice",
            "idempotency_key": None,
        }
    ).encode()
    out = check_shape(decode_body(raw), TURN)
    assert out == {
        "messages": [{"role": "user", "content": "I live in Dublin."}],
        "data_subject_id": "alice",
    }

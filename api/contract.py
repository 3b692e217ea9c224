"""Request contracts of the /v1 routes as DRF serializers: each field names its JSON type and its rules once, and
parsing, validation, the OpenAPI document and the MCP tool schemas all read them (docs/architecture.md).

A wrong JSON type, an unknown field or a null array element is 400 invalid_body; a broken rule is the route's own
400 code (or the code a field names); null means omitted (api.md §3)."""
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from core.strings import canonical_uuid, has_nul, is_blank, utf8_len
from core.text import WHITE_SPACE

from .errors import DEFAULT_MESSAGES, ApiError
from .jsonbody import INT64_MAX, INT64_MIN, parse_timestamp

SHAPE = "invalid_body"
RULE = "rule"  # stands for the route's own code until the serializer names it

_UUID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# Text patterns in the regex dialect JSON Schema and Python share: blankness is Unicode White_Space (core.text, the
# one set), and U+0000 is refused in every text field the server stores or matches.
_WS = "".join(f"\\u{ord(c):04x}" for c in sorted(WHITE_SPACE))
NUL_FREE = "^[^\\u0000]*$"
NON_BLANK = f"^[^\\u0000]*[^\\u0000{_WS}][^\\u0000]*$"
EMPTY_OR_NON_BLANK = f"^(?:[^\\u0000]*[^\\u0000{_WS}][^\\u0000]*)?$"
BLANK = f"^[{_WS}]*$"


@dataclass(frozen=True)
class RouteDoc:
    """What the document says of a route beyond its bodies: its tag and summary, the success status, and the
    route's own refusals as status → codes (the base view's common ones are added by the generator)."""

    tag: str
    summary: str
    errors: dict = field(default_factory=dict)
    success: int | None = 200
    description: str = ""


def shape_error():
    return ValidationError(SHAPE, code=SHAPE)


def rule_error(code=None, message=None):
    """A broken rule: `code` or the route's; `message` replaces the code's fixed text where a route has its own."""
    return ValidationError(message or code or RULE, code=code or RULE)


class WireField(serializers.Field):
    """A body field. Subclasses implement `convert` (the JSON type: a miss is invalid_body), `check` (the rules: a
    miss is the field's `code`, else the route's) and `openapi` (the same rules as JSON Schema)."""

    def __init__(self, *, code=None, message=None, description=None, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.code = code
        self.message = message
        self.description = description

    def to_internal_value(self, data):
        value = self.convert(data)
        self.check(value)
        return value

    def convert(self, data):
        return data

    def check(self, value):
        pass

    def refuse(self):
        raise rule_error(self.code, self.message)

    def openapi(self):
        raise NotImplementedError

    def schema(self):
        out = self.openapi()
        if self.description:
            out["description"] = self.description
        return out


class Text(WireField):
    """A string: never U+0000; `non_blank` (some character outside White_Space) or `empty_or_non_blank` ("" is
    allowed, a blank one is not); at most `max_bytes` UTF-8 bytes; one of `choices` when given. With `late`, every
    rule but blankness waits until every field and the body's cross-field rules passed (Body.check_late): for routes
whose answer to a body breaking two rules depends on that order."""

    def __init__(self, *, max_bytes=None, non_blank=False, empty_or_non_blank=False, choices=None, pattern=None,
                 max_chars=None, nul_ok=False, late=False, **kwargs):
        super().__init__(**kwargs)
        self.late = late
        self.max_bytes = max_bytes
        self.max_chars = max_chars
        self.non_blank = non_blank
        self.empty_or_non_blank = empty_or_non_blank
        self.choices = tuple(choices) if choices is not None else None
        self.pattern = pattern
        self.nul_ok = nul_ok
        self._regex = re.compile(pattern) if pattern else None

    def convert(self, data):
        if not isinstance(data, str):
            raise shape_error()
        return data

    def check(self, value):
        if (self.non_blank or (self.empty_or_non_blank and value)) and is_blank(value):
            self.refuse()
        if not self.late:
            self.check_late(value)

    def check_late(self, value):
        if self.choices is not None:
            if value not in self.choices:
                self.refuse()
            return
        if not self.nul_ok and has_nul(value):
            self.refuse()
        if self.max_bytes is not None and utf8_len(value) > self.max_bytes:
            self.refuse()
        if self.max_chars is not None and len(value) > self.max_chars:
            self.refuse()
        if self._regex is not None and self._regex.fullmatch(value) is None:
            self.refuse()

    def openapi(self):
        if self.choices is not None:
            return {"type": "string", "enum": list(self.choices)}
        out = {"type": "string"}
        if not self.nul_ok:
            out["pattern"] = NUL_FREE
        if self.non_blank:
            out.update(minLength=1, pattern=NON_BLANK)
        elif self.empty_or_non_blank:
            out["pattern"] = EMPTY_OR_NON_BLANK
        if self.pattern:
            out["pattern"] = self.pattern  # a field with its own pattern states it whole
        # A byte cap of N admits at most N characters: the looser bound a schema can state (its text says bytes).
        bound = min(b for b in (self.max_bytes, self.max_chars) if b is not None) if (
            self.max_bytes is not None or self.max_chars is not None) else None
        if bound is not None:
            out["maxLength"] = bound
        return out


class Uuid(WireField):
    """A UUID in 8-4-4-4-12 spelling, any case, handed on lowercased (services compare, digest and echo ids as
    strings); with `empty_ok`, "" reads as not given."""

    def __init__(self, *, empty_ok=False, **kwargs):
        super().__init__(**kwargs)
        self.empty_ok = empty_ok

    def convert(self, data):
        if not isinstance(data, str):
            raise shape_error()
        return data

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        return canonical_uuid(value) or value

    def check(self, value):
        if value == "" and self.empty_ok:
            return
        if canonical_uuid(value) is None:
            self.refuse()

    def openapi(self):
        if self.empty_ok:
            return {"type": "string", "pattern": f"^(?:{_UUID_PATTERN})?$"}
        return {"type": "string", "format": "uuid", "pattern": f"^{_UUID_PATTERN}$"}


class Integer(WireField):
    """A JSON integer in signed 64 bits (a bool is not one), within [min_value, max_value] when given."""

    def __init__(self, *, min_value=None, max_value=None, **kwargs):
        super().__init__(**kwargs)
        self.min_value = min_value
        self.max_value = max_value

    def convert(self, data):
        # type() rather than isinstance(): bool is an int subclass and must not pass.
        if type(data) is not int or not INT64_MIN <= data <= INT64_MAX:
            raise shape_error()
        return data

    def check(self, value):
        if (self.min_value is not None and value < self.min_value) or (
                self.max_value is not None and value > self.max_value):
            self.refuse()

    def openapi(self):
        return {"type": "integer", "format": "int64",
                "minimum": INT64_MIN if self.min_value is None else self.min_value,
                "maximum": INT64_MAX if self.max_value is None else self.max_value}


class Boolean(WireField):
    def convert(self, data):
        if type(data) is not bool:
            raise shape_error()
        return data

    def openapi(self):
        return {"type": "boolean"}


class Timestamp(WireField):
    """RFC 3339 (api.md §3 item 9) as an aware UTC datetime; any other string is invalid_body."""

    def convert(self, data):
        parsed = parse_timestamp(data) if isinstance(data, str) else None
        if parsed is None:
            raise shape_error()
        return parsed

    def openapi(self):
        return {"type": "string", "format": "date-time",
                "description": "RFC 3339, upper-case T and Z; fractions finer than a microsecond are truncated"}


class ListOf(WireField):
    """A JSON array of `child` (a WireField or a Body); a null element is invalid_body. Item-count and uniqueness
    rules are the route's code."""

    def __init__(self, child, *, min_items=None, max_items=None, unique=False, **kwargs):
        super().__init__(**kwargs)
        self.child = child
        self.min_items = min_items
        self.max_items = max_items
        self.unique = unique
        self.child.bind(field_name="", parent=self)

    def convert(self, data):
        if not isinstance(data, list) or any(item is None for item in data):
            raise shape_error()
        out, errors = [], {}
        for index, item in enumerate(data):
            try:
                out.append(self.child.run_validation(item))
            except ValidationError as exc:
                errors[index] = exc.detail
        if errors:
            raise ValidationError(errors)
        return out

    def check(self, value):
        if (self.min_items is not None and len(value) < self.min_items) or (
                self.max_items is not None and len(value) > self.max_items):
            self.refuse()
        if self.unique and len(set(value)) != len(value):
            self.refuse()

    def openapi(self):
        out = {"type": "array", "items": None}  # the items schema is the child's, mapped by the schema generator
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        if self.unique:
            out["uniqueItems"] = True
        return out


class Body(serializers.Serializer):
    """A strict JSON object. Subclasses declare WireFields (and nested Bodies) and set `code`, the route's 400 code
    for a broken rule. Cross-field rules, checked once every field passed and stated in the document too:
    `one_of` lists groups of which exactly one field must be given, `all_or_none` groups given together or not
    at all. With `blank_is_absent`, a blank string reads as not given (else only ""); an empty array never counts."""

    code = None
    one_of = ()
    all_or_none = ()
    blank_is_absent = False

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)

    def to_internal_value(self, data):
        # DRF's own loop, narrowed to what a Body's fields need (no sources, defaults or field validators): it costs
        # a quarter as much, which observe's 64-message turns feel. Errors keep DRF's tree, keyed by field name.
        fields = self.fields
        if not isinstance(data, Mapping) or not data.keys() <= fields.keys():
            raise shape_error()
        out, errors = {}, {}
        for name, declared in fields.items():
            value = data.get(name)
            if value is None:  # null means omitted; a missing required field is a broken rule, in the route's words
                if declared.required:
                    errors[name] = rule_error(declared.code, declared.message).detail if isinstance(
                        declared, WireField) else [ErrorDetail(RULE, code=RULE)]
                continue
            try:
                out[name] = declared.run_validation(value) if isinstance(declared, Body) else declared.to_internal_value(value)
            except ValidationError as exc:
                errors[name] = exc.detail
        if errors:
            raise ValidationError(errors)
        return out

    def validate(self, attrs):
        for names in self.one_of:
            if sum(1 for name in names if self.given(attrs.get(name))) != 1:
                raise rule_error()
        for names in self.all_or_none:
            if 0 < sum(1 for name in names if name in attrs) < len(names):
                raise rule_error()
        self.check_late(attrs)
        return attrs

    def check_late(self, attrs):
        """The rules of `late` fields, once every field and the cross-field rules passed."""
        for name, value in attrs.items():
            field = self.fields[name]
            if getattr(field, "late", False):
                field.check_late(value)

    @classmethod
    def given(cls, value):
        if isinstance(value, str):
            return not is_blank(value) if cls.blank_is_absent else value != ""
        return value is not None and value != []

    @classmethod
    def cross_field_schema(cls):
        """The document's statement of `one_of` and `all_or_none` (OpenAPI 3.0 keywords only)."""
        out = {}
        clauses = []
        for names in cls.one_of:
            branches = []
            for name in names:
                properties = {name: cls._presence_schema(name, given=True)}
                properties.update({other: {**cls._presence_schema(other, given=False), "nullable": True}
                                   for other in names if other != name})
                branches.append({"required": [name], "properties": properties})
            clauses.append({"description": f"exactly one of {' and '.join(names)}", "oneOf": branches})
        for names in cls.all_or_none:
            none = {"properties": {name: {"nullable": True, "enum": [None]} for name in names}}
            clauses.append({"anyOf": [{"required": list(names)}, none]})
        if len(clauses) == 1:
            out.update(clauses[0])
        elif clauses:
            out["allOf"] = clauses
        return out

    @classmethod
    def _presence_schema(cls, name, *, given):
        """What a one_of field looks like when it counts as given, or as not given (absent, null or empty)."""
        if isinstance(cls._declared_fields[name], ListOf):
            return {"type": "array", "minItems": 1} if given else {"type": "array", "maxItems": 0}
        if cls.blank_is_absent:
            return {"type": "string", "pattern": NON_BLANK if given else BLANK}
        return {"type": "string", "minLength": 1} if given else {"type": "string", "maxLength": 0}


def _errors(detail):
    """Every ErrorDetail in a DRF error tree, in field order."""
    if isinstance(detail, ErrorDetail):
        yield detail
    elif isinstance(detail, Mapping):
        for value in detail.values():
            yield from _errors(value)
    elif isinstance(detail, list | tuple):
        for value in detail:
            yield from _errors(value)


def refusal(detail, route_code):
    """The one ApiError a failed validation stands for: invalid_body (with its one fixed message) when any type or
    field-name check failed anywhere in the body, else the first broken rule's code (the route's unless the field
    names its own), with the field's message where it gives one. DRF's own English never reaches the wire."""
    errors = list(_errors(detail))
    if any(error.code == SHAPE for error in errors):
        return ApiError(400, SHAPE)
    if not errors:
        return ApiError(400, route_code)
    first = errors[0]
    if first.code == RULE or first.code in DEFAULT_MESSAGES:
        code = route_code if first.code == RULE else first.code
        text = str(first)
        return ApiError(400, code, None if text in (RULE, code) else text)
    return ApiError(400, route_code)


# One instance per Body: building one deep-copies its fields (0.2 ms a request), and validating keeps no state on
# the instance, so every request and thread can share it.
_instances = {}


def validate(body_class, data):
    """A decoded request body checked against its contract: the converted fields (omitted ones absent), or the
    ApiError it earns."""
    body = _instances.get(body_class)
    if body is None:
        body = _instances.setdefault(body_class, body_class())
    try:
        return dict(body.run_validation(data))
    except ValidationError as exc:  # is_valid() would insist on a field-keyed tree; the codes are all we read
        raise refusal(exc.detail, body_class.code) from None

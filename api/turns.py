"""The contract of POST /v1/observations (api.md §7.1): limits, roles and message groups, and the turn as the
service takes it."""
from core.closed_sets import ROLES
from core.limits import MAX_SUBJECT_BYTES
from core.strings import utf8_len

from .contract import Body, Integer, ListOf, Text, Timestamp, Uuid, rule_error

MAX_MESSAGES = 64
MAX_MESSAGE_BYTES = 65_536
MAX_TURN_BYTES = 262_144


class TurnMessage(Body):
    code = "invalid_turn"
    role = Text(required=True, choices=ROLES)
    content = Text(required=True, non_blank=True, max_bytes=MAX_MESSAGE_BYTES,
                   description="at most 65,536 UTF-8 bytes, no U+0000")
    group_ordinal = Integer(min_value=0, max_value=MAX_MESSAGES - 1, description=(
        "on all messages or none; starts at 0, each next equals the previous or the previous + 1"))
    occurred_at = Timestamp()


class ObservationRequest(Body):
    code = "invalid_turn"
    messages = ListOf(TurnMessage(), required=True, min_items=1, max_items=MAX_MESSAGES,
                      description="total content at most 262,144 UTF-8 bytes")
    idempotency_key = Uuid()
    data_subject_id = Text(max_bytes=MAX_SUBJECT_BYTES,
                           description="at most 1,024 UTF-8 bytes, no U+0000; \"\" means project-wide")
    occurred_at = Timestamp()

    def validate(self, attrs):
        attrs = super().validate(attrs)
        messages = attrs["messages"]
        explicit = "group_ordinal" in messages[0]
        previous = None
        for message in messages:
            if ("group_ordinal" in message) != explicit:
                raise rule_error()
            if explicit:
                group = message["group_ordinal"]
                if (previous is None and group != 0) or (previous is not None and group not in (
                        previous, previous + 1)):
                    raise rule_error()
                previous = group
            elif message["role"] == "tool":  # a tool message needs the group of the call it answers
                raise rule_error()
        if sum(utf8_len(message["content"]) for message in messages) > MAX_TURN_BYTES:
            raise rule_error()
        return attrs

    @classmethod
    def cross_field_schema(cls):
        # Only "on all or none" and "tool needs ordinals" can be stated; the ordinals' sequence rule and the total
        # size are in the descriptions (OpenAPI 3.0 has no per-position item schemas).
        return {"anyOf": [
            {"properties": {"messages": {"type": "array", "items": {
                "required": ["group_ordinal"], "properties": {"group_ordinal": {"type": "integer"}}}}}},
            {"properties": {"messages": {"type": "array", "items": {"properties": {
                "role": {"type": "string", "enum": [r for r in ROLES if r != "tool"]},
                "group_ordinal": {"type": "integer", "nullable": True, "enum": [None]}}}}}}],
            "description": "group_ordinal on every message or on none; a turn with a tool message gives them"}


def clean_turn(body):
    """The checked turn as the service takes it: (messages with effective group_ordinal, subject, occurred_at,
    key); without explicit groups each message is its own group."""
    messages = [{"role": m["role"], "content": m["content"], "group_ordinal": m.get("group_ordinal", ordinal),
                 "occurred_at": m.get("occurred_at")} for ordinal, m in enumerate(body["messages"])]
    # The key is lowercased by its Uuid field; "" and an absent subject both mean project-wide.
    return messages, body.get("data_subject_id") or None, body.get("occurred_at"), body.get("idempotency_key")

"""Validation of POST /v1/observations beyond shape (api.md §7.1): limits, roles and message groups."""
from core.closed_sets import ROLES
from core.limits import MAX_SUBJECT_BYTES
from core.strings import canonical_uuid, has_nul, is_blank, utf8_len

from .errors import ApiError
from .jsonbody import INT, STR, TIMESTAMP, UUID_STR, ArrayOf, Obj

MAX_MESSAGES = 64
MAX_MESSAGE_BYTES = 65_536
MAX_TURN_BYTES = 262_144

OBSERVATION_SHAPE = Obj({
    "messages": ArrayOf(Obj({"role": STR, "content": STR, "group_ordinal": INT, "occurred_at": TIMESTAMP})),
    "idempotency_key": UUID_STR,
    "data_subject_id": STR,
    "occurred_at": TIMESTAMP,
})


def _invalid(message):
    return ApiError(400, "invalid_turn", message)


def subject_or_none(value, *, code):
    """A data_subject_id as stored: "" and absent mean project-wide (None)."""
    if value is None or value == "":
        return None
    if has_nul(value) or utf8_len(value) > MAX_SUBJECT_BYTES:
        raise ApiError(400, code, "data_subject_id is at most 1024 bytes with no NUL")
    return value


def clean_turn(body):
    """The validated turn: (messages with effective group_ordinal, subject, occurred_at, key)."""
    messages = body.get("messages")
    if not messages:
        raise _invalid("a turn needs 1 to 64 messages")
    if len(messages) > MAX_MESSAGES:
        raise _invalid("a turn holds at most 64 messages")
    explicit_groups = "group_ordinal" in messages[0]
    total = 0
    cleaned = []
    previous_group = None
    for ordinal, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        if role not in ROLES:
            raise _invalid("role is one of user, assistant, system, tool")
        if content is None or is_blank(content):
            raise _invalid("message content cannot be blank")
        if has_nul(content):
            raise _invalid("message content cannot contain NUL")
        size = utf8_len(content)
        if size > MAX_MESSAGE_BYTES:
            raise _invalid("a message is at most 65536 bytes")
        total += size
        if ("group_ordinal" in message) != explicit_groups:
            raise _invalid("give group_ordinal on all messages or on none")
        if explicit_groups:
            group = message["group_ordinal"]
            expected_first = previous_group is None and group != 0
            not_next = previous_group is not None and group not in (previous_group, previous_group + 1)
            if expected_first or not_next:
                raise _invalid("group ordinals start at 0 and grow by at most 1")
            previous_group = group
        else:
            if role == "tool":
                raise _invalid("turns containing tool messages require explicit group ordinals")
            group = ordinal
        cleaned.append({"role": role, "content": content, "group_ordinal": group,
                        "occurred_at": message.get("occurred_at")})
    if total > MAX_TURN_BYTES:
        raise _invalid("a turn is at most 262144 bytes of content")
    key = body.get("idempotency_key")
    if key is not None:
        key = canonical_uuid(key)
        if key is None:
            raise _invalid("idempotency_key must be a UUID")
    subject = subject_or_none(body.get("data_subject_id"), code="invalid_turn")
    return cleaned, subject, body.get("occurred_at"), key

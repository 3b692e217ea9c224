"""The inspection routes (api.md §7.1 contexts, §7.3 citations and messages, §7.4 record list and
history, §7.6 entity list and get): validate the body, call one selector, answer 200."""
import re

from django.conf import settings

from core.strings import canonical_uuid, has_nul, is_blank
from memory import contexts, selectors

from .base import Result, V1View
from .errors import ApiError
from .jsonbody import INT, STR, TIMESTAMP, UUID_STR, Obj

INT32_MAX = 2**31 - 1
PAGE_MAX = 100
PAGE_DEFAULT = 20
MESSAGE_MAX_START = 65_536
MESSAGE_MIN_LIMIT = 4
MESSAGE_MAX_LIMIT = 4096
NIL_UUID = "00000000-0000-0000-0000-000000000000"
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _uuid(value, code):
    """A canonical UUID string, lowercased; a missing or malformed one is the route's 400."""
    canonical = canonical_uuid(value)
    if canonical is None:
        raise ApiError(400, code)
    return canonical


def _limit(body, code, *, default, high):
    # limit 0 is a 400 on these routes (api.md §6), unlike subjects and artifacts.
    value = body.get("limit", default)
    if not 1 <= value <= high:
        raise ApiError(400, code)
    return value


def _subject(value, code):
    if is_blank(value) or has_nul(value):
        raise ApiError(400, code)
    return value


class ContextsView(V1View):
    op = "context.assemble"
    shape = Obj({"data_subject_id": STR, "max_characters": INT})

    def handle(self, caller, body):
        if "data_subject_id" not in body:
            raise ApiError(400, "invalid_context")
        subject = _subject(body["data_subject_id"], "invalid_context")
        max_characters = body.get("max_characters", settings.MEMOIR_BUNDLE_CHARACTERS)
        if not 1 <= max_characters <= settings.MEMOIR_BUNDLE_CHARACTERS:
            raise ApiError(400, "invalid_context")
        data = contexts.assemble_context(project=caller.project, data_subject_id=subject,
                                         max_characters=max_characters)
        return Result(data, magnitude=len(data["segments"]) + len(data["turns"]))


class CitationsView(V1View):
    op = "citation.resolve"
    shape = Obj({
        "id": UUID_STR,
        "limit": INT,
        "after": Obj({"source_observation_id": UUID_STR, "source_ordinal": INT, "byte_start": INT}),
    })

    def handle(self, caller, body):
        code = "invalid_citation"
        fact_id = _uuid(body.get("id"), code)
        limit = _limit(body, code, default=selectors.CITATION_DEFAULT_LIMIT, high=selectors.CITATION_MAX_LIMIT)
        after = None
        if "after" in body:
            cursor = body["after"]
            if "source_ordinal" not in cursor or "byte_start" not in cursor:
                raise ApiError(400, code)
            ordinal, byte_start = cursor["source_ordinal"], cursor["byte_start"]
            if not (0 <= ordinal <= INT32_MAX and 0 <= byte_start <= INT32_MAX):
                raise ApiError(400, code)
            after = (_uuid(cursor.get("source_observation_id"), code), ordinal, byte_start)
        data = selectors.resolve_citation(project=caller.project, fact_id=fact_id, limit=limit, after=after)
        return Result(data, magnitude=len(data["evidence"]))


class MessagesView(V1View):
    op = "message.get"
    shape = Obj({"chunk_id": UUID_STR, "byte_start": INT, "byte_limit": INT, "expected_digest": STR})

    def handle(self, caller, body):
        code = "invalid_message_window"
        chunk_id = _uuid(body.get("chunk_id"), code)
        if chunk_id == NIL_UUID:
            raise ApiError(400, code)
        byte_start = body.get("byte_start", 0)
        byte_limit = body.get("byte_limit", MESSAGE_MAX_LIMIT)
        if not 0 <= byte_start <= MESSAGE_MAX_START or not MESSAGE_MIN_LIMIT <= byte_limit <= MESSAGE_MAX_LIMIT:
            raise ApiError(400, code)
        # "" reads as absent, like any empty optional string the reference ignores.
        digest = body.get("expected_digest") or None
        if digest is not None and not _DIGEST.fullmatch(digest):
            raise ApiError(400, code)
        if byte_start > 0 and digest is None:
            # A continuation must be bound to the message version the previous window came from.
            raise ApiError(400, code)
        data = selectors.get_message(project=caller.project, chunk_id=chunk_id, byte_start=byte_start,
                                     byte_limit=byte_limit, expected_digest=digest)
        return Result(data, magnitude=1)


_ID_CURSOR = Obj({"id": UUID_STR})


class RecordsListView(V1View):
    op = "record.list"
    shape = Obj({"data_subject_id": STR, "limit": INT, "after": _ID_CURSOR})

    def handle(self, caller, body):
        code = "invalid_record_page"
        subject = _subject(body["data_subject_id"], code) if "data_subject_id" in body else None
        limit = _limit(body, code, default=PAGE_DEFAULT, high=PAGE_MAX)
        after = _uuid(body["after"].get("id"), code) if "after" in body else None
        data = selectors.list_records(project=caller.project, data_subject_id=subject, limit=limit, after=after)
        return Result(data, magnitude=len(data["records"]))


class RecordsHistoryView(V1View):
    op = "record.history"
    shape = Obj({"id": UUID_STR, "limit": INT, "before": Obj({"known_until": TIMESTAMP, "history_id": UUID_STR})})

    def handle(self, caller, body):
        code = "invalid_record_page"
        fact_id = _uuid(body.get("id"), code)
        limit = _limit(body, code, default=PAGE_DEFAULT, high=PAGE_MAX)
        before = None
        if "before" in body:
            cursor = body["before"]
            if "known_until" not in cursor:
                raise ApiError(400, code)
            before = (cursor["known_until"], _uuid(cursor.get("history_id"), code))
        data = selectors.record_history(project=caller.project, fact_id=fact_id, limit=limit, before=before)
        return Result(data, magnitude=1 + len(data["previous"]))


class EntitiesListView(V1View):
    op = "entity.list"
    shape = Obj({"limit": INT, "after": _ID_CURSOR})

    def handle(self, caller, body):
        code = "invalid_entity_page"
        limit = _limit(body, code, default=PAGE_DEFAULT, high=PAGE_MAX)
        after = _uuid(body["after"].get("id"), code) if "after" in body else None
        data = selectors.list_entities(project=caller.project, limit=limit, after=after)
        return Result(data, magnitude=len(data["entities"]))


class EntitiesGetView(V1View):
    op = "entity.get"
    shape = Obj({"id": UUID_STR})

    def handle(self, caller, body):
        entity_id = _uuid(body.get("id"), "invalid_entity_page")
        return Result(selectors.get_entity(project=caller.project, entity_id=entity_id), magnitude=1)

"""/v1/erasures and /v1/exports (api.md §7.8): thin views over governance.erasure and governance.export.

Both services write their own best-effort ledger row after the work, so the views report `audited=True`.
Both still check the request themselves (operators and commands call them too); the contracts here state the same
rules and give the same codes.
"""
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.limits import MAX_SUBJECT_BYTES
from core.strings import is_blank
from governance import erasure, export

from .base import Result, V1View
from .bodies import answer, counts, flag, listing, text, uuid, when
from .contract import BLANK, Body, ListOf, RouteDoc, Text, Uuid, rule_error


class _Selector(Text):
    """data_subject_id of an erasure or an export: a blank one reads as not given, whatever its length."""

    def check(self, value):
        if not is_blank(value):
            super().check(value)

    def openapi(self):
        rules = super().openapi()
        rules.pop("type")
        return {"type": "string", "anyOf": [{"pattern": BLANK}, rules]}


class _SelectorBody(Body):
    """Exactly one of a non-blank data_subject_id or a non-empty source_observation_ids. Naming neither is
    no_subject, before any other rule is looked at (governance.erasure.parse_selector); naming both is the route's
    code."""

    one_of = (("data_subject_id", "source_observation_ids"),)
    blank_is_absent = True
    data_subject_id = _Selector(max_bytes=MAX_SUBJECT_BYTES, description="at most 1,024 UTF-8 bytes, no U+0000")
    # A bad id or too many ids can only be met once the list is non-empty, so never before no_subject.
    source_observation_ids = ListOf(Uuid(), max_items=erasure.MAX_SOURCE_IDS)

    def validate(self, attrs):
        given = sum(1 for name in self.one_of[0] if self.given(attrs.get(name)))
        if given == 0:
            raise rule_error("no_subject")
        if given > 1:
            raise rule_error()
        self.check_late(attrs)
        return attrs

    @classmethod
    def cross_field_schema(cls):
        return {**super().cross_field_schema(),
                "description": "exactly one of a non-blank data_subject_id or a non-empty source_observation_ids"}


class ErasureRequest(_SelectorBody):
    code = "invalid_erasure"
    # After the selector: a body naming no subject is no_subject whatever its reason.
    reason = Text(max_bytes=erasure.MAX_REASON_BYTES, late=True, description="at most 1,024 UTF-8 bytes, no U+0000")


class ExportRequest(_SelectorBody):
    code = "invalid_export"


Erasure = answer(
    "Erasure",
    {"request_id": uuid(), "scope": text(), "data_subject_id": text(), "completed_at": when(), "deleted": counts(),
     "residual": counts(), "clean": flag()},
    {"source_observation_ids": listing(uuid())})  # when the request named source turns


@extend_schema_field({"type": "object"})
class _Row(serializers.DictField):
    """One database row as JSON: its columns are the table's."""


Export = answer(
    "Export",
    {"scope": text(), "data_subject_id": text(), "sections": serializers.DictField(child=listing(_Row())),
     "rows": counts()},
    {"source_observation_ids": listing(uuid())})


class ErasuresView(V1View):
    op = "erase"
    request_body = ErasureRequest
    response_body = Erasure
    doc = RouteDoc("governance", "Erase a data subject or source turns, with a receipt",
                   errors={400: ["no_subject", "invalid_erasure"]})

    def handle(self, caller, body):
        receipt = erasure.erase(
            project=caller.project, data_subject_id=body.get("data_subject_id"),
            source_observation_ids=body.get("source_observation_ids"), reason=body.get("reason") or "",
            principal=caller.credential_id, principal_kind="credential")
        return Result(receipt, audited=True)


class ExportsView(V1View):
    op = "export"
    request_body = ExportRequest
    response_body = Export
    doc = RouteDoc("governance", "Export a data subject's or source turns' rows",
                   errors={400: ["no_subject", "invalid_export"], 422: ["export_too_large"]})

    def handle(self, caller, body):
        result = export.export(
            project=caller.project, data_subject_id=body.get("data_subject_id"),
            source_observation_ids=body.get("source_observation_ids"),
            principal=caller.credential_id, principal_kind="credential")
        return Result(result, audited=True)

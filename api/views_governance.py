"""/v1/erasures and /v1/exports (api.md §7.8): thin views over governance.erasure and governance.export.

Both services write their own best-effort ledger row after the work, so the views report `audited=True`.
"""
from governance import erasure, export

from .base import Result, V1View
from .jsonbody import STR, UUID_STR, ArrayOf, Obj

ERASURE_SHAPE = Obj({"data_subject_id": STR, "source_observation_ids": ArrayOf(UUID_STR), "reason": STR})
EXPORT_SHAPE = Obj({"data_subject_id": STR, "source_observation_ids": ArrayOf(UUID_STR)})


class ErasuresView(V1View):
    op = "erase"
    shape = ERASURE_SHAPE

    def handle(self, caller, body):
        receipt = erasure.erase(
            project=caller.project, data_subject_id=body.get("data_subject_id"),
            source_observation_ids=body.get("source_observation_ids"), reason=body.get("reason") or "",
            principal=caller.credential_id, principal_kind="credential")
        return Result(receipt, audited=True)


class ExportsView(V1View):
    op = "export"
    shape = EXPORT_SHAPE

    def handle(self, caller, body):
        result = export.export(
            project=caller.project, data_subject_id=body.get("data_subject_id"),
            source_observation_ids=body.get("source_observation_ids"),
            principal=caller.credential_id, principal_kind="credential")
        return Result(result, audited=True)

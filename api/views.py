"""The /v1 routes. Each view validates its body and calls one service or selector."""
from formation.kick import kick_drain
from memory import lexical_index, selectors, services
from memory.embedding_kick import kick_follow

from .base import Result, UnknownRouteView, V1View  # noqa: F401 - UnknownRouteView is routed in urls
from .bodies import answer, count, integer, nullable, text, uuid
from .contract import RouteDoc
from .turns import ObservationRequest, clean_turn

ObservationReceipt = answer("ObservationReceipt", {"id": uuid(), "scope": text(), "log_offset": count()})
Rebuilding = answer("Rebuilding", {"reinterpreted_through": nullable(count()), "reinterpreting_through": integer(),
                                   "sources_acknowledged": count(), "sources_skipped": count()})
Freshness = answer("Freshness", {"scope": text(), "stored": nullable(count()), "formed": nullable(count()),
                                 "parked": count()},
                   {"rebuilding": Rebuilding})


def _kick_after_store(project):
    """Formation and the passage followers learn of the new turn; neither runs on the request path (the lexical
    index only when no worker keeps up: lexical_index.help_if_behind)."""
    kick_drain(project)
    kick_follow(project)
    lexical_index.help_if_behind(project)


class ObservationsView(V1View):
    op = "observe"
    request_body = ObservationRequest
    response_body = ObservationReceipt
    doc = RouteDoc("turns", "Store one conversation turn", success=201,
                   errors={400: ["invalid_turn"], 409: ["idempotency_conflict"], 429: ["rate_limited"]},
                   description="A replay of the same idempotency_key and fingerprint answers 201 with the original "
                               "receipt.")

    def handle(self, caller, body):
        messages, subject, occurred_at, key = clean_turn(body)
        receipt = services.observe(
            project=caller.project, messages=messages, data_subject_id=subject, occurred_at=occurred_at,
            idempotency_key=key, retention_days=caller.retention_days, on_stored=_kick_after_store,
            audit_principal=caller.credential_id)
        data = {"id": receipt.id, "scope": receipt.scope, "log_offset": receipt.log_offset}
        # A new turn's ledger row committed with it; a replay's (magnitude 0) is written after the answer.
        return Result(data, status=201, magnitude=receipt.messages, audited=not receipt.replayed)


class FreshnessView(V1View):
    op = "freshness"
    method = "GET"
    response_body = Freshness
    doc = RouteDoc("turns", "How far formation has caught up")

    def handle(self, caller, body):
        return Result(selectors.freshness(project=caller.project).as_dict())

"""The /v1 routes. Each view validates its body and calls one service or selector."""
from formation.kick import kick_drain
from memory import lexical_index, selectors, services
from memory.embedding_kick import kick_follow

from .base import Result, UnknownRouteView, V1View  # noqa: F401 - UnknownRouteView is routed in urls
from .turns import OBSERVATION_SHAPE, clean_turn


def _kick_after_store(project):
    """Formation and the passage followers learn of the new turn; neither runs on the request path (the lexical
    index only when no worker keeps up: lexical_index.help_if_behind)."""
    kick_drain(project)
    kick_follow(project)
    lexical_index.help_if_behind(project)


class ObservationsView(V1View):
    op = "observe"
    shape = OBSERVATION_SHAPE

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

    def handle(self, caller, body):
        return Result(selectors.freshness(project=caller.project).as_dict())

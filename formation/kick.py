"""Telling a worker to look: publish a drain without ever failing or slowing the caller (formation.md §3)."""
import logging
import time

logger = logging.getLogger(__name__)

_broker_down_until = [0.0]  # after a failed publish, skip kicks briefly: the beat sweep catches up


def kick_drain(project):
    if time.monotonic() < _broker_down_until[0]:
        return False
    from .tasks import drain_project

    try:
        drain_project.apply_async(args=[project], retry=False)
        return True
    except Exception as exc:  # noqa: BLE001 - the turn is committed; the sweep will find it
        _broker_down_until[0] = time.monotonic() + 5.0
        logger.warning("formation kick not delivered (%s); the periodic sweep will pick the turn up",
                       type(exc).__name__)
        return False

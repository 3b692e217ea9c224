"""Telling a worker to embed: publish a follow without ever failing or slowing the caller (the observe path).

Coalesced per project like formation's kick: at most one publish per window, a kick inside a window is sent
once at its end. A lost kick only delays embedding: the beat sweep finds every source still missing."""
import logging
import threading
import time

logger = logging.getLogger(__name__)

KICK_WINDOW = 0.25
_broker_down_until = [0.0]
_lock = threading.Lock()
_last_sent = {}
_trailing = set()


def _publish(project):
    if time.monotonic() < _broker_down_until[0]:
        return False
    from .tasks import follow_project

    try:
        follow_project.apply_async(args=[project], retry=False)
        return True
    except Exception as exc:  # noqa: BLE001 - the turn is committed; the sweep will find it
        _broker_down_until[0] = time.monotonic() + 5.0
        logger.warning("embedding kick not delivered (%s); the periodic sweep will pick it up", type(exc).__name__)
        return False


def _trailing_publish(project):
    with _lock:
        _trailing.discard(project)
        _last_sent[project] = time.monotonic()
    _publish(project)


def kick_follow(project):
    """Ask a worker to embed `project`'s new passage sources. Returns True when a publish happened now."""
    from django.conf import settings

    if settings.MEMOIR_EMBEDDER == "none":
        return False
    now = time.monotonic()
    with _lock:
        waited = now - _last_sent.get(project, -1e9)
        if waited < KICK_WINDOW:
            if project not in _trailing:
                _trailing.add(project)
                timer = threading.Timer(KICK_WINDOW - waited, _trailing_publish, args=[project])
                timer.daemon = True
                timer.start()
            return False
        _last_sent[project] = now
    return _publish(project)

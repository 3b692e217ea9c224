"""Telling a worker to look: publish a drain without ever failing or slowing the caller (formation.md §3).

Kicks are coalesced per project: at most one publish per window, and a kick that falls inside a window
is sent once at its end, so every stored turn is followed by a kick within KICK_WINDOW seconds while a
busy project costs one broker round trip per window instead of one per turn."""
import logging
import threading
import time

logger = logging.getLogger(__name__)

KICK_WINDOW = 0.1
_broker_down_until = [0.0]  # after a failed publish, skip kicks briefly: the beat sweep catches up
_lock = threading.Lock()
_last_sent = {}  # project -> monotonic time of this process's last publish
_trailing = set()  # projects with a publish scheduled at the end of their window


def _publish(project):
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


def _trailing_publish(project):
    with _lock:
        _trailing.discard(project)
        _last_sent[project] = time.monotonic()
    _publish(project)


def kick_drain(project):
    """Ask a worker to drain `project`. Returns True when a publish happened now."""
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

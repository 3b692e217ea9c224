"""Coalesced, never-failing kicks: tell a worker to look at a project without slowing or failing the caller.

At most one publish per project per window; a kick that falls inside a window is sent once at its end, so every
stored row is followed by a kick within the window while a busy project costs one broker round trip per window.
After a failed publish every kick (formation's and the passage follower's share one broker) is skipped briefly: the
periodic sweeps catch up with whatever they missed."""
import logging
import threading
import time

logger = logging.getLogger(__name__)

BROKER_BACKOFF = 5.0  # seconds without publishing after the broker refused one


class _Broker:
    """Whether the broker refused a publish lately, for every kick of the process: one observe must not wait out a
    hung broker's timeout once per kick."""

    down_until = 0.0




class CoalescedKick:
    """`kick(project)` publishes `send(project)` (a Celery apply_async) under the coalescing rule above."""

    def __init__(self, *, send, window, what):
        self._send = send
        self.window = window
        self._what = what  # for the log line: "formation", "embedding"
        self._lock = threading.Lock()
        self._last_sent = {}  # project -> monotonic time of this process's last publish
        self._trailing = set()  # projects with a publish scheduled at the end of their window

    def _publish(self, project):
        if time.monotonic() < _Broker.down_until:
            return False
        try:
            self._send(project)
            return True
        except Exception as exc:  # noqa: BLE001 - the row is committed; the sweep will find it
            _Broker.down_until = time.monotonic() + BROKER_BACKOFF
            logger.warning("%s kick not delivered (%s); the periodic sweep will pick it up", self._what,
                           type(exc).__name__)
            return False

    def _trailing_publish(self, project):
        with self._lock:
            self._trailing.discard(project)
            self._last_sent[project] = time.monotonic()
        self._publish(project)

    def __call__(self, project):
        """Returns True when a publish happened now."""
        now = time.monotonic()
        with self._lock:
            waited = now - self._last_sent.get(project, -1e9)
            if waited < self.window:
                if project not in self._trailing:
                    self._trailing.add(project)
                    timer = threading.Timer(self.window - waited, self._trailing_publish, args=[project])
                    timer.daemon = True
                    timer.start()
                return False
            self._last_sent[project] = now
        return self._publish(project)

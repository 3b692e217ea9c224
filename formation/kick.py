"""Telling a worker to look: publish a drain without ever failing or slowing the caller (formation.md §3),
coalesced per project (memory/kicks.py)."""
from memory.kicks import CoalescedKick

KICK_WINDOW = 0.1


def _send_drain(project):
    from .tasks import drain_project  # tasks import the driver, which kicks: import at call time

    drain_project.apply_async(args=[project], retry=False)


kick_drain = CoalescedKick(send=_send_drain, window=KICK_WINDOW, what="formation")

"""Telling a worker to look: publish a drain without ever failing or slowing the caller (formation.md §3),
coalesced per project (memory/kicks.py)."""
from celery import current_app

from memory.kicks import CoalescedKick

KICK_WINDOW = 0.1
# Published by name: the task module imports the driver, which kicks, so importing it here made a cycle.
DRAIN_TASK = "formation.tasks.drain_project"


def _send_drain(project):
    current_app.send_task(DRAIN_TASK, args=[project], retry=False)


kick_drain = CoalescedKick(send=_send_drain, window=KICK_WINDOW, what="formation")

"""Telling a worker to index and embed: publish a follow without ever failing or slowing the caller (the observe
path).

Coalesced per project like formation's kick: at most one publish per window, a kick inside a window is sent
once at its end. A lost kick only delays embedding: the beat sweep finds every source still missing."""
from celery import current_app

from .kicks import CoalescedKick

# One follow per project per second and process: the lexical follower's cost is mostly per statement (~4 ms for a
# handful of turns, ~20 ms for 500), so fewer, larger batches keep it small; search reads the tail meanwhile.
KICK_WINDOW = 1.0


# Published by name, like formation's drain: the task module imports the follower, which kicks.
FOLLOW_TASK = "memory.tasks.follow_project"


def _send_follow(project):
    current_app.send_task(FOLLOW_TASK, args=[project], retry=False)


_kick = CoalescedKick(send=_send_follow, window=KICK_WINDOW, what="passage")


def kick_follow(project):
    """Ask a worker to index `project`'s new messages (passage sources) and embed them. Returns True when a publish
    happened now. The lexical follower runs whatever the embedder: without one only the vectors are skipped."""
    return _kick(project)

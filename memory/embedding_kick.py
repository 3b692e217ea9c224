"""Telling a worker to embed: publish a follow without ever failing or slowing the caller (the observe path).

Coalesced per project like formation's kick: at most one publish per window, a kick inside a window is sent
once at its end. A lost kick only delays embedding: the beat sweep finds every source still missing."""
from celery import current_app
from django.conf import settings

from .kicks import CoalescedKick

KICK_WINDOW = 0.25


# Published by name, like formation's drain: the task module imports the follower, which kicks.
FOLLOW_TASK = "memory.tasks.follow_project"


def _send_follow(project):
    current_app.send_task(FOLLOW_TASK, args=[project], retry=False)


_kick = CoalescedKick(send=_send_follow, window=KICK_WINDOW, what="embedding")


def kick_follow(project):
    """Ask a worker to embed `project`'s new passage sources. Returns True when a publish happened now."""
    if settings.MEMOIR_EMBEDDER == "none":
        return False
    return _kick(project)

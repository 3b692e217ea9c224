"""Work admission: concurrent in-flight requests counted in Redis per project and per credential
(api.md §1.4). Fails open when Redis is unreachable, so observe still answers with Redis down."""
import logging
import time
import uuid

import redis
from django.conf import settings
from rest_framework.throttling import BaseThrottle

logger = logging.getLogger(__name__)

_client = None
_down_until = [0.0]  # after a Redis failure, skip admission briefly instead of paying a timeout per request
# Each in-flight request is one member of a sorted set scored by its start time. A slot whose request died
# without releasing it (a killed web worker) ages out on its own after this many seconds, whatever the
# traffic; no request lives this long (the request deadline is 30 s).
_SLOT_TTL_SECONDS = 60


def _redis():
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=0.25, socket_timeout=0.25)
    return _client


class Ticket:
    """The slots one request holds; release() gives them back."""

    def __init__(self, keys, member=""):
        self.keys = keys
        self.member = member

    def release(self):
        if not self.keys:
            return
        try:
            pipe = _redis().pipeline()
            for key in self.keys:
                pipe.zrem(key, self.member)
            pipe.execute()
        except redis.RedisError:
            logger.warning("admission release skipped: redis unreachable")


def admit(caller):
    """A Ticket, or None when a limit is reached (the caller answers 429)."""
    limits = [
        (f"memoir:inflight:project:{caller.project}", settings.MEMOIR_ADMISSION_PER_PROJECT),
        (f"memoir:inflight:credential:{caller.credential_id}", settings.MEMOIR_ADMISSION_PER_CREDENTIAL),
    ]
    limits = [(key, limit) for key, limit in limits if limit > 0]
    if not limits or time.monotonic() < _down_until[0]:
        return Ticket([])
    member = uuid.uuid4().hex
    now = time.time()
    try:
        pipe = _redis().pipeline()
        for key, _ in limits:
            pipe.zremrangebyscore(key, "-inf", now - _SLOT_TTL_SECONDS)
            pipe.zadd(key, {member: now})
            pipe.zcard(key)
            pipe.expire(key, _SLOT_TTL_SECONDS)
        counts = pipe.execute()[2::4]
    except redis.RedisError:
        _down_until[0] = time.monotonic() + 1.0
        logger.warning("admission skipped: redis unreachable")
        return Ticket([])
    ticket = Ticket([key for key, _ in limits], member)
    if any(count > limit for count, (_, limit) in zip(counts, limits, strict=True)):
        ticket.release()
        return None
    return ticket


class AdmissionThrottle(BaseThrottle):
    """Admission as DRF's throttle: the request's slots are kept on the view, which releases them when it is done."""

    def allow_request(self, request, view):
        ticket = admit(request.user)
        if ticket is None:
            return False
        view.admission_ticket = ticket
        return True

    def wait(self):
        return 1

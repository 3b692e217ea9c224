"""Work admission: concurrent in-flight requests counted in Redis per project and per credential
(api.md §1.4). Fails open when Redis is unreachable, so observe still answers with Redis down."""
import logging
import time

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

_client = None
_down_until = [0.0]  # after a Redis failure, skip admission briefly instead of paying a timeout per request
_SLOT_TTL_SECONDS = 60  # a crashed request's slot expires rather than leaking forever


def _redis():
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=0.25, socket_timeout=0.25)
    return _client


class Ticket:
    """The slots one request holds; release() gives them back."""

    def __init__(self, keys):
        self.keys = keys

    def release(self):
        if not self.keys:
            return
        try:
            pipe = _redis().pipeline()
            for key in self.keys:
                pipe.decr(key)
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
    try:
        pipe = _redis().pipeline()
        for key, _ in limits:
            pipe.incr(key)
            pipe.expire(key, _SLOT_TTL_SECONDS)
        counts = pipe.execute()[0::2]
    except redis.RedisError:
        _down_until[0] = time.monotonic() + 1.0
        logger.warning("admission skipped: redis unreachable")
        return Ticket([])
    ticket = Ticket([key for key, _ in limits])
    if any(count > limit for count, (_, limit) in zip(counts, limits, strict=True)):
        ticket.release()
        return None
    return ticket

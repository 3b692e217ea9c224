"""Logging for every process (web, worker, beat, commands): text or one JSON object per line
(MEMOIR_LOG_FORMAT), quiet periodic work, and expected refusals kept below ERROR (docs/operating.md §Logs).

A log line never holds content: formatters emit a fixed set of fields, never a record's arbitrary extras.
"""
import json
import logging
import traceback
from datetime import UTC, datetime

# Fields a record may carry into a JSON line (set through `extra=` by our own code only).
REQUEST_FIELDS = ("request_id", "op", "method", "route", "status", "duration_ms")

# Celery's per-message lines ("Sending due task …", "Task … received", "Task … succeeded in 0.01s") would
# print every few seconds forever; they log at WARNING and above only. Our task wrappers say at INFO when
# a periodic pass did something and at DEBUG when it did nothing. A sweep expires with its interval, so a worker
# busy past it discards the stale one ("Discarding revoked task", celery.worker.request at INFO): routine too.
QUIET_LOGGERS = ("celery.beat", "celery.app.trace", "celery.worker.strategy", "celery.worker.request")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the request fields and the exception type."""

    def format(self, record):
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in REQUEST_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value
        if record.exc_info and record.exc_info[0] is not None:
            # The type and the frames, not the exception's text: a database error's text can quote values.
            line["exc_type"] = record.exc_info[0].__name__
            line["stack"] = "".join(traceback.format_tb(record.exc_info[2]))[-4000:]
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The plain format, with the request fields appended when present."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record):
        text = super().format(record)
        extras = [f"{f}={getattr(record, f)}" for f in REQUEST_FIELDS if getattr(record, f, None) is not None]
        return f"{text} {' '.join(extras)}" if extras else text


class ExpectedRefusalFilter(logging.Filter):
    """django.request logs every 5xx at ERROR; the documented 501 (not implemented) and 503 (unavailable)
    answers are refusals the API promises, already logged by memoir.request at WARNING, so drop them here."""

    EXPECTED = (501, 503)

    def filter(self, record):
        status = getattr(record, "status_code", None)
        return not (status is not None and (status < 500 or status in self.EXPECTED))


def build_logging(*, fmt="text", level="INFO"):
    """The LOGGING dict for settings: `fmt` is "text" or "json"; `level` is the root level."""
    if fmt not in ("text", "json"):
        raise ValueError("MEMOIR_LOG_FORMAT is 'text' or 'json'")
    level = level.upper()
    quiet = "DEBUG" if level == "DEBUG" else "WARNING"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "text": {"()": "config.logs.TextFormatter"},
            "json": {"()": "config.logs.JsonFormatter"},
        },
        "filters": {"expected_refusals": {"()": "config.logs.ExpectedRefusalFilter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": fmt}},
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.request": {"level": "ERROR", "filters": ["expected_refusals"]},
            **{name: {"level": quiet} for name in QUIET_LOGGERS},
        },
    }

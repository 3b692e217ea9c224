"""GET /metrics in the Prometheus text format, answered only to a bearer of MEMOIR_METRICS_TOKEN (404 when
unset). Request counts and latencies are kept per process in prometheus_client's multiprocess mode (a
directory shared by the gunicorn workers); every other figure is read from the database at scrape time.

Labels are op names, status codes, closed-set reasons, queue names and project names: never a subject id,
a token or content (docs/operating.md §Metrics)."""
import hmac
import os

import redis
from django.conf import settings
from django.http import Http404, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from config import __version__
from console import dashboard_selectors as ds

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
QUEUES = ("formation", "default")
# kombu's Redis transport keeps each priority step of a queue in its own list: "<queue>", "<queue>\x06\x16<n>".
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")

REQUESTS = Counter("memoir_http_requests", "HTTP requests answered, by op and status.", ["op", "status"])
LATENCY = Histogram("memoir_http_request_duration_seconds", "Time to answer an HTTP request, by op.", ["op"],
                    buckets=BUCKETS)


def observe_request(*, op, status, seconds):
    REQUESTS.labels(op=op, status=str(status)).inc()
    LATENCY.labels(op=op).observe(seconds)


class DatabaseCollector:
    """Figures read at scrape time, so every worker answers the same and nothing is lost on a restart."""

    def collect(self):
        info = GaugeMetricFamily("memoir_info", "The running Memoir version.", labels=["version"])
        info.add_metric([__version__], 1)
        yield info

        ledger = CounterMetricFamily("memoir_ledger_entries", "Audit ledger rows by op and outcome (the ledger is"
                                     " append-only, so these only grow).", labels=["op", "outcome"])
        for op, outcome, count in ds.ledger_counts():
            ledger.add_metric([op, outcome], count)
        yield ledger

        backlog = GaugeMetricFamily("memoir_formation_backlog", "Turns stored but not yet formed (not parked).",
                                    labels=["project"])
        lag = GaugeMetricFamily("memoir_formation_lag_seconds", "Age of the oldest turn waiting for formation.",
                                labels=["project"])
        parked = GaugeMetricFamily("memoir_formation_parked", "Turns parked after repeated formation failures.",
                                   labels=["project"])
        for row in ds.formation_by_project():
            backlog.add_metric([row["name"]], row["backlog"])
            lag.add_metric([row["name"]], row["lag_seconds"])
            parked.add_metric([row["name"]], row["parked"])
        yield from (backlog, lag, parked)

        admitted = GaugeMetricFamily("memoir_claims_admitted", "Evidence rows of admitted claims now stored.",
                                     labels=["project"])
        for project, count in ds.claims_admitted():
            admitted.add_metric([project], count)
        yield admitted
        refused = GaugeMetricFamily("memoir_claims_refused", "Refused claims now stored, by reason.",
                                    labels=["project", "reason"])
        for project, reason, count in ds.refusals_by_reason():
            refused.add_metric([project, reason], count)
        yield refused

        erasures = CounterMetricFamily("memoir_erasures", "Completed erasures (receipts are never deleted).",
                                       labels=["project", "clean"])
        for project, done, clean, _open in ds.erasures_by_project():
            erasures.add_metric([project, "true"], clean)
            erasures.add_metric([project, "false"], done - clean)
        yield erasures
        sweeps = CounterMetricFamily("memoir_retention_sweeps", "Retention sweep receipts.", labels=["project"])
        swept = CounterMetricFamily("memoir_retention_swept_observations", "Observations deleted by retention.",
                                    labels=["project"])
        for project, count, observations in ds.retention_sweeps_by_project():
            sweeps.add_metric([project], count)
            swept.add_metric([project], observations)
        yield from (sweeps, swept)

        seal = ds.seal_state()
        age = GaugeMetricFamily("memoir_audit_seal_age_seconds", "Seconds since the last ledger seal (-1: never).")
        age.add_metric([], seal["seal_age_seconds"] if seal["seal_age_seconds"] is not None else -1)
        unsealed = GaugeMetricFamily("memoir_audit_unsealed_entries", "Ledger rows written since the last seal.")
        unsealed.add_metric([], seal["unsealed"])
        yield from (age, unsealed)

        depth = GaugeMetricFamily("memoir_celery_queue_depth", "Messages waiting in a Celery queue (Redis).",
                                  labels=["queue"])
        up = GaugeMetricFamily("memoir_broker_up", "1 when the broker answered this scrape.")
        lengths = queue_lengths()
        up.add_metric([], 0 if lengths is None else 1)
        for queue, length in (lengths or {}).items():
            depth.add_metric([queue], length)
        yield from (depth, up)


def queue_lengths():
    """{queue: messages waiting} from the broker, or None when it does not answer within a second."""
    try:
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=1, socket_connect_timeout=1)
        with client.pipeline() as pipe:
            for queue in QUEUES:
                for suffix in PRIORITY_SUFFIXES:
                    pipe.llen(queue + suffix)
            counts = pipe.execute()
    except redis.RedisError:
        return None
    steps = len(PRIORITY_SUFFIXES)
    return {queue: sum(counts[i * steps:(i + 1) * steps]) for i, queue in enumerate(QUEUES)}


def _authorized(request):
    token = settings.MEMOIR_METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    return given.startswith("Bearer ") and hmac.compare_digest(given[7:].encode(), token.encode())


@csrf_exempt
def metrics_view(request):
    if not settings.MEMOIR_METRICS_TOKEN:
        raise Http404
    if not _authorized(request):
        response = HttpResponse("metrics need the bearer token set in MEMOIR_METRICS_TOKEN\n", status=401,
                                content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REQUESTS)
        registry.register(LATENCY)
    registry.register(DatabaseCollector())
    response = HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response

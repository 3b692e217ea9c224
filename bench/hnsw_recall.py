"""What `passages.EF_SEARCH` and the index's precision cost in recall: HNSW top-k against the exact top-k on real
MiniLM vectors of real English (one-line comments and docstring sentences from the packages installed in the
virtualenv, deduplicated), for several hnsw.ef_search values, beside each one's query time, with the index over the
vectors as stored and over half-precision casts (what memory 0005 builds), both re-ranked exactly.
bench/passages.py stores random vectors, HNSW's worst case for speed, which say nothing about recall; this
measures recall where the vectors have a real model's structure.
Run: `.venv/bin/python bench/hnsw_recall.py` (BENCH_HNSW_N sentences, default 60,000; 200 more are the questions)."""
import os
import random
import time

import psycopg
from _common import bench_url, ensure_bench_database, sentences, setup_django

N = int(os.environ.get("BENCH_HNSW_N", "60000"))
QUESTIONS = 200
K = 40  # passages.MIN_VECTOR_CANDIDATES: the vector half's pool for a limit of 10
EF_VALUES = (40, 64, 100, 200)
def ranked(rows):
    """Ids nearest first (a relaxed-order scan may return them slightly out of order; search re-ranks too)."""
    return [id_ for id_, _ in sorted(rows, key=lambda row: (row[1], row[0]))]


def literal(vector):
    return "[" + ",".join(f"{x:.7f}" for x in vector) + "]"


def main():
    ensure_bench_database()
    setup_django()
    from memory import embedders

    found = sentences(N + QUESTIONS)
    random.Random(5).shuffle(found)
    questions, corpus = found[:QUESTIONS], found[QUESTIONS:N + QUESTIONS]
    print(f"hnsw recall bench: {len(corpus)} sentences, {len(questions)} questions, k={K}", flush=True)
    model = embedders.LocalEmbedder()
    started = time.perf_counter()
    vectors = [v for i in range(0, len(corpus), 1024) for v in model.embed(corpus[i:i + 1024])]
    question_vectors = [literal(v) for v in model.embed(questions)]
    print(f"  embedded in {time.perf_counter() - started:.0f}s", flush=True)
    with psycopg.connect(bench_url(), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_hnsw_recall")
        conn.execute("CREATE TABLE bench_hnsw_recall (id int PRIMARY KEY, embedding vector(384))")
        try:
            with conn.cursor().copy("COPY bench_hnsw_recall (id, embedding) FROM STDIN") as copy:
                for i, vector in enumerate(vectors):
                    copy.write_row((i, literal(vector)))
            conn.execute("SET maintenance_work_mem = '1GB'")
            query = "SELECT id, embedding <=> %s::vector AS d FROM bench_hnsw_recall ORDER BY d LIMIT %s"
            conn.execute("SET enable_indexscan = off")
            exact = [ranked(conn.execute(query, [q, K])) for q in question_vectors]
            conn.execute("RESET enable_indexscan")
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            # As the product reads: ordered by the index's expression, re-ranked by the exact distance.
            for kind, ops in (("vector", "vector_cosine_ops"), ("halfvec", "halfvec_cosine_ops")):
                conn.execute("DROP INDEX IF EXISTS bench_hnsw_recall_idx")
                started = time.perf_counter()
                conn.execute(f"CREATE INDEX bench_hnsw_recall_idx ON bench_hnsw_recall USING hnsw"
                             f" ((embedding::{kind}(384)) {ops})")
                conn.execute("ANALYZE bench_hnsw_recall")
                size = conn.execute("SELECT pg_size_pretty(pg_relation_size('bench_hnsw_recall_idx'))").fetchone()[0]
                print(f"  HNSW index over {kind} (m 16, ef_construction 64): built in"
                      f" {time.perf_counter() - started:.0f}s, {size}", flush=True)
                indexed = (f"SELECT id, embedding <=> %s::vector AS d FROM bench_hnsw_recall"
                           f" ORDER BY embedding::{kind}(384) <=> %s::{kind}(384) LIMIT %s")
                print(f"  {'ef_search':>9} {'recall@10':>9} {'recall@40':>9} {'p50 ms':>7} {'p95 ms':>7}")
                for ef in EF_VALUES:
                    conn.execute(f"SET hnsw.ef_search = {ef}")
                    plan = " ".join(row[0] for row in conn.execute("EXPLAIN " + indexed,
                                                                    [question_vectors[0], question_vectors[0], K]))
                    assert "bench_hnsw_recall_idx" in plan, plan
                    at10, at40, times = [], [], []
                    for q, truth in zip(question_vectors, exact):
                        started = time.perf_counter()
                        got = ranked(conn.execute(indexed, [q, q, K]))
                        times.append(time.perf_counter() - started)
                        at10.append(len(set(got[:10]) & set(truth[:10])) / 10)
                        at40.append(len(set(got) & set(truth)) / K)
                    times.sort()
                    print(f"  {ef:>9} {sum(at10) / len(at10):>9.3f} {sum(at40) / len(at40):>9.3f}"
                          f" {times[len(times) // 2] * 1000:>7.2f} {times[int(len(times) * 0.95)] * 1000:>7.2f}",
                          flush=True)
        finally:
            conn.execute("DROP TABLE IF EXISTS bench_hnsw_recall")


if __name__ == "__main__":
    main()

"""The vector tables' HNSW indexes are over half-precision casts (memory 0005); reads walk them and re-rank by the
exact distance of the stored vectors."""
import math
import random

import pytest
from django.db import connection, transaction

from memory import passage_schema, passages
from memory.passage_schema import INDEXED_DIMENSIONS, VECTOR_TABLES
from tests.passages.test_passages import build_all
from tests.recall.conftest import observe_turn


def _hnsw_indexes():
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) AND indexdef LIKE '%%hnsw%%'",
                       [list(VECTOR_TABLES)])
        return dict(cursor.fetchall())


@pytest.mark.django_db
def test_the_vector_tables_are_indexed_over_half_precision_casts():
    found = _hnsw_indexes()
    assert set(found) == {f"{table}_hnsw_half_{d}" for table in VECTOR_TABLES for d in INDEXED_DIMENSIONS}
    for table in VECTOR_TABLES:
        for d in INDEXED_DIMENSIONS:
            definition = found[f"{table}_hnsw_half_{d}"]
            assert f"((embedding)::halfvec({d})) halfvec_cosine_ops" in definition
            assert definition.endswith(f"WHERE (dimensions = {d})")
            assert passages.hnsw_kind(table, d) == "halfvec"


def test_the_migration_goes_back_to_full_precision_indexes_and_forward_again(owner_db):
    # As the tables' owner, in a transaction owner_db rolls back: the shared test database keeps its indexes.
    passage_schema.use_half_precision_hnsw(connection, half=False)
    back = _hnsw_indexes()
    assert set(back) == {f"{table}_hnsw_{d}" for table in VECTOR_TABLES for d in INDEXED_DIMENSIONS}
    assert "((embedding)::vector(384)) vector_cosine_ops" in back["passage_vector_hnsw_384"]
    passage_schema.use_half_precision_hnsw(connection, half=True)
    assert set(_hnsw_indexes()) == {f"{table}_hnsw_half_{d}" for table in VECTOR_TABLES for d in INDEXED_DIMENSIONS}


class _Recording:
    """A cursor that runs every statement and keeps the last one, to EXPLAIN what the product issued."""

    def __init__(self, cursor):
        self.cursor = cursor
        self.last = None

    def execute(self, sql, params=None):
        self.last = (sql, params)
        return self.cursor.execute(sql, params)

    def fetchall(self):
        return self.cursor.fetchall()

    def fetchone(self):
        return self.cursor.fetchone()


@pytest.mark.django_db
def test_an_approximate_read_walks_the_half_precision_index_and_ranks_by_the_exact_distance(project, fake,
                                                                                           endpoint_embedder):
    texts = ["Lisbon is where I live since spring.", "My sister visits in June.", "Rain again today.",
             "Lisbon trams are yellow and old.", "The bakery sells sourdough on Sundays.",
             "My sister lives near the old Lisbon bakery."]
    for text in texts:
        observe_turn(project, text, subject="ann")
    generation = build_all(project, endpoint_embedder)
    # An uneven question vector (a bag vector's equal components would lose their rounding in the normalisation).
    rng = random.Random(7)
    question_vector = [rng.gauss(0, 1) for _ in range(384)]
    literal = passages.vector_literal(question_vector)
    with transaction.atomic(), connection.cursor() as cursor:
        recording = _Recording(cursor)
        found = passages._vector(recording, generation, literal, None, None, 40, exact=False)
        sql, params = recording.last
        cursor.execute("SET LOCAL enable_seqscan = off")  # a few rows: make the planner show what it can use
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using passage_vector_hnsw_half_384" in plan, plan
    assert len(found) == len(texts)
    # Each distance is the stored vector's, not its half-precision cast's (which differs by ~1e-5 here), and the
    # order is by it.
    with connection.cursor() as cursor:
        cursor.execute("SELECT chunk_id::text, embedding <=> %s::vector FROM passage_vector WHERE generation_id = %s",
                       [literal, generation.generation_id])
        exact = dict(cursor.fetchall())
    for chunk, distance in found:
        assert math.isclose(distance, exact[chunk], rel_tol=0, abs_tol=1e-12), (distance, exact[chunk])
    assert [d for _, d in found] == sorted(exact.values())

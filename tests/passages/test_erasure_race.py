"""Erasure wins a race with the embedding follower: a subject erased while the follower is embedding their
messages leaves no vector, and the receipt counts every passage kind with residual 0 (two connections)."""
import threading
import time

from django.db import connection

from governance.erasure import erase
from memory import generations
from tests.conftest import make_project
from tests.fakeembeddings import fake_embeddings
from tests.passages.conftest import endpoint_for
from tests.recall.conftest import observe_turn, write_fact


def _count(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def test_erasure_during_embedding_stores_nothing(committed):
    project, _, _ = make_project(committed)
    with fake_embeddings() as fake, committed():
        embedder = endpoint_for(fake)
        assert embedder.identity.dimensions == 384  # the dimension probe happens before the race
        for n in range(3):
            observe_turn(project, f"Ann's private note number {n} about Quokkaville.", subject="ann")
        generation = generations.start(project=project, principal="cli", principal_kind="operator",
                                       embedder=embedder)
        fake.override = {"delay": 2.0}  # the model is slow: the erasure lands while it embeds
        outcome = {}

        def follower():
            try:
                outcome["page"] = generations.build(project=project, generation_id=generation.generation_id,
                                                    principal="system", principal_kind="system", embedder=embedder)
            finally:
                connection.close()

        thread = threading.Thread(target=follower)
        thread.start()
        deadline = time.monotonic() + 10
        while len(fake.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(fake.requests) >= 2, "the follower never asked the model"
        receipt = erase(project=project, data_subject_id="ann", principal="cli", principal_kind="operator")
        thread.join(30)
        assert not thread.is_alive()
        assert outcome["page"].embedded == 0
        assert receipt["deleted"]["passage_source"] == 3 and receipt["deleted"]["passage_tsvector"] == 3
        assert receipt["residual"]["passage_source"] == receipt["residual"]["passage_vector"] == 0
        assert receipt["clean"] is True
        assert _count("SELECT count(*) FROM passage_vector WHERE scope = %s", [project]) == 0
        assert _count("SELECT count(*) FROM passage_source WHERE scope = %s", [project]) == 0


def test_erasure_during_entity_embedding_stores_nothing_of_the_subject(committed):
    project, _, _ = make_project(committed)
    with fake_embeddings() as fake, committed():
        embedder = endpoint_for(fake)
        assert embedder.identity.dimensions == 384
        write_fact(project, content="I prefer Quokkaville.", quote="I prefer Quokkaville", predicate="prefers",
                   subject="I", object="Quokkaville", data_subject="ann")
        generation = generations.start(project=project, principal="cli", principal_kind="operator",
                                       embedder=embedder)
        while generations.build(project=project, generation_id=generation.generation_id, principal="cli",
                                principal_kind="operator", embedder=embedder).remaining:
            pass
        asked = len(fake.requests)
        fake.override = {"delay": 2.0}  # the model is slow: the erasure lands while it embeds the entities
        outcome = {}

        def follower():
            try:
                outcome["page"] = generations.build_entities(
                    project=project, generation_id=generation.generation_id, principal="system",
                    principal_kind="system", embedder=embedder)
            finally:
                connection.close()

        thread = threading.Thread(target=follower)
        thread.start()
        deadline = time.monotonic() + 10
        while len(fake.requests) <= asked and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(fake.requests) > asked, "the follower never asked the model"
        receipt = erase(project=project, data_subject_id="ann", principal="cli", principal_kind="operator")
        thread.join(30)
        assert not thread.is_alive()
        assert outcome["page"].embedded == 0
        assert receipt["residual"]["entity_vector"] == 0 and receipt["clean"] is True
        assert _count("SELECT count(*) FROM entity_vector WHERE scope = %s", [project]) == 0

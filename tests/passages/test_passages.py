"""Passages in process: sources written by the lexical follower, generations and their refusals, hybrid search, the
digest re-check, recall's passages and the speaker-anchor rule."""
import math
import time

import pytest
from django.db import connection

from core.encoding import parse_server_timing
from core.errors import Conflict
from governance import services
from memory import embedders, generations, lexical_index, passages
from memory.embedders import EmbedderError, checked
from tests.conftest import unique_name
from tests.fakeembeddings import bag_vector
from tests.passages.conftest import endpoint_for
from tests.recall.conftest import observe_turn, post, recall_ok, write_fact
from tests.support.db import one

pytestmark = pytest.mark.django_db


def build_all(project, embedder, *, activate=True):
    generation = generations.start(project=project, principal="cli", principal_kind="operator", embedder=embedder)
    while generations.build(project=project, generation_id=generation.generation_id, principal="cli",
                            principal_kind="operator", embedder=embedder).remaining:
        pass
    if activate:
        generations.activate(project=project, generation_id=generation.generation_id, principal="cli",
                             principal_kind="operator")
    return generation


def test_every_message_is_a_passage_source_written_by_the_follower(project):
    receipt = observe_turn(project, "The Zorblat launch moved to Tuesday.", subject="ann")
    # Searchable at once, with no embedder and before the follower ran: the tail is read directly.
    found = passages.search(project=project, question="When is the zorblat launching?")
    assert [h.source_id for h in found.hits] == [receipt.id] and found.build_state == "lexical_only"
    lexical_index.follow(project)
    chunk, digest, fmt, lexemes, subject = one(
        "SELECT ps.chunk_id, encode(ps.content_digest, 'hex'), ps.input_format, ps.lexemes::text, ps.data_subject_id"
        " FROM passage_source ps WHERE ps.source_id = %s", [receipt.id])
    assert fmt == "message-text/v1" and subject == "ann"
    assert digest == one("SELECT encode(sha256(convert_to(content, 'UTF8')), 'hex') FROM turn_message"
                         " WHERE chunk_id = %s", [chunk])[0]
    assert "'zorblat'" in lexemes and "'launch'" in lexemes
    again = passages.search(project=project, question="When is the zorblat launching?")
    assert [(h.chunk_id, h.similarity, h.content_digest) for h in again.hits] == [
        (str(chunk), found.hits[0].similarity, digest)] == [
        (h.chunk_id, h.similarity, h.content_digest) for h in found.hits]


def test_lexical_search_is_an_or_of_the_question_words_ranked_by_rarity(project):
    for text in ("We talked about the weather.", "The weather was fine and the picnic was fun.",
                 "My sister adopted a greyhound called Pixel.", "Weather again, weather always."):
        observe_turn(project, text)
    found = passages.search(project=project, question="What dog did my sister adopt during the weather?")
    assert found.hits[0].content == "My sister adopted a greyhound called Pixel."
    assert 0 < found.hits[0].similarity <= 1


def test_only_the_questions_rarest_lexemes_score_candidates(project):
    # 33 words, each held by one message, and a 34th held by two: with the cap at 32, the two commonest words
    # (by document count, then lexeme order) neither find nor score a message.
    rare = [f"zq{chr(97 + i // 26)}{chr(97 + i % 26)}x" for i in range(33)]
    for word in rare:
        observe_turn(project, f"Note {word}.")
    for n in range(2):
        observe_turn(project, f"Common zqcommonx number {n}.")
    lexical_index.follow(project)
    question = " ".join(rare + ["zqcommonx"])
    with connection.cursor() as cursor:
        found = passages.lexical_candidates(cursor, project=project, question=question, limit=32)
    contents = {one("SELECT content FROM turn_message WHERE chunk_id = %s", [chunk])[0] for chunk, _, _ in found}
    kept = sorted(rare)[:passages.MAX_QUESTION_LEXEMES]
    assert contents == {f"Note {word}." for word in kept}
    # Each kept message holds one of 32 equally rare lexemes: its share of the question's weight is 1/32.
    assert {round(fraction, 6) for _, _, fraction in found} == {round(1 / 32, 6)}


def test_hybrid_search_over_an_active_generation(project, auth, fake, endpoint_embedder):
    observe_turn(project, "Lisbon is where I live since spring.", subject="ann")
    observe_turn(project, "Tea or coffee, who knows.", subject="ann")
    observe_turn(project, "Rain rain rain.", subject="bob")
    generation = build_all(project, endpoint_embedder)
    response = post(auth, "/v1/passages/search", {"question": "lisbon live", "limit": 2})
    assert response.status_code == 200
    answer = response.json()
    assert answer["generation_id"] == str(generation.generation_id)
    assert answer["build_state"] == "complete" and answer["approximate"] is False
    assert answer["covered_through_offset"] == answer["through_offset"] == 2
    top = answer["passages"][0]
    assert top["preview"] == "Lisbon is where I live since spring." and top["preview_complete"] is True
    expected = sum(a * b for a, b in zip(bag_vector("lisbon live"), bag_vector(top["preview"]), strict=True))
    assert math.isclose(top["similarity"], round(expected, 4), abs_tol=1e-3)
    assert top["message_bytes"] == top["preview_byte_end"] == len(top["preview"].encode())
    # Subject and role filters; candidates > 0 asks for the index.
    mine = post(auth, "/v1/passages/search", {"question": "rain", "data_subject_id": "ann"}).json()
    assert all(p["preview"] != "Rain rain rain." for p in mine["passages"])
    approx = post(auth, "/v1/passages/search", {"question": "rain", "limit": 1, "candidates": 10}).json()
    assert approx["approximate"] is True and approx["passages"][0]["preview"] == "Rain rain rain."
    # Deterministic for the same data.
    assert post(auth, "/v1/passages/search", {"question": "lisbon live", "limit": 2}).json() == answer


def _timing(response):
    return parse_server_timing(response.headers.get("Server-Timing", ""))


def test_the_question_embedding_time_is_reported_apart(project, auth, fake, endpoint_embedder):
    observe_turn(project, "Lisbon is where I live.", subject="ann")
    lexical = post(auth, "/v1/passages/search", {"question": "lisbon"})
    assert lexical.status_code == 200 and "Server-Timing" not in lexical.headers  # nothing was embedded
    build_all(project, endpoint_embedder)
    fake.override = {"delay": 0.05}  # the model's time, so the figures have something to show
    for path in ("/v1/passages/search", "/v1/recalls"):
        started = time.perf_counter()
        response = post(auth, path, {"question": "where do I live"})
        took_ms = (time.perf_counter() - started) * 1000
        assert response.status_code == 200
        timing = _timing(response)
        assert timing["embed"] >= 50, timing
        # The wait is what the model cost the request beyond the lexical half (it may include the pool thread's
        # start); it is never negative and never more than the request took.
        assert 0 <= timing["embed-wait"] <= took_ms, timing


def test_a_new_message_is_not_covered_until_the_follower_embeds_it(project, fake, endpoint_embedder):
    observe_turn(project, "First words.")
    build_all(project, endpoint_embedder)
    observe_turn(project, "Second words about kayaks.")
    found = passages.search(project=project, question="kayaks")
    assert found.build_state == "catching_up" and found.covered_through_offset == 0 and found.through_offset == 1
    # Found lexically meanwhile; the vector half's nearest (weighted above a lexical rank) may lead it.
    assert [hit.content for hit in found.hits] == ["First words.", "Second words about kayaks."]
    assert found.hits[1].similarity > 0  # the share of the question's weight it matches: no vector yet
    assert generations.follow(project, budget=30) == 1
    assert passages.search(project=project, question="kayaks").build_state == "complete"


def test_activation_refused_while_a_source_lacks_a_vector(project, fake):
    embedder = endpoint_for(fake)
    observe_turn(project, "One.")
    observe_turn(project, "Two.")
    generation = generations.start(project=project, principal="cli", principal_kind="operator", embedder=embedder)
    generations.build(project=project, generation_id=generation.generation_id, principal="cli",
                      principal_kind="operator", embedder=embedder, page=1)
    with pytest.raises(Conflict) as refused:
        generations.activate(project=project, generation_id=generation.generation_id, principal="cli",
                             principal_kind="operator")
    assert refused.value.code == "generation_incomplete"
    with pytest.raises(Conflict):  # one building generation at a time
        generations.start(project=project, principal="cli", principal_kind="operator", embedder=embedder)
    assert generations.cancel(project=project, generation_id=generation.generation_id, principal="cli",
                              principal_kind="operator") == 1
    ops = [row[0] for row in _ledger(project)]
    assert ops[-3:] == ["embedding.start", "embedding.build", "embedding.cancel"]


def _ledger(project):
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, magnitude FROM audit_entry WHERE project = %s ORDER BY entry_id", [project])
        return cursor.fetchall()


def test_another_model_never_adds_to_or_searches_a_generation(project, fake):
    observe_turn(project, "Hello there.")
    generation = build_all(project, endpoint_for(fake))
    other = endpoint_for(fake, dimensions=384)
    object.__setattr__(other.config, "model", "another-model")
    with pytest.raises(Conflict) as refused:
        generations.build(project=project, generation_id=generation.generation_id, principal="cli",
                          principal_kind="operator", embedder=other)
    assert refused.value.code == "embedder_mismatch"


@pytest.mark.parametrize("vector,why", [([0.0] * 384, "all-zero"), ([1.0] * 383, "wrong dimension"),
                                        ([float("nan")] + [1.0] * 383, "non-finite"),
                                        ([float("inf")] + [1.0] * 383, "non-finite")])
def test_bad_vectors_are_refused_and_nothing_is_stored(project, fake, vector, why):
    embedder = endpoint_for(fake)
    observe_turn(project, "Some words.")
    generation = generations.start(project=project, principal="cli", principal_kind="operator", embedder=embedder)
    fake.override = {"vector": vector}
    with pytest.raises(EmbedderError) as refused:
        generations.build(project=project, generation_id=generation.generation_id, principal="cli",
                          principal_kind="operator", embedder=embedder)
    assert why in str(refused.value)
    assert one("SELECT count(*) FROM passage_vector WHERE generation_id = %s", [generation.generation_id])[0] == 0


def test_checked_normalises_to_unit_length():
    assert checked([3, 4], 2) == [0.6, 0.8]
    with pytest.raises(EmbedderError):
        checked([True, 1], 2)


def test_the_endpoint_must_be_allowlisted_and_https_off_loopback(fake):
    with pytest.raises(embedders.EmbedderConfigError):
        embedders.EndpointEmbedder(embedders.EndpointConfig(endpoint=fake.base_url, model="m", allowlist=()))
    with pytest.raises(embedders.EmbedderConfigError):
        embedders.EndpointEmbedder(embedders.EndpointConfig(endpoint="http://example.com/v1", model="m",
                                                            allowlist=("example.com:80",)))
    # The key goes in a header, never in the URL.
    embedder = endpoint_for(fake, api_key="sk-test")
    embedder.embed(["hi"])
    assert fake.requests[-1][1]["Authorization"] == "Bearer sk-test"


def test_prune_deletes_the_vectors_of_retired_generations(project, fake):
    observe_turn(project, "Alpha beta.")
    first = build_all(project, endpoint_for(fake))
    build_all(project, endpoint_for(fake))
    first.refresh_from_db()
    assert first.state == "retired"
    assert generations.prune(project=project, principal="cli", principal_kind="operator") == 1


def test_recall_consults_passages_with_the_subjects_messages_only(project, auth):
    observe_turn(project, "Our dog Pixel loves frisbee.", subject="ann")
    observe_turn(project, "Bob's dog Rex loves frisbee too.", subject="bob")
    bundle = recall_ok(auth, question="Which dog loves frisbee?", data_subject_id="ann")
    assert [p["quote"] for p in bundle["passages"]] == ["Our dog Pixel loves frisbee."]
    item = bundle["passages"][0]
    assert set(item) == {"chunk_id", "source_id", "ordinal", "role", "quote", "similarity", "occurred_at", "complete"}
    assert item["complete"] is True and bundle["degraded"] == ["reports_withheld_for_subject"]
    assert bundle["characters"] == len(item["quote"]) + len("user")
    explicit = recall_ok(auth, question="Which dog loves frisbee?", surfaces=["passages"])
    assert explicit["degraded"] == ["passages"]  # lexical only: no embedder here
    assert len(explicit["passages"]) == 2


def test_recall_quotes_are_capped_and_roles_filtered(project, auth):
    observe_turn(project, "frisbee " * 200, role="assistant")
    observe_turn(project, "I like frisbee.")
    bundle = recall_ok(auth, question="frisbee")
    assert [p["quote"] for p in bundle["passages"]] == ["I like frisbee."]
    wide = recall_ok(auth, question="frisbee", source_roles=["user", "assistant"])
    long = [p for p in wide["passages"] if p["role"] == "assistant"][0]
    assert len(long["quote"]) == 512 and long["complete"] is False


def test_speaker_facts_are_ordered_by_relevance_and_leave_room_for_passages(project, auth):
    # Many facts about the speaker, only one about pets; all reached through the speaker anchor.
    for n in range(40):
        write_fact(project, content=f"I work at Company{n} Limited.", quote=f"I work at Company{n}",
                   predicate="works_at", subject="I", object=f"Company{n}", data_subject="ann")
    write_fact(project, content="I own a parrot named Kiwi.", quote="I own a parrot named Kiwi", predicate="owns",
               subject="I", object="parrot named Kiwi", data_subject="ann")
    observe_turn(project, "Kiwi the parrot learned to whistle today.", subject="ann")
    question = "What can my parrot do?"
    bundle = recall_ok(auth, question=question, data_subject_id="ann", max_characters=2000)
    assert bundle["facts"][0]["predicate"] == "owns"
    assert "Kiwi the parrot learned to whistle today." in [p["quote"] for p in bundle["passages"]]
    assert recall_ok(auth, question=question, data_subject_id="ann", max_characters=2000) == bundle


def test_few_vectors_are_searched_exactly_and_a_large_subject_through_a_bounded_scan(project, fake, endpoint_embedder,
                                                                                      monkeypatch):
    for text in ("Lisbon is where I live since spring.", "My sister visits in June.", "Rain again today."):
        observe_turn(project, text, subject="ann")
    observe_turn(project, "Lisbon trams are yellow.", subject="bob")
    build_all(project, endpoint_embedder)
    assert one("SELECT indexdef FROM pg_indexes WHERE indexname = 'passage_vector_subject_idx'", [])[0].endswith(
        "(generation_id, data_subject_id)")
    small = passages.search(project=project, question="lisbon sister", data_subject_id="ann", approximate=True)
    assert small.semantic and small.approximate is False  # ann's three vectors are read whole
    assert {h.content for h in small.hits} == {"Lisbon is where I live since spring.", "My sister visits in June.",
                                               "Rain again today."}
    # A small generation is read whole too, even where recall allows the index (it may share the graph with
    # other projects' millions of vectors).
    whole = passages.search(project=project, question="lisbon sister", approximate=True)
    assert whole.approximate is False and len(whole.hits) == 4
    monkeypatch.setattr(passages, "EXACT_FEW_VECTORS", 2)
    monkeypatch.setattr(passages, "EXACT_SHARED_VECTORS", 2)  # whatever share of the stored vectors is the test's
    # A subject's share has its own, larger bound (a filtered walk costs more than reading it): ann's three vectors
    # are still read whole while the generation's four count as many.
    assert passages.search(project=project, question="lisbon sister", data_subject_id="ann",
                           approximate=True).approximate is False
    monkeypatch.setattr(passages, "EXACT_SUBJECT_VECTORS", 2)
    large = passages.search(project=project, question="lisbon sister", data_subject_id="ann", approximate=True)
    assert large.approximate is True
    assert one("SHOW hnsw.max_scan_tuples", [])[0] == str(passages.FILTERED_SCAN_TUPLES)
    assert [h.chunk_id for h in large.hits] == [h.chunk_id for h in small.hits]
    everyone = passages.search(project=project, question="lisbon sister", approximate=True)
    assert everyone.approximate is True and one("SHOW hnsw.max_scan_tuples", [])[0] == "20000"
    assert [h.chunk_id for h in everyone.hits] == [h.chunk_id for h in whole.hits]


def test_a_small_share_of_the_stored_vectors_is_read_whole_and_most_of_them_walked(project, fake, endpoint_embedder,
                                                                                   monkeypatch):
    other = unique_name()
    services.create_project(name=other, principal="cli")
    for n in range(3):
        observe_turn(project, f"Lisbon note number {n}.", subject="ann")
    for n in range(12):
        observe_turn(other, f"Porto note number {n}.", subject="bob")
    build_all(project, endpoint_embedder)
    build_all(other, endpoint_embedder)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE passage_vector")  # the planner's count of stored vectors, which the rule reads
    stored = one("SELECT reltuples FROM pg_class WHERE oid = 'passage_vector'::regclass", [])[0]
    assert stored >= 15
    monkeypatch.setattr(passages, "EXACT_FEW_VECTORS", 2)
    monkeypatch.setattr(passages, "EXACT_MAX_VECTORS", 2)
    # 3 of at least 15: a walk of a graph that is mostly other generations' would cost more than reading them.
    assert passages.search(project=project, question="lisbon note", approximate=True).approximate is False
    assert passages.search(project=project, question="lisbon note").approximate is False  # the route's rule too
    # 12 is most of the stored vectors unless earlier tests committed more than 9 others.
    assert passages.search(project=other, question="porto note", approximate=True).approximate is (stored <= 24)
    monkeypatch.setattr(passages, "EXACT_SHARED_VECTORS", 2)
    walked = passages.search(project=project, question="lisbon note", approximate=True)
    assert walked.approximate is True and len(walked.hits) == 3

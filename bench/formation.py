"""Formation throughput: a few thousand turns formed by one worker against a zero-latency fake model
(a real loopback HTTP server), in claims per second, beside the bare cost of the same inserts.
Run: `.venv/bin/python bench/formation.py` (or `make bench`)."""
import hashlib
import json
import logging
import os
import sys
import time
import uuid

import psycopg
from _common import ensure_bench_database, setup_django

logging.getLogger("httpx").setLevel(logging.WARNING)
TURNS = int(os.environ.get("BENCH_FORMATION_TURNS", "2000"))
SUBJECTS = 100


def turn_text(i):
    return f"I live in City{i} and work at Company{i % 300}."


def reply_for(i):
    return json.dumps({"claims": [
        {"subject": "I", "predicate": "lives_in", "object": f"City{i}", "statement": f"I live in City{i}.",
         "confidence": 0.9, "quote": f"I live in City{i}", "polarity": "asserted", "tense": "present"},
        {"subject": "I", "predicate": "works_at", "object": f"Company{i % 300}",
         "statement": f"I work at Company{i % 300}.", "confidence": 0.8, "quote": f"work at Company{i % 300}",
         "polarity": "asserted", "tense": "present"},
    ]})


def main():
    db_url = ensure_bench_database()
    setup_django()
    from django.db import connection

    from formation import driver
    from formation import vocabulary as vocab
    from formation.model_client import ModelConfig, ModelProposer
    from governance import services as governance
    from memory import services
    from tests.fakemodel import fake_model

    project = "bench_" + uuid.uuid4().hex[:10]
    governance.create_project(name=project, principal="cli")
    for i in range(TURNS):
        services.observe(project=project, data_subject_id=f"s{i % SUBJECTS}",
                         messages=[{"role": "user", "content": turn_text(i), "group_ordinal": 0}])
    v = vocab.load()
    with fake_model({turn_text(i): reply_for(i) for i in range(TURNS)}) as fake:
        proposer = ModelProposer(ModelConfig(endpoint=fake.base_url, model="bench", allowlist=(fake.authority,)),
                                 vocabulary=v.predicates, unresolvable=sorted(v.unresolvable))
        started = time.perf_counter()
        stats = driver.drain(project, proposer=proposer, run_budget=3600)
        elapsed = time.perf_counter() - started
    claims = stats.facts + stats.refusals
    rate = claims / elapsed
    print(f"formation benchmark: {TURNS} turns, {claims} claims ({stats.facts} facts, {stats.refusals} refusals),"
          f" one worker process, zero-latency model over loopback HTTP")
    print(f"driver: {elapsed:.2f}s  {rate:.1f} claims/s  {stats.turns_formed / elapsed:.1f} turns/s")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM fact_history WHERE scope = %s", [project])
        print(f"supersessions written: {cursor.fetchone()[0]}")

    # The floor: the same rows (2 entity upserts, fact, evidence, 3 registrations per claim) inserted directly,
    # one transaction per claim, with no proposer, gates, locks or supersession.
    raw_project = "bench_" + uuid.uuid4().hex[:10]
    governance.create_project(name=raw_project, principal="cli")
    ids = []
    for i in range(TURNS):
        ids.append(services.observe(project=raw_project, data_subject_id=f"s{i % SUBJECTS}",
                                    messages=[{"role": "user", "content": turn_text(i), "group_ordinal": 0}]).id)
    with psycopg.connect(db_url) as conn:
        started = time.perf_counter()
        raw_claims = 0
        for i, oid in enumerate(ids):
            for quote, name in ((f"I live in City{i}", f"City{i}"), (f"work at Company{i % 300}", f"Company{i % 300}")):
                start = turn_text(i).encode().find(quote.encode())
                with conn.transaction():
                    entity = conn.execute(
                        "INSERT INTO entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
                        " resolution_version, identity_kind, first_seen_at) VALUES (gen_random_uuid(), %s, %s, %s,"
                        " 'thing', '{}', 'entity/v1', 'named', now()) ON CONFLICT (scope, normalized_name)"
                        " WHERE identity_kind = 'named' DO UPDATE SET resolution_version = entity.resolution_version"
                        " RETURNING entity_id", [raw_project, name, name.lower()]).fetchone()[0]
                    fact_id = uuid.UUID(bytes=hashlib.sha256(f"{oid}{quote}".encode()).digest()[:16])
                    conn.execute(
                        "INSERT INTO fact (fact_id, scope, subject_entity_id, object_entity_id, predicate, cardinality,"
                        " statement, valid, known, confidence, source_role, data_subject_id, recorded_at, version)"
                        " VALUES (%s, %s, NULL, %s, 'works_at', 'many', %s, tstzrange(now(), NULL),"
                        " tstzrange(now(), NULL), 0, 'user', %s, now(), gen_random_uuid())",
                        [fact_id, raw_project, entity, quote, f"s{i % SUBJECTS}"])
                    conn.execute(
                        "INSERT INTO fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote,"
                        " byte_start, byte_end, extractor_version) VALUES (%s, %s, %s, 0, %s, %s, %s, 'rules/v1')",
                        [raw_project, fact_id, oid, quote, start, start + len(quote.encode())])
                    for kind, pid in (("fact", fact_id), ("entity", entity), ("entity", entity)):
                        conn.execute(
                            "INSERT INTO projection_dependency (scope, source_observation_id, projection_kind,"
                            " projection_id, data_subject_id, pipeline_version, registered_at)"
                            " VALUES (%s, %s, %s, %s, %s, 'v1', now()) ON CONFLICT DO NOTHING",
                            [raw_project, oid, kind, str(pid), f"s{i % SUBJECTS}"])
                raw_claims += 1
        raw_elapsed = time.perf_counter() - started
    raw_rate = raw_claims / raw_elapsed
    print(f"bare inserts: {raw_elapsed:.2f}s  {raw_rate:.1f} claims/s")
    print(f"ratio driver/bare = {rate / raw_rate:.2f}")
    print(f"target (>= 200 claims/s per worker): {'met' if rate >= 200 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

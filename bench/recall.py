"""Recall at 1,000,000 facts: bulk load with COPY into the bench database, then time POST /v1/recalls
over HTTP (gunicorn) at concurrency 1 and 8 beside the same anchor-and-walk SQL run directly, with
EXPLAIN (ANALYZE, BUFFERS) plans. Run: `.venv/bin/python bench/recall.py` (not part of `make test`)."""
import json
import logging
import os
import random
import re
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import psycopg
from _common import bench_url, ensure_bench_database, fmt, index_lexically, setup_django, summary, timed_pool

logging.getLogger("httpx").setLevel(logging.WARNING)

PROJECT = os.environ.get("BENCH_RECALL_PROJECT", "bench_recall_1m")
ORDINARY = 197_588  # ordinary entities, 5 outgoing facts each
PER_ENTITY = 5
HUB_OUT, HUB_IN, CAP = 10_000, 2_000, 64  # the capped entity has exactly CAP facts in each direction
FACTS_PER_MESSAGE = 10
PREDICATES = ("uses", "knows", "works_with", "prefers", "interested_in")  # all cardinality "many"
REQUESTS_C1 = int(os.environ.get("BENCH_RECALL_C1", "400"))
REQUESTS_C8 = int(os.environ.get("BENCH_RECALL_C8", "1600"))
BASE = datetime(2025, 1, 1, tzinfo=UTC)
TS = "%Y-%m-%d %H:%M:%S.%f+00"


def expected_facts():
    return ORDINARY * PER_ENTITY + HUB_OUT + HUB_IN + 2 * CAP


def edges():
    """(subject index, object index, predicate) for every fact. Index ORDINARY is the hub, +1 the capped."""
    hub, capped = ORDINARY, ORDINARY + 1
    for i in range(ORDINARY):
        for k in range(PER_ENTITY):
            o = (i * 7919 + (k + 1) * 104_729) % ORDINARY
            if o == i:
                o = (o + 1) % ORDINARY
            yield i, o, PREDICATES[k]
    for j in range(HUB_OUT):
        yield hub, (j * 31) % ORDINARY, "uses"
    for j in range(HUB_IN):
        yield (j * 97 + 5) % ORDINARY, hub, "knows"
    for j in range(CAP):
        yield capped, (j * 13 + 3) % ORDINARY, "uses"
        yield (j * 17 + 11) % ORDINARY, capped, "knows"


def name(index):
    return {ORDINARY: "Hub", ORDINARY + 1: "Capped"}.get(index, f"E{index}")


def loaded(conn):
    row = conn.execute("SELECT count(*) FROM fact WHERE scope = %s", [PROJECT]).fetchone()
    return row[0] == expected_facts()


def load(conn):
    """COPY entities, turns, messages, facts and evidence; every quote really is its message's bytes."""
    started = time.perf_counter()
    entity_ids = [uuid.uuid4() for _ in range(ORDINARY + 2)]
    now = datetime.now(UTC).strftime(TS)
    with conn.cursor() as cur, cur.copy(
            "COPY entity (entity_id, scope, canonical_name, normalized_name, entity_type, aliases,"
            " resolution_version, identity_kind, first_seen_at) FROM STDIN") as copy:
        for index, entity_id in enumerate(entity_ids):
            copy.write_row((entity_id, PROJECT, name(index), name(index).lower(), "thing", "{}", "entity/v1",
                            "named", now))
    conn.commit()
    print(f"  entities {len(entity_ids)} in {time.perf_counter() - started:.0f}s", flush=True)

    all_edges = list(edges())
    messages = (len(all_edges) + FACTS_PER_MESSAGE - 1) // FACTS_PER_MESSAGE
    observation_ids = [uuid.uuid4() for _ in range(messages)]
    contents, spans = [], []
    for m in range(messages):
        parts, offset = [], 0
        prefix = f"Turn {m}. "
        offset = len(prefix.encode())
        for s, o, predicate in all_edges[m * FACTS_PER_MESSAGE:(m + 1) * FACTS_PER_MESSAGE]:
            quote = f"{name(s)} {predicate.replace('_', ' ')} {name(o)}"
            spans.append((quote, offset, offset + len(quote.encode())))
            parts.append(quote + ". ")
            offset += len(quote.encode()) + 2
        contents.append(prefix + "".join(parts) + "That is all I wanted to say about it today.")
    with conn.cursor() as cur, cur.copy(
            "COPY observation (observation_id, scope, log_offset, kind, occurred_at, ingested_at, source_role,"
            " formed_at, formation_attempts, extractor_version) FROM STDIN") as copy:
        for m, observation_id in enumerate(observation_ids):
            at = (BASE + timedelta(seconds=m)).strftime(TS)
            copy.write_row((observation_id, PROJECT, m, "turn", at, at, "user", at, 1, "rules/v1"))
    conn.execute("INSERT INTO watermark (scope, log_offset, watermark_at, updated_at, formed_offset)"
                 " VALUES (%s, %s, now(), now(), %s)", [PROJECT, messages - 1, messages - 1])
    with conn.cursor() as cur, cur.copy(
            "COPY turn_message (observation_id, ordinal, role, content, group_ordinal, occurred_at) FROM STDIN") as copy:
        for m, observation_id in enumerate(observation_ids):
            copy.write_row((observation_id, 0, "user", contents[m], 0, (BASE + timedelta(seconds=m)).strftime(TS)))
    conn.commit()
    print(f"  turns {messages} in {time.perf_counter() - started:.0f}s", flush=True)

    fact_ids = [uuid.uuid4() for _ in range(len(all_edges))]
    with conn.cursor() as cur, cur.copy(
            "COPY fact (fact_id, scope, subject_entity_id, object_entity_id, predicate, cardinality, statement,"
            " valid, known, confidence, source_role, recorded_at, version) FROM STDIN") as copy:
        for j, (s, o, predicate) in enumerate(all_edges):
            recorded = (BASE + timedelta(seconds=j)).strftime(TS)
            # Outside the capped entity's exact 64+64, 3% were retracted (knowledge closed) and 10% came
            # from the assistant: recall filters both before the cap.
            varied = j < len(all_edges) - 2 * CAP
            closed = varied and j % 33 == 7
            known = f"[{recorded},{(BASE + timedelta(seconds=j, hours=1)).strftime(TS)})" if closed \
                else f"[{recorded},)"
            role = "assistant" if varied and j % 10 == 9 else "user"
            copy.write_row((fact_ids[j], PROJECT, entity_ids[s], entity_ids[o], predicate, "many",
                            spans[j][0] + ".", f"[{BASE.strftime(TS)},)", known, 0.8, role, recorded, uuid.uuid4()))
    conn.commit()
    print(f"  facts {len(fact_ids)} in {time.perf_counter() - started:.0f}s", flush=True)
    with conn.cursor() as cur, cur.copy(
            "COPY fact_evidence (scope, fact_id, source_observation_id, source_ordinal, quote, byte_start,"
            " byte_end, extractor_version) FROM STDIN") as copy:
        for j, fact_id in enumerate(fact_ids):
            quote, start, end = spans[j]
            copy.write_row((PROJECT, fact_id, observation_ids[j // FACTS_PER_MESSAGE], 0, quote, start, end,
                            "rules/v1"))
    conn.commit()
    print(f"  evidence {len(fact_ids)} (span trigger checked each) in {time.perf_counter() - started:.0f}s",
          flush=True)
    for table in ("entity", "observation", "turn_message", "fact", "fact_evidence"):
        conn.execute(f"ANALYZE {table}")
    conn.commit()
    print(f"  loaded and analyzed in {time.perf_counter() - started:.0f}s", flush=True)


def ensure_project():
    from governance import services

    with psycopg.connect(bench_url()) as conn:
        exists = conn.execute("SELECT 1 FROM project WHERE name = %s", [PROJECT]).fetchone()
        if exists and loaded(conn):
            print(f"reusing {PROJECT}: {expected_facts()} facts already loaded")
        else:
            if exists:
                raise SystemExit(f"{PROJECT} exists but is incomplete; set BENCH_RECALL_PROJECT to another name")
            services.create_project(name=PROJECT, principal="cli")
            print(f"loading {expected_facts()} facts into {PROJECT} ...", flush=True)
            load(conn)
    index_lexically(PROJECT)  # recall's passages read the sources the follower would have written
    _, token = services.issue_credential(project=PROJECT, name="bench", principal="cli")
    return token


# --- measurement -------------------------------------------------------------------------------

def question_for(index):
    return f"What does {name(index)} use?"


def http_run(url, token, questions, concurrency):
    def call(client, question):
        started = time.perf_counter()
        response = client.post(url + "/v1/recalls", content=json.dumps({"question": question}))
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, response.text
        return elapsed, len(response.json()["facts"])

    _, stats, facts = timed_pool(
        questions, concurrency, call=call,
        open_resource=lambda: httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30))
    return stats, sum(facts) / len(facts)


def direct_sql(conn, question):
    """What recall's selector sends, on a bare psycopg connection: the anchor query, then the walk, both
    as prepared statements exactly as the server sends them."""
    from memory import recall

    found = recall.check_question(question)
    with conn.cursor() as cursor:
        anchors = [a["entity_id"] for a in recall._anchors(cursor, PROJECT, found, None)]
        walk, params = recall.walk_statement(project=PROJECT, anchors=anchors)
        return cursor.execute(walk, params, prepare=True).fetchall()


def sql_run(questions):
    latencies = []
    with psycopg.connect(bench_url(), autocommit=True) as conn:
        for question in questions:
            started = time.perf_counter()
            direct_sql(conn, question)
            latencies.append(time.perf_counter() - started)
    return summary(latencies)


def sql_pairs(questions, rounds):
    latencies = [[] for _ in questions]
    with psycopg.connect(bench_url(), autocommit=True) as conn:
        for _ in range(rounds):
            for i, question in enumerate(questions):
                started = time.perf_counter()
                direct_sql(conn, question)
                latencies[i].append(time.perf_counter() - started)
    return [summary(values[20:]) for values in latencies]


def selector_run(questions):
    from django.conf import settings

    from memory import recall

    applied = recall.controls(server_budget=settings.MEMOIR_BUNDLE_CHARACTERS)
    latencies = []
    for question in questions:
        started = time.perf_counter()
        bundle = recall.recall(project=PROJECT, question=question, applied=applied)
        json.dumps(bundle, ensure_ascii=False)
        latencies.append(time.perf_counter() - started)
    return summary(latencies)


def explain(label, questions, **walk_options):
    """EXPLAIN (ANALYZE, BUFFERS) of the anchor query and the walk: the custom plan PostgreSQL makes for
    the first executions, then the generic plan a prepared statement may switch to (via auto_explain)."""
    from memory import recall

    question = questions[0]
    plans = []
    with psycopg.connect(bench_url(), autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
        found = recall.check_question(question)
        anchor_sql = recall._ANCHOR_NAMED + f" LIMIT {recall.MAX_ANCHORS + 1}"
        plans.append("\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + anchor_sql,
                                                        {"project": PROJECT, "terms": found})))
        anchors = [row[0] for row in conn.execute(anchor_sql, {"project": PROJECT, "terms": found}).fetchall()]
        walk, params = recall.walk_statement(project=PROJECT, anchors=anchors, **walk_options)
        conn.execute(walk, params).fetchall()  # warm this connection's caches: the plan shown is a warm one
        plans.append("\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + walk, params)))
    notices = []
    with psycopg.connect(bench_url(), autocommit=True) as conn:
        conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        for setting in ("LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
                        "SET auto_explain.log_analyze = on", "SET auto_explain.log_buffers = on",
                        "SET plan_cache_mode = force_generic_plan"):
            conn.execute(setting)
        with conn.cursor() as cursor:
            anchors = [a["entity_id"] for a in recall._anchors(cursor, PROJECT, recall.check_question(question), None)]
            walk, params = recall.walk_statement(project=PROJECT, anchors=anchors, **walk_options)
            cursor.execute(walk, params, prepare=True).fetchall()
            cursor.execute("SET client_min_messages = log")
            cursor.execute(walk, params, prepare=True).fetchall()
            cursor.execute("SET client_min_messages = notice")
    generic = [n for n in notices if "walk" in n and "Recursive Union" in n]
    plans.append("generic plan (prepared statement, auto_explain):\n" + (generic[-1] if generic else "(none)"))
    text = "\n\n".join(plans)
    seq = re.findall(r"Seq Scan on (entity|fact)\b", text)
    times = re.findall(r"Execution Time: ([0-9.]+) ms", text)
    print(f"\n---- EXPLAIN {label} ({question!r}, {walk_options or 'current read, 1 hop'}):"
          f" custom-plan execution {' + '.join(times)} ms; seq scans on entity/fact: {seq or 'none'}")
    print(text)
    return not seq


def main():
    ensure_bench_database()
    setup_django()
    token = ensure_project()
    from tests.support.processes import RedisProcess, WebServer, service_env

    redis = RedisProcess().start()
    server = WebServer(service_env(os.environ.get("MEMOIR_BENCH_DB", "memoir_bench"), redis.url)).start()
    rng = random.Random(7)
    ordinary = [question_for(rng.randrange(ORDINARY)) for _ in range(REQUESTS_C8)]
    try:
        http_run(server.url, token, ordinary[:50], 4)  # warm both workers and their connections
        sql_run(ordinary[:50])
        print(f"\nrecall benchmark: {expected_facts()} facts, {os.cpu_count()} cores, gunicorn 2 workers x 8 threads,"
              f" load average {os.getloadavg()[0]:.1f} (other work on the machine skews the tails)")
        results = {}
        for label, questions in (("ordinary", ordinary), ("capped(64)", [question_for(ORDINARY + 1)] * 200),
                                 ("hub(10k)", [question_for(ORDINARY)] * 200)):
            c1, facts = http_run(server.url, token, questions[:REQUESTS_C1], 1)
            direct = sql_run(questions[:REQUESTS_C1])
            selector = selector_run(questions[:REQUESTS_C1])
            results[label] = (c1, direct)
            print(f"{label:11s} HTTP c=1 {fmt(c1)}  ({facts:.1f} facts/bundle)")
            print(f"{label:11s} selector {fmt(selector)}  (memory.recall.recall in process: SQL + bundle)")
            print(f"{label:11s} SQL  c=1 {fmt(direct)}")
            print(f"{label:11s} ratio HTTP/SQL p50 = {c1['p50_ms'] / direct['p50_ms']:.2f}")
        # Hub against the capped anchor, alternating request by request so machine noise hits both alike.
        pair = sql_pairs([question_for(ORDINARY), question_for(ORDINARY + 1)], 300)
        print(f"hub    SQL alternating {fmt(pair[0])}")
        print(f"capped SQL alternating {fmt(pair[1])}")
        c8, _ = http_run(server.url, token, ordinary, 8)
        print(f"ordinary    HTTP c=8 {fmt(c8)}")
        baseline, _ = freshness_run(server.url, token, 200)
        print(f"framework floor: GET /v1/freshness c=1 {fmt(baseline)}")

        ok_plans = all([
            explain("ordinary", ordinary),
            explain("capped", [question_for(ORDINARY + 1)]),
            explain("hub", [question_for(ORDINARY)]),
            explain("ordinary 2 hops", ordinary[1:], hops=2),
            explain("hub as_of", [question_for(ORDINARY)], as_of=datetime.now(UTC)),
            explain("hub as_known_at", [question_for(ORDINARY)], as_known_at=datetime.now(UTC)),
        ])
        c1 = results["ordinary"][0]
        print("\ntargets:")
        print(f"  ordinary p95 c=1 {c1['p95_ms']:.1f} ms <= 25: {'met' if c1['p95_ms'] <= 25 else 'NOT met'}")
        print(f"  ordinary p95 c=8 {c8['p95_ms']:.1f} ms <= 60: {'met' if c8['p95_ms'] <= 60 else 'NOT met'}")
        hub, capped = pair
        print(f"  hub SQL p50 {hub['p50_ms']:.2f} ms vs capped {capped['p50_ms']:.2f} ms:"
              f" {'met' if hub['p50_ms'] <= capped['p50_ms'] * 1.25 + 0.5 else 'NOT met'} (hub costs no more)")
        print(f"  no Seq Scan on entity or fact: {'met' if ok_plans else 'NOT met'}")
    finally:
        server.stop()
        redis.stop()
    return 0


def freshness_run(url, token, n):
    latencies = []
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        for _ in range(n):
            started = time.perf_counter()
            assert client.get(url + "/v1/freshness").status_code == 200
            latencies.append(time.perf_counter() - started)
    return summary(latencies), None


if __name__ == "__main__":
    sys.exit(main())

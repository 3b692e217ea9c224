"""The rebuild acceptance test with real parts: 1,000 turns formed under rules/v1 re-formed by a model extractor
(the loopback fake model) in a real Celery worker while new turns arrive over HTTP; the worker is SIGKILLed
halfway and another resumes from the durable cursor once the dead one's lease expires. Every turn ends formed
once under the target, human records intact, history kept, and `freshness.rebuilding` shown only while it runs.

Its own module so that no other worker (with another extractor) shares the database while it runs."""
import time
import uuid

import httpx
import pytest
from django.db import connection

from formation import curation, rebuild
from governance.selectors import Caller
from tests.conftest import make_project
from tests.fakemodel import fake_model
from tests.formation.rebuild_support import (
    SUBJECT,
    claim,
    duplicate_evidence,
    forget_proposers,
    mixed_readings,
    pins,
    reply,
    seed,
)
from tests.support.processes import CeleryWorker, RedisProcess, WebServer, service_env, wait_for

pytestmark = [pytest.mark.live, pytest.mark.worker]

TURNS = 1000
ARRIVALS = 20
MODEL_DELAY = 0.002  # seconds per model reply, so the kill lands with the job well inside its range


def content(i):
    kind = i % 4
    if kind == 0:
        return f"I live in Town{i}."  # kept
    if kind == 1:
        return "Yeah, I love to."  # rules/v1 junk: prefers `to`
    if kind == 2:
        return f"I prefer tea{i}."  # kept, plus interested_in
    return "Hello there."


def replies():
    out = {}
    for i in range(TURNS + ARRIVALS):
        text = content(i)
        if i % 4 == 0:
            out[text] = reply(claim("lives_in", f"Town{i}", text[:-1]))
        elif i % 4 == 2:
            out[text] = reply(claim("prefers", f"tea{i}", text[:-1]), claim("interested_in", f"tea{i}", text[:-1]))
    return {text: {"content": body, "delay": MODEL_DELAY} for text, body in out.items()}


def expected_fact_ids(committed, project, target):
    """The fact ids the target's reading of every turn makes, computed apart from the job: the proposer and the
    gates run here on each stored message (a retracted claim is left out by the caller)."""
    from formation import vocabulary as vocab

    proposer = rebuild.proposer_for(target)
    out = set()
    with committed(), connection.cursor() as cursor:
        v = vocab.load()
        cursor.execute("SELECT observation_id::text, log_offset FROM observation WHERE scope = %s AND kind = 'turn'",
                       [project])
        turns = cursor.fetchall()
        messages = rebuild._messages([oid for oid, _ in turns])
        for oid, offset in turns:
            out |= set(rebuild.read_source(project, oid, offset, messages[oid], proposer, v).expected())
    return out


def _job(committed, project):
    with committed():
        return rebuild.latest_job(project=project)


def test_rebuild_survives_sigkill_while_new_turns_arrive(test_database_name, committed, settings):
    run_acceptance(test_database_name, committed, settings, "model")


def run_acceptance(test_database_name, committed, settings, target):
    """Seed 1,000 turns under rules/v1, rebuild to `target` in a real worker killed halfway, check the end."""
    project, token, credential = make_project(committed)
    seed(committed, project, [content(i) for i in range(TURNS)])
    auth = {"Authorization": f"Bearer {token}"}
    caller = Caller(credential_id=credential, project=project, access="read_write", retention_days=None)
    with committed(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.fact_id::text, f.version::text FROM fact f JOIN entity o ON o.entity_id = f.object_entity_id"
            " WHERE f.scope = %s AND f.predicate = 'prefers' AND o.canonical_name = 'tea2'", [project])
        tea = cursor.fetchone()
        curation.retract_records(caller=caller, items=[{"id": tea[0], "expected_version": tea[1]}])
        asserted = curation.assert_records(caller=caller, items=[{
            "idempotency_key": str(uuid.uuid4()), "subject": "I", "predicate": "prefers", "object": "coffee",
            "statement": "I prefer coffee.", "data_subject_id": SUBJECT}])[0]
        cursor.execute("SELECT count(*) FROM fact_history WHERE scope = %s", [project])
        history_before = cursor.fetchone()[0]

    redis = RedisProcess().start()
    with fake_model(replies()) as fake:
        settings.MEMOIR_EXTRACTION_ENDPOINT = fake.base_url
        settings.MEMOIR_EXTRACTION_MODEL = "fake-extractor"
        settings.MEMOIR_EXTRACTION_ALLOWLIST = fake.authority
        forget_proposers()
        env = service_env(test_database_name, redis.url, MEMOIR_FORMATION_INTERVAL=1, MEMOIR_FORMATION_BACKOFF=1,
                          MEMOIR_EXTRACTOR="rules", MEMOIR_EXTRACTION_ENDPOINT=fake.base_url,
                          MEMOIR_EXTRACTION_MODEL="fake-extractor", MEMOIR_EXTRACTION_ALLOWLIST=fake.authority,
                          MEMOIR_REBUILD_LEASE=3, MEMOIR_REBUILD_SLICE=1)
        web = WebServer(env, workers=1, threads=2).start()
        worker = None
        try:
            def freshness():
                return httpx.get(web.url + "/v1/freshness", headers=auth, timeout=10).json()

            def arrive(i):
                body = {"idempotency_key": str(uuid.uuid4()), "data_subject_id": SUBJECT,
                        "messages": [{"role": "user", "content": content(i)}]}
                assert httpx.post(web.url + "/v1/observations", json=body, headers=auth, timeout=10).status_code == 201

            assert "rebuilding" not in freshness()
            with committed():
                job = rebuild.start(project=project, target=target, principal="cli")
                version = job["target_version"]
            through = job["reinterpreting_through"]
            assert freshness()["rebuilding"]["reinterpreting_through"] == through
            worker = CeleryWorker(env, beat=True).start()
            started = time.monotonic()
            arrived = 0
            while (_job(committed, project)["reinterpreted_through"] or -1) < through // 2:
                if arrived < ARRIVALS // 2:
                    arrive(TURNS + arrived)
                    arrived += 1
                time.sleep(0.05)
                assert time.monotonic() - started < 60, "the rebuild made no progress"
            worker.kill_hard()  # SIGKILL to the whole group, mid-slice
            halfway = _job(committed, project)
            assert halfway["state"] == "running" and halfway["reinterpreted_through"] < through
            shown = freshness()["rebuilding"]
            assert shown["reinterpreted_through"] == halfway["reinterpreted_through"]
            assert shown["sources_acknowledged"] + shown["sources_skipped"] > 0
            while arrived < ARRIVALS:  # more turns while no worker runs
                arrive(TURNS + arrived)
                arrived += 1
            worker = CeleryWorker(env, beat=True).start()
            wait_for(lambda: _job(committed, project)["state"] == "completed", 90, interval=0.25,
                     what="the rebuild to complete")
            elapsed = time.monotonic() - started
            wait_for(lambda: freshness()["formed"] == freshness()["stored"], 30, interval=0.25,
                     what="the arrivals to form")
            assert "rebuilding" not in freshness()
            expected = expected_fact_ids(committed, project, target) - {tea[0]}  # a retracted claim never returns
        finally:
            if worker is not None:
                worker.stop()
            web.stop()
            redis.stop()
            forget_proposers()

    done = _job(committed, project)
    assert done["reinterpreted_through"] == through
    # Every turn of the range finished exactly once: a source killed mid-transaction was rolled back and redone.
    assert done["sources_acknowledged"] == TURNS and done["sources_skipped"] == 0
    assert done["entities_purged"] >= 1  # at least `to`, which only rules/v1 ever named
    with committed(), connection.cursor() as cursor:
        assert pins(cursor, project) == {version: TURNS + ARRIVALS}
        assert mixed_readings(cursor, project) == 0 and duplicate_evidence(cursor, project) == 0
        cursor.execute("SELECT f.fact_id::text FROM fact f JOIN fact_evidence x ON x.fact_id = f.fact_id"
                       " WHERE f.scope = %s AND upper_inf(f.known) AND x.extractor_version = %s", [project, version])
        assert {row[0] for row in cursor.fetchall()} == expected
        cursor.execute("SELECT count(*) FROM entity WHERE scope = %s AND normalized_name = 'to'", [project])
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM fact f JOIN fact_evidence x ON x.fact_id = f.fact_id"
                       " WHERE f.scope = %s AND upper_inf(f.known) AND x.extractor_version = 'rules/v1'", [project])
        assert cursor.fetchone()[0] == 0
        # Human records intact: the assertion unchanged, the retraction kept and not regenerated.
        cursor.execute("SELECT version::text, upper_inf(known) FROM fact WHERE fact_id = %s", [asserted["id"]])
        assert cursor.fetchone() == (asserted["version"], True)
        cursor.execute("SELECT upper_inf(f.known), (SELECT count(*) FROM record_retraction r"
                       " WHERE r.target_fact_id = f.fact_id) FROM fact f WHERE f.fact_id = %s", [tea[0]])
        assert cursor.fetchone() == (False, 1)
        # History kept: nothing archived before was lost (the purged junk never had history).
        cursor.execute("SELECT count(*) FROM fact_history WHERE scope = %s", [project])
        assert cursor.fetchone()[0] >= history_before
        cursor.execute("SELECT count(*) FROM audit_entry WHERE project = %s AND operation = 'formation.rebuild'"
                       " AND principal_kind = 'system'", [project])
        assert cursor.fetchone()[0] >= 2  # slices before and after the kill
    print(f"\nrebuild of {TURNS} turns to {target} with a SIGKILL and a 3 s lease expiry: {elapsed:.1f}s")

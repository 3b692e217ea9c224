"""Extractor rebuild speed: a project of turns formed under rules/v1 re-formed by a target extractor through the
job machinery (lease, fence, cursor, one transaction per source), in turns per second, beside a plain baseline:
the same proposer forming the same turns fresh through the driver (no old reading to replace, no job).
Targets: the configured zero-latency fake model over loopback HTTP, and rules/v2 when it is installed.
Run: `.venv/bin/python bench/rebuild.py` (BENCH_REBUILD_TURNS, default 1000)."""
import json
import logging
import os
import sys
import time
import uuid

from _common import ensure_bench_database, setup_django

logging.getLogger("httpx").setLevel(logging.WARNING)
TURNS = int(os.environ.get("BENCH_REBUILD_TURNS", "1000"))
SUBJECTS = 50
TARGET = 100.0  # turns per second (issue 12)


def turn_text(i):
    kind = i % 5
    if kind == 0:
        return f"I live in City{i}."
    if kind == 1:
        return "Yeah, I love to."
    if kind == 2:
        return f"I prefer tea{i % 40} and I work at Company{i % 30}."
    if kind == 3:
        return f"We talked for ages yesterday about the match, number {i}."
    return f"I use Tool{i % 20}."


def reply_for(i):
    text = turn_text(i)
    claims = []
    if i % 5 == 0:
        claims.append(("lives_in", f"City{i}", f"I live in City{i}"))
    elif i % 5 == 2:
        claims += [("prefers", f"tea{i % 40}", f"I prefer tea{i % 40}"),
                   ("works_at", f"Company{i % 30}", f"work at Company{i % 30}")]
    elif i % 5 == 4:
        claims.append(("uses", f"Tool{i % 20}", f"I use Tool{i % 20}"))
    return text, json.dumps({"claims": [
        {"subject": "I", "predicate": p, "object": o, "statement": q + ".", "confidence": 0.9, "quote": q,
         "polarity": "asserted", "tense": "present"} for p, o, q in claims]})


def _seed(project, governance, services, driver, rules):
    governance.create_project(name=project, principal="cli")
    for start in range(0, TURNS, 256):
        for i in range(start, min(TURNS, start + 256)):
            services.observe(project=project, data_subject_id=f"s{i % SUBJECTS}",
                             messages=[{"role": "user", "content": turn_text(i), "group_ordinal": 0}])
        if rules is not None:
            driver.drain(project, proposer=rules, run_budget=3600)


def _rebuild(project, target, rebuild):
    rebuild.start(project=project, target=target, principal="cli")
    started = time.perf_counter()
    while True:
        result = rebuild.run_slice(project, budget=3600, lease_seconds=60)
        if result.state == "completed":
            break
        if result.state not in ("more", "waiting"):
            raise SystemExit(f"rebuild stopped: {result.state}")
    elapsed = time.perf_counter() - started
    return elapsed, rebuild.latest_job(project=project)


def _baseline(target_proposer, governance, services, driver):
    project = "bench_" + uuid.uuid4().hex[:10]
    _seed(project, governance, services, driver, None)
    started = time.perf_counter()
    formed = 0
    while formed < TURNS:
        stats = driver.drain(project, proposer=target_proposer, run_budget=3600)
        formed += stats.turns_formed
        if not stats.turns_formed:
            break
    return time.perf_counter() - started, formed


def main():
    ensure_bench_database()
    setup_django()
    from django.conf import settings

    from formation import driver, rebuild
    from formation.rules import RulesProposer
    from governance import services as governance
    from memory import services
    from tests.fakemodel import fake_model

    rules = RulesProposer()
    rows = []
    with fake_model(dict(reply_for(i) for i in range(TURNS))) as fake:
        settings.MEMOIR_EXTRACTION_ENDPOINT = fake.base_url
        settings.MEMOIR_EXTRACTION_MODEL = "bench"
        settings.MEMOIR_EXTRACTION_ALLOWLIST = fake.authority
        targets = ["model"] + [t for t in ("rules/v2",) if rebuild.proposer_for(t) is not None]
        for target in targets:
            project = "bench_" + uuid.uuid4().hex[:10]
            _seed(project, governance, services, driver, rules)
            elapsed, job = _rebuild(project, target, rebuild)
            base_elapsed, formed = _baseline(rebuild.proposer_for(target), governance, services, driver)
            rows.append((target if target != "model" else "model (fake, 0 ms)", TURNS / elapsed, formed / base_elapsed,
                         job))
    print(f"rebuild benchmark: {TURNS} turns formed under rules/v1, re-formed in one process"
          " (one transaction per source, synchronous_commit off as formation's own commits)")
    print(f"{'target':<22} {'rebuild turns/s':>16} {'baseline turns/s':>17} {'ratio':>6}  gained/lost/purged")
    for name, rate, base, job in rows:
        print(f"{name:<22} {rate:>16.1f} {base:>17.1f} {rate / base:>6.2f}  {job['facts_gained']}/{job['facts_lost']}"
              f"/{job['entities_purged']}")
    worst = min(rate for _, rate, _, _ in rows)
    print(f"target (>= {TARGET:.0f} turns/s): {'met' if worst >= TARGET else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Observe throughput before vs after a change: run bench/observe.py from two checkouts alternately (base, head,
base, head, ...) against the same PostgreSQL server and Redis, each checkout in its own bench database, and
print requests/s and p50/p95 per run plus the head/base ratio of the means. Issue 11 asks that observe stays
within 5 % of what it was before passages. Run:
`.venv/bin/python bench/observe_compare.py BASE_CHECKOUT [HEAD_CHECKOUT] [ROUNDS]` (head defaults to this checkout,
rounds to 2). DATABASE_URL (an admin role on the shared server) and REDIS_URL are handed to both."""
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^c=(\d+) (HTTP|raw)\s+([\d.]+) turns/s\s+n=\d+ p50=([\d.]+)ms p95=([\d.]+)ms p99=([\d.]+)ms")


def run(label, tree, round_no):
    env = dict(os.environ, MEMOIR_BENCH_DB=f"memoir_bench_observe_{label}")
    proc = subprocess.run([str(Path(tree) / ".venv/bin/python"), "bench/observe.py"], cwd=tree, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{label} run {round_no} failed")
    rows = {}
    for line in proc.stdout.splitlines():
        match = LINE.match(line)
        if match:
            c, kind, rate, p50, p95, p99 = match.groups()
            rows[(int(c), kind)] = (float(rate), float(p50), float(p95), float(p99))
    load = os.getloadavg()[0]
    for (c, kind), (rate, p50, p95, p99) in sorted(rows.items()):
        print(f"| {round_no} | {label} | {c} | {kind} | {rate:.1f} | {p50:.2f} | {p95:.2f} | {p99:.2f} | {load:.2f} |",
              flush=True)
    return rows


def main():
    base = Path(sys.argv[1]).resolve()
    head = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else HERE
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    print("| round | tree | c | path | turns/s | p50 ms | p95 ms | p99 ms | load avg (1 min) after |")
    print("|---|---|---|---|---|---|---|---|---|")
    results = {"base": [], "head": []}
    for round_no in range(1, rounds + 1):
        for label, tree in (("base", base), ("head", head)):
            results[label].append(run(label, tree, round_no))
    print("\n| c | path | base turns/s (mean) | head turns/s (mean) | head/base | base p95 (mean) | head p95 (mean) |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(results["base"][0]):
        b = [r[key] for r in results["base"]]
        h = [r[key] for r in results["head"]]
        b_rate, h_rate = statistics.fmean(x[0] for x in b), statistics.fmean(x[0] for x in h)
        print(f"| {key[0]} | {key[1]} | {b_rate:.1f} | {h_rate:.1f} | {h_rate / b_rate:.3f} |"
              f" {statistics.fmean(x[2] for x in b):.2f} | {statistics.fmean(x[2] for x in h):.2f} |")


if __name__ == "__main__":
    main()

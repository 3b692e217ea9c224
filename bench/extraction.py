"""Extraction quality and speed of the rules proposers on the hand-labelled corpus (bench/data/extraction_corpus.json).

Each message goes through the proposer AND the gates exactly as formation applies them (what would be
believed); no database is needed. Prints precision and recall per predicate and overall for rules/v1 and
rules/v2 side by side (all messages, and the held-out fifth), junk objects, time-word accuracy and speed.
Run: `.venv/bin/python bench/extraction.py` (`--misses` lists rules/v2's errors on the tuning part).
"""
import ast
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

from _common import ROOT, project_path_first

project_path_first()

from core.text import normalize  # noqa: E402
from formation.gates import Admitted, effective_unresolvable, judge  # noqa: E402
from formation.proposals import Message, PredicateSpec  # noqa: E402
from formation.rules import RulesProposer  # noqa: E402
from formation.rules_v2 import RulesV2Proposer  # noqa: E402
from memory.vocabulary import PREDICATES, SPEAKER_TERMS, UNRESOLVABLE_TERMS  # noqa: E402

CORPUS = ROOT / "bench" / "data" / "extraction_corpus.json"
VOCABULARY = [PredicateSpec(name, st, card, kind, desc, event) for name, st, card, kind, event, desc in PREDICATES]
BY_NAME = {spec.name: spec for spec in VOCABULARY}
UNRESOLVABLE = effective_unresolvable([t for terms in UNRESOLVABLE_TERMS.values() for t in terms], SPEAKER_TERMS)
SPEAKERS = frozenset(normalize(t) for t in SPEAKER_TERMS)
# What an object must never be: function words, pronouns, deictics and known fragments.
JUNK = frozenset({
    "to", "it", "them", "this", "that", "these", "those", "here", "there", "the idea", "part of", "so", "too",
    "a", "an", "the", "of", "in", "on", "for", "with", "me", "you", "him", "her", "us", "one", "all", "both",
    "every day", "everything", "something", "anything", "nothing", "idea", "part", "lot", "a lot", "bit",
})
_LEADING = ("a ", "an ", "the ", "my ", "our ")


def canonical(text):
    name = normalize(text).strip(" .,!?")
    for lead in _LEADING:
        if name.startswith(lead):
            name = name[len(lead):]
    return name


def believed(proposer, message):
    """The admitted claims for one corpus message: (subject, predicate, object, proposal)."""
    occurred = datetime.fromisoformat(message["occurred_at"].replace("Z", "+00:00"))
    proposals = proposer.propose(Message("user", message["text"], occurred), VOCABULARY)
    admitted, out = set(), []
    for proposal in proposals:
        verdict = judge(proposal, content=message["text"], vocabulary=BY_NAME, unresolvable=UNRESOLVABLE,
                        admitted=admitted)
        if isinstance(verdict, Admitted) and not ending(proposal):
            subject = "I" if normalize(proposal.subject) in SPEAKERS else proposal.subject
            out.append((subject, proposal.predicate, proposal.object, proposal))
    return out


def ending(proposal):
    """ "I lost my job as a banker": it closes a value already held, and asserts nothing new."""
    return proposal.valid_until is not None and proposal.valid_from is None


def matches(claim, expected):
    subject, predicate, obj, _ = claim
    return (normalize(expected["subject"]) == normalize(subject) and predicate in expected["predicates"]
            and canonical(obj) in {canonical(o) for o in expected["objects"]})


def is_junk(obj):
    name = canonical(obj)
    return not name or name in JUNK or normalize(obj) in JUNK or normalize(obj) in UNRESOLVABLE


def evaluate(proposer, messages):
    per = {}  # predicate -> [true positives, proposed, expected]
    junk, misses, timed, time_right = [], [], 0, 0
    for message in messages:
        claims = believed(proposer, message)
        expected = message["claims"]
        used = set()
        for claim in claims:
            row = per.setdefault(claim[1], [0, 0, 0])
            row[1] += 1
            if is_junk(claim[2]):
                junk.append((message["id"], claim[2]))
            hit = next((i for i, e in enumerate(expected) if i not in used and matches(claim, e)), None)
            if hit is None:
                misses.append(("false", message, claim))
                continue
            used.add(hit)
            row[0] += 1
            want = expected[hit].get("valid_from")
            if want:
                timed += 1
                got = claim[3].valid_from
                time_right += int(got is not None and got.date().isoformat() == want)
        for i, e in enumerate(expected):
            per.setdefault(e["predicates"][0], [0, 0, 0])[2] += 1
            if i not in used:
                misses.append(("missed", message, e))
    return per, junk, misses, (time_right, timed)


def ratio(a, b):
    return f"{a / b:.2f}" if b else "  - "


def table(title, messages, results):
    print(f"\n== {title}: {len(messages)} messages, {sum(len(m['claims']) for m in messages)} accepted claims ==")
    print(f"{'predicate':<16} | {'v1 P':>5} {'v1 R':>5} {'v1 n':>4} | {'v2 P':>5} {'v2 R':>5} {'v2 n':>4} | expected")
    v1, v2 = results
    names = sorted(set(v1[0]) | set(v2[0]))
    totals = {}
    for name in names:
        cells = []
        for key, (per, *_rest) in (("v1", v1), ("v2", v2)):
            tp, proposed, expected = per.get(name, [0, 0, 0])
            sums = totals.setdefault(key, [0, 0, 0])
            for i, value in enumerate((tp, proposed, expected)):
                sums[i] += value
            cells.append(f"{ratio(tp, proposed):>5} {ratio(tp, expected):>5} {proposed:>4}")
        expected = v2[0].get(name, v1[0].get(name, [0, 0, 0]))[2]
        print(f"{name:<16} | {cells[0]} | {cells[1]} | {expected}")
    cells = [f"{ratio(t[0], t[1]):>5} {ratio(t[0], t[2]):>5} {t[1]:>4}" for t in (totals["v1"], totals["v2"])]
    print(f"{'ALL':<16} | {cells[0]} | {cells[1]} | {totals['v2'][2]}")
    for key, (_, junk, _, (right, timed)) in (("rules/v1", v1), ("rules/v2", v2)):
        print(f"{key}: junk objects {len(junk)} {junk[:5] if junk else ''}; time words right {right}/{timed}")


def pathological_inputs():
    """The 64 KiB inputs of tests/formation/test_rules.py (its bounded-work test), read from the test itself."""
    tree = ast.parse((ROOT / "tests" / "formation" / "test_rules.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "test_work_stays_bounded_on_a_64_kib_message":
            return eval(compile(ast.Expression(node.decorator_list[0].args[1]), "test_rules", "eval"))  # noqa: S307
    raise SystemExit("pathological inputs not found")


def speed(proposer, messages):
    texts = [m["text"] for m in messages]
    for text in texts:
        proposer.propose(Message("user", text), VOCABULARY)
    rounds = 20
    started = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            proposer.propose(Message("user", text), VOCABULARY)
    mean_ms = (time.perf_counter() - started) * 1000 / (rounds * len(texts))
    worst = []
    for content in pathological_inputs():
        started = time.perf_counter()
        proposer.propose(Message("user", content), VOCABULARY)
        worst.append(time.perf_counter() - started)
    return mean_ms, max(worst), statistics.median(worst)


def main():
    corpus = json.loads(Path(CORPUS).read_text())
    messages = corpus["messages"]
    proposers = (RulesProposer(), RulesV2Proposer())
    parts = (("all", messages), ("tuning (4 of 5)", [m for m in messages if not m["held_out"]]),
             ("held-out (every 5th)", [m for m in messages if m["held_out"]]))
    for title, part in parts:
        table(title, part, [evaluate(p, part) for p in proposers])
    print()
    for proposer in proposers:
        mean_ms, worst, median = speed(proposer, messages)
        print(f"{proposer.version}: {mean_ms:.3f} ms per ordinary message; 64 KiB inputs worst {worst:.3f} s"
              f" (median {median:.3f} s)")
    if "--misses" in sys.argv:
        _, _, misses, _ = evaluate(proposers[1], parts[1][1])
        for kind, message, what in misses:
            shown = what if kind == "missed" else what[:3]
            print(f"{kind:6} #{message['id']:<4} {message['text']!r} -> {shown}")


if __name__ == "__main__":
    main()

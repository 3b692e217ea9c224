"""Builds bench/data/extraction_corpus.json from the hand-written batch*.txt files in this folder.

Line format: ``category|text|claims``; a ``*`` after the category dates the message on D2 instead of D.
Claims are ``;``-separated ``[Subject>]predicate[^predicate]:object[^object][@valid_from[~valid_until]]``.
"""
import json
import pathlib

HERE = pathlib.Path(__file__).parent
D, D2 = "2026-05-13T18:00:00Z", "2026-01-07T09:30:00Z"
HEADER = {
    "description": "Ordinary conversational messages written for this project, each with the claims a careful"
                   " reader would accept. Every message is a 'user' message from one data subject.",
    "schema": {
        "id": "1-based position",
        "category": "chat, event, plan, job, place, people, pet, hobby, misc, hedge, deny, question, sarcasm,"
                    " quote, hypo, mixed",
        "text": "the message content",
        "occurred_at": "the message time the time words resolve against",
        "held_out": "true for every 5th message: never used to tune rules",
        "claims": "accepted claims: subject ('I' = the speaker), predicates (any one of them is accepted),"
                  " objects (any one, compared after normalize() and dropping a leading a/an/the/my),"
                  " valid_from (YYYY-MM-DD the fact's valid time should start on; absent = not judged),"
                  " valid_until (YYYY-MM-DD, for a state stated as over)",
    },
}


def claim(text):
    subject, _, rest = text.rpartition(">")
    predicates, _, rest = rest.partition(":")
    objects, _, when = rest.partition("@")
    start, _, until = when.partition("~")
    out = {"subject": subject.strip() or "I", "predicates": predicates.strip().split("^"),
           "objects": [o.strip() for o in objects.split("^")]}
    if start:
        out["valid_from"] = start.strip()
    if until:
        out["valid_until"] = until.strip()
    return out


def main():
    messages = []
    for path in sorted(HERE.glob("batch*.txt")):
        for line in path.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            category, text, claims = line.split("|")
            index = len(messages) + 1
            messages.append({
                "id": index, "category": category.rstrip("*"), "text": text,
                "occurred_at": D2 if category.endswith("*") else D, "held_out": index % 5 == 0,
                "claims": [claim(c) for c in claims.split(";") if c.strip()],
            })
    out = HERE.parent / "extraction_corpus.json"
    out.write_text(json.dumps({"header": HEADER, "messages": messages}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(messages)} messages, {sum(bool(m['claims']) for m in messages)} with claims -> {out}")


if __name__ == "__main__":
    main()

"""Which 512 characters of a long message a recall passage quotes. Recall's passages quote at most 512 characters of
a message; our sets' turns are short, so each speaker's turns of a conversation are joined here into one long message
(as a person pasting their notes would send; `--join session`: each session's), and for every question whose
answer-bearing turn lies in a joined message longer than the quote, this counts how often the quote holds that whole
turn: the window rule (memory/relevance.py) beside the message's first 512 characters. Offline: no server, no
database.
Run: `.venv/bin/python bench/quotes.py [--join session] [--locomo FILE]`."""
import argparse
import json
import statistics
import sys
from collections import defaultdict

from _common import BENCH_DIR, bench_module, setup_django

setup_django()  # memory.recall imports models; no database is opened

from memory.recall import MAX_QUOTE_CHARS  # noqa: E402
from memory.relevance import quote_window, terms  # noqa: E402

SET_PATH = BENCH_DIR / "data" / "retrieval_conversations.json"


def joined_messages(data, join):
    """{(conversation, session index or None, speaker key): the joined text} and {turn id: that key}."""
    joined, key_of = defaultdict(list), {}
    for conversation in data["conversations"]:
        for index, session in enumerate(conversation["sessions"]):
            for message in session["messages"]:
                key = (conversation["id"], index if join == "session" else None, message["speaker"])
                joined[key].append(message["content"])
                key_of[message["id"]] = key
    return {key: " ".join(parts) for key, parts in joined.items()}, key_of


def measure(data, join):
    texts, key_of = joined_messages(data, join)
    turn_text = {m["id"]: m["content"] for c in data["conversations"] for s in c["sessions"] for m in s["messages"]}
    counted, held = 0, {"first 512 characters": 0, "window (relevance.quote_window)": 0}
    for question in data["questions"]:
        keys = {key_of[turn] for turn in question["answer_message_ids"] if turn in key_of}
        long_keys = [key for key in keys if len(texts[key]) > MAX_QUOTE_CHARS]
        if not long_keys:
            continue
        counted += 1
        asked = terms(question["question"])
        answers = [turn_text[t] for t in question["answer_message_ids"] if t in turn_text]
        quoted = {"first 512 characters": [texts[key][:MAX_QUOTE_CHARS] for key in long_keys],
                  "window (relevance.quote_window)": [quote_window(texts[key], asked, MAX_QUOTE_CHARS)
                                                      for key in long_keys]}
        for label, quotes in quoted.items():
            held[label] += any(answer in quote for answer in answers for quote in quotes)
    lengths = [len(text) for text in texts.values()]
    longer = sum(n > MAX_QUOTE_CHARS for n in lengths)
    print(f"each speaker's turns of a {join} joined: {len(texts)} messages, {longer} longer than the quote"
          f" (median {statistics.median(lengths):.0f} characters, longest {max(lengths)});"
          f" {counted} of {len(data['questions'])} questions have their answer in one of those")
    print(f"{'quote':34s} {'holds a whole answer turn':>26s}")
    for label, n in held.items():
        print(f"{label:34s} {n / counted if counted else 0:26.3f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", metavar="FILE", help="a LoCoMo-format file instead of the labelled set")
    parser.add_argument("--join", choices=("session", "conversation"), default="conversation",
                        help="join each speaker's turns of a whole conversation (default) or of each session")
    args = parser.parse_args(argv)
    data = (bench_module("_locomo").locomo_set(args.locomo) if args.locomo
            else json.loads(SET_PATH.read_text(encoding="utf-8")))
    measure(data, args.join)
    return 0


if __name__ == "__main__":
    sys.exit(main())

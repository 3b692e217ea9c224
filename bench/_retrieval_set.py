"""The labelled retrieval set: builds bench/data/retrieval_conversations.json from the hand-written
sources in bench/data/retrieval_src/*.txt, and loads it. Run `python bench/_retrieval_set.py` after
editing a source; the format of both is described in bench/data/README.md."""
import json
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
SOURCE_DIR = DATA_DIR / "retrieval_src"
SET_PATH = DATA_DIR / "retrieval_conversations.json"
VERSION = "memoir-retrieval-set/v1"
CATEGORIES = ("single-hop", "temporal", "multi-session", "preference", "plan")

_MESSAGE = re.compile(r"^(\d+) ([a-z]+): (.+)$")
_QUESTION = re.compile(r"^\? ([a-z]+) ([a-z-]+) ([\d,]+) \| (.+)$")


def _at(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(text, *, origin="<source>"):
    """One source file -> (conversations, questions). Messages are numbered 1..n through the whole
    conversation; a question names the numbers of the messages that hold its answer."""
    conversations, questions = [], []
    conversation = None

    def fail(line_no, why):
        raise ValueError(f"{origin}:{line_no}: {why}")

    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("=== "):
            conversation = {"id": line[4:].strip(), "speakers": [], "sessions": []}
            conversations.append(conversation)
            numbers = {}
            conversation["_numbers"] = numbers
        elif conversation is None:
            fail(line_no, "text before the first '=== <conversation id>'")
        elif line.startswith("speaker "):
            _, key, name = line.split(" ", 2)
            conversation["speakers"].append(
                {"key": key, "name": name, "data_subject_id": f"{conversation['id']}-{key}"})
        elif line.startswith("--- "):
            sid = f"{conversation['id']}-s{len(conversation['sessions']) + 1}"
            conversation["sessions"].append({"id": sid, "occurred_at": _iso(_at(line[4:].strip())), "messages": []})
        elif line.startswith("? "):
            match = _QUESTION.match(line)
            if not match:
                fail(line_no, "question line must read '? <speaker> <category> <n,n> | <question>'")
            about, category, answer, question = match.groups()
            ids = []
            for n in answer.split(","):
                if int(n) not in conversation["_numbers"]:
                    fail(line_no, f"answer message {n} does not exist")
                ids.append(conversation["_numbers"][int(n)])
            questions.append({"id": f"{conversation['id']}-q{len([q for q in questions if q['conversation'] == conversation['id']]) + 1:02d}",
                              "conversation": conversation["id"], "asked_about": about, "question": question,
                              "answer_message_ids": ids, "category": category})
        else:
            match = _MESSAGE.match(line)
            if not match or not conversation["sessions"]:
                fail(line_no, "message line must read '<n> <speaker>: <text>' inside a session")
            number, speaker, content = int(match.group(1)), match.group(2), match.group(3).strip()
            if number != len(conversation["_numbers"]) + 1:
                fail(line_no, f"message number {number} out of sequence")
            session = conversation["sessions"][-1]
            mid = f"{conversation['id']}-m{number:02d}"
            moment = _at(session["occurred_at"]) + timedelta(minutes=len(session["messages"]))
            session["messages"].append({"id": mid, "speaker": speaker, "content": content, "occurred_at": _iso(moment)})
            conversation["_numbers"][number] = mid
    for conversation in conversations:
        conversation.pop("_numbers")
    return conversations, questions


def problems(data):
    """Everything wrong with a built set, as readable strings (empty when sound)."""
    found = []
    message_ids, by_conversation = set(), {}
    for conversation in data["conversations"]:
        keys = {s["key"] for s in conversation["speakers"]}
        if len(conversation["speakers"]) != 2 or len(keys) != 2:
            found.append(f"{conversation['id']}: needs exactly two distinct speakers")
        if not 3 <= len(conversation["sessions"]) <= 6:
            found.append(f"{conversation['id']}: {len(conversation['sessions'])} sessions (3-6 expected)")
        speakers_of = {}
        for session in conversation["sessions"]:
            for message in session["messages"]:
                if message["id"] in message_ids:
                    found.append(f"duplicate message id {message['id']}")
                message_ids.add(message["id"])
                if message["speaker"] not in keys:
                    found.append(f"{message['id']}: unknown speaker {message['speaker']}")
                speakers_of[message["id"]] = message["speaker"]
        if not 30 <= len(speakers_of) <= 60:
            found.append(f"{conversation['id']}: {len(speakers_of)} messages (30-60 expected)")
        if set(speakers_of.values()) != keys:
            found.append(f"{conversation['id']}: both speakers must speak")
        by_conversation[conversation["id"]] = (keys, speakers_of)
    question_ids = set()
    for question in data["questions"]:
        if question["id"] in question_ids:
            found.append(f"duplicate question id {question['id']}")
        question_ids.add(question["id"])
        keys, speakers_of = by_conversation.get(question["conversation"], (set(), {}))
        if question["asked_about"] not in keys:
            found.append(f"{question['id']}: asked_about {question['asked_about']} is not a speaker")
        if question["category"] not in CATEGORIES:
            found.append(f"{question['id']}: unknown category {question['category']}")
        missing = [m for m in question["answer_message_ids"] if m not in speakers_of]
        if missing or not question["answer_message_ids"]:
            found.append(f"{question['id']}: answer ids {missing or '[]'} not in {question['conversation']}")
        elif question["asked_about"] not in {speakers_of[m] for m in question["answer_message_ids"]}:
            found.append(f"{question['id']}: no answer message is spoken by {question['asked_about']}")
    return found


def build():
    conversations, questions = [], []
    for path in sorted(SOURCE_DIR.glob("*.txt")):
        c, q = parse(path.read_text(encoding="utf-8"), origin=path.name)
        conversations += c
        questions += q
    return {"version": VERSION,
            "description": "Hand-written multi-session chats between two people, with questions labelled by the"
                           " message ids that hold each answer. Schema: bench/data/README.md.",
            "categories": list(CATEGORIES), "conversations": conversations, "questions": questions}


def load(path=SET_PATH):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def main():
    data = build()
    found = problems(data)
    for problem in found:
        print(problem, file=sys.stderr)
    if found:
        return 1
    SET_PATH.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    messages = sum(len(s["messages"]) for c in data["conversations"] for s in c["sessions"])
    print(f"wrote {SET_PATH.relative_to(DATA_DIR.parent.parent)}: {len(data['conversations'])} conversations,"
          f" {messages} messages, {len(data['questions'])} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

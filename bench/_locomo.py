"""A LoCoMo-format file (a list of samples, each with its qa and conversation) read into the shape of the labelled
set bench/retrieval.py measures. No data is shipped: the file is the user's (README, "Retrieval quality")."""
import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

LOCOMO_SKIPPED_CATEGORIES = (5,)  # adversarial: the answer is in no message


def locomo_time(text):
    """"1:56 pm on 8 May, 2023" as UTC."""
    return datetime.strptime(text.replace(",", ""), "%I:%M %p on %d %B %Y").replace(tzinfo=UTC)


def asked_about(question, names):
    """The speaker key the question names first (a whole word, any case), or None."""
    found = []
    for key, name in names.items():
        match = re.search(rf"\b{re.escape(name.split()[0])}\b", question, re.IGNORECASE)
        if match:
            found.append((match.start(), key))
    return min(found)[1] if found else None


def dialogue_ids(evidence):
    """The turn ids a question's evidence names: some entries hold several ("D9:1 D4:4") or a zero-padded turn
    ("D30:05"); anything else is kept as written (and matches no turn)."""
    found = []
    for entry in evidence:
        for part in re.split(r"[\s;,]+", entry.strip()):
            match = re.fullmatch(r"D:?(\d+):0*(\d+)", part)
            found.append(f"D{match[1]}:{match[2]}" if match else part)
    return found


def locomo_set(path, samples=None):
    """The set's shape from LoCoMo's file: each turn a message (its text alone; an image's caption is not
    conversation) at its session's time plus a second per turn; questions of categories 1-4 whose evidence names
    a turn and that name a speaker (asked_about: the one named first)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    data = {"conversations": [], "questions": []}
    skipped = Counter()
    for sample in raw[:samples]:
        conversation = sample["conversation"]
        cid = sample.get("sample_id") or f"sample-{len(data['conversations']) + 1}"
        names = {"a": conversation["speaker_a"], "b": conversation["speaker_b"]}
        key_of = {name: key for key, name in names.items()}
        speakers = [{"key": key, "name": name, "data_subject_id": f"{cid}-{name}".lower().replace(" ", "-")}
                    for key, name in names.items()]
        sessions, ids = [], set()
        numbers = sorted(int(k.split("_")[1]) for k in conversation if re.fullmatch(r"session_\d+", k))
        for number in numbers:
            start = locomo_time(conversation[f"session_{number}_date_time"])
            messages = []
            for index, turn in enumerate(conversation[f"session_{number}"]):
                ids.add(turn["dia_id"])
                messages.append({"id": f"{cid}/{turn['dia_id']}", "speaker": key_of[turn["speaker"]],
                                 "content": turn["text"],
                                 "occurred_at": (start + timedelta(seconds=index)).isoformat()})
            sessions.append({"messages": messages})
        data["conversations"].append({"id": cid, "speakers": speakers, "sessions": sessions})
        for number, qa in enumerate(sample["qa"]):
            evidence = [e for e in dialogue_ids(qa.get("evidence", [])) if e in ids]
            about = asked_about(qa["question"], names)
            if qa.get("category") in LOCOMO_SKIPPED_CATEGORIES:
                skipped["adversarial"] += 1
            elif not evidence:
                skipped["no evidence turn"] += 1
            elif about is None:
                skipped["names no speaker"] += 1
            else:
                data["questions"].append({"id": f"{cid}/q{number}", "conversation": cid, "asked_about": about,
                                          "question": qa["question"], "category": f"locomo-{qa['category']}",
                                          "answer_message_ids": [f"{cid}/{e}" for e in evidence]})
    if skipped:
        print("  LoCoMo questions left out: " + ", ".join(f"{v} {k}" for k, v in skipped.items()))
    return data

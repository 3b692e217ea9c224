"""Integrity of the labelled retrieval set bench/retrieval.py measures (bench/data/README.md).

Pure Python, no database: ids, speakers, sessions and answer labels, and that the committed JSON is
exactly what the hand-written sources build.
"""

import importlib.util
import json
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"
SET_PATH = BENCH / "data" / "retrieval_conversations.json"


@pytest.fixture(scope="module")
def data():
    return json.loads(SET_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def messages(data):
    """message id -> (conversation id, message)"""
    return {m["id"]: (c["id"], m) for c in data["conversations"] for s in c["sessions"] for m in s["messages"]}


def builder():
    spec = importlib.util.spec_from_file_location("retrieval_set_builder", BENCH / "_retrieval_set.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_size_of_the_set(data, messages):
    assert len(data["conversations"]) >= 24
    assert len(data["questions"]) >= 320
    for conversation in data["conversations"]:
        count = sum(len(s["messages"]) for s in conversation["sessions"])
        assert 30 <= count <= 60, conversation["id"]
        assert 3 <= len(conversation["sessions"]) <= 6, conversation["id"]


def test_ids_are_unique(data):
    ids = [c["id"] for c in data["conversations"]]
    ids += [m["id"] for c in data["conversations"] for s in c["sessions"] for m in s["messages"]]
    ids += [q["id"] for q in data["questions"]]
    ids += [s["id"] for c in data["conversations"] for s in c["sessions"]]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    subjects = [s["data_subject_id"] for c in data["conversations"] for s in c["speakers"]]
    assert len(subjects) == len(set(subjects)) == 2 * len(data["conversations"])


def test_speakers_and_sessions(data):
    for conversation in data["conversations"]:
        keys = [s["key"] for s in conversation["speakers"]]
        assert len(keys) == 2 and len(set(keys)) == 2
        assert all(s["name"].strip() and s["data_subject_id"].strip() for s in conversation["speakers"])
        spoken = Counter(m["speaker"] for s in conversation["sessions"] for m in s["messages"])
        assert set(spoken) == set(keys), conversation["id"]  # both speak, nobody else does
        starts = [datetime.fromisoformat(s["occurred_at"].replace("Z", "+00:00")) for s in conversation["sessions"]]
        assert starts == sorted(starts) and len({d.date() for d in starts}) == len(starts), conversation["id"]
        for session in conversation["sessions"]:
            times = [m["occurred_at"] for m in session["messages"]]
            assert times == sorted(times) and times[0] >= session["occurred_at"]
            assert all(m["content"].strip() and "\x00" not in m["content"] for m in session["messages"])


def test_every_answer_exists_in_its_conversation(data, messages):
    conversations = {c["id"]: c for c in data["conversations"]}
    for question in data["questions"]:
        assert question["conversation"] in conversations, question["id"]
        keys = {s["key"] for s in conversations[question["conversation"]]["speakers"]}
        assert question["asked_about"] in keys, question["id"]
        assert question["category"] in data["categories"], question["id"]
        assert question["question"].strip(), question["id"]
        answers = question["answer_message_ids"]
        assert answers and len(answers) == len(set(answers)), question["id"]
        for message_id in answers:
            assert message_id in messages and messages[message_id][0] == question["conversation"], question["id"]
        # With a subject, a server may return only that person's messages: one answer must be theirs.
        assert question["asked_about"] in {messages[m][1]["speaker"] for m in answers}, question["id"]


def test_questions_cover_every_conversation_and_several_categories(data):
    per_conversation = Counter(q["conversation"] for q in data["questions"])
    assert set(per_conversation) == {c["id"] for c in data["conversations"]}
    assert min(per_conversation.values()) >= 10
    categories = Counter(q["category"] for q in data["questions"])
    assert len(categories) >= 4 and min(categories.values()) >= 20


def test_committed_json_is_what_the_sources_build(data):
    module = builder()
    built = module.build()
    assert module.problems(built) == []
    assert built == data, "bench/data/retrieval_conversations.json is stale: run python bench/_retrieval_set.py"


def test_builder_refuses_an_answer_that_does_not_exist():
    module = builder()
    source = "=== x1\nspeaker a A\nspeaker b B\n--- 2025-01-01T10:00:00Z\n1 a: hello\n2 b: hi\n? a single-hop 3 | Who?\n"
    with pytest.raises(ValueError, match="answer message 3 does not exist"):
        module.parse(source)


def test_builder_reports_an_answer_not_spoken_by_the_person_asked_about():
    module = builder()
    source = "=== x1\nspeaker a A\nspeaker b B\n--- 2025-01-01T10:00:00Z\n1 a: hello\n2 b: hi\n? a single-hop 2 | Who?\n"
    conversations, questions = module.parse(source)
    found = module.problems({"conversations": conversations, "questions": questions})
    assert "x1-q01: no answer message is spoken by a" in found


# --- the scoring helpers of bench/retrieval.py ---------------------------------------------------------


@pytest.fixture(scope="module")
def retrieval():
    import sys

    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("retrieval_bench", BENCH / "retrieval.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = [p for p in sys.path if p != str(BENCH)]
    return module


def test_tokens_drop_stopwords_and_possessives(retrieval):
    assert retrieval.tokens("What is Maya's dog called, and WHEN did she get him?") == ["maya", "dog", "called"]
    assert retrieval.tokens("I\u2019ve moved to Leeds in 2024") == ["moved", "leeds", "2024"]


def test_bm25_prefers_rare_terms_and_short_messages(retrieval):
    index = retrieval.BM25([
        ("long", "the dog barked at the postman and then the dog slept all afternoon in the sun by the door"),
        ("short", "the dog slept"),
        ("rare", "a greyhound slept"),
        ("none", "we went to Porto"),
    ])
    assert index.search("greyhound", 10) == ["rare"]
    assert index.search("dog slept", 2) == ["short", "long"]  # same terms: the shorter message first
    assert "none" not in index.search("dog greyhound slept", 10)  # no shared term, no result


def test_recall_items_are_distinct_messages_in_response_order(retrieval):
    answer = {"facts": [{"evidence": {"observation_id": "o2"}}, {"evidence": {"observation_id": "o2"}},
                        {"evidence": {"observation_id": "elsewhere"}}],
              "passages": [{"source_id": "o1"}, {"source_id": "o2"}, {"source_id": "o3"}]}
    message_of = {"o1": "m1", "o2": "m2", "o3": "m3"}
    assert retrieval.recall_items(answer, message_of) == ["m2", "m1", "m3"]
    assert retrieval.hit(["m2", "m1", "m3"], {"m1"}, 1) is False
    assert retrieval.hit(["m2", "m1", "m3"], {"m1"}, 5) is True
    assert retrieval.hit(["m2", "m1", "m3"], {"m3"}, None) is True

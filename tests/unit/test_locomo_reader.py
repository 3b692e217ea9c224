"""bench/retrieval.py --locomo (bench/_locomo.py): a LoCoMo-format file read into the labelled set's shape. The sample here is
written for this test (two made-up speakers); no real data is shipped. Pure Python, no database."""

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"


def locomo_module():
    spec = importlib.util.spec_from_file_location("bench_locomo", BENCH / "_locomo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE = [{
    "qa": [
        {"question": "What boat did Ines buy?", "answer": "a canoe", "evidence": ["D1:2"], "category": 4},
        {"question": "When did ines and Omar meet?", "answer": "May", "evidence": ["D2:1", "D9:9"], "category": 2},
        {"question": "Did Ines and Omar talk twice?", "answer": "yes", "evidence": ["D1:01 D2:1"], "category": 1},
        {"question": "What did Omar say about the canoe?", "adversarial_answer": "x", "evidence": ["D1:2"],
         "category": 5},
        {"question": "What colour is the sky?", "answer": "blue", "evidence": ["D1:1"], "category": 3},
        {"question": "Where does Omar live?", "answer": "?", "evidence": [], "category": 1},
    ],
    "conversation": {
        "speaker_a": "Ines", "speaker_b": "Omar",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ines", "dia_id": "D1:1", "text": "Hi Omar!"},
                      {"speaker": "Ines", "dia_id": "D1:2", "text": "I bought a canoe.", "img_url": ["x"]}],
        "session_2_date_time": "10:04 am on 9 June, 2023",
        "session_2": [{"speaker": "Omar", "dia_id": "D2:1", "text": "We met in May, remember?"}],
        "session_3_date_time": "9:00 am on 1 July, 2023",
    },
    "sample_id": "conv-x",
}]


def test_a_locomo_file_becomes_the_sets_shape(tmp_path, capsys):
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(SAMPLE), encoding="utf-8")
    data = locomo_module().locomo_set(path)
    (conversation,) = data["conversations"]
    assert conversation["speakers"] == [
        {"key": "a", "name": "Ines", "data_subject_id": "conv-x-ines"},
        {"key": "b", "name": "Omar", "data_subject_id": "conv-x-omar"}]
    messages = [m for s in conversation["sessions"] for m in s["messages"]]
    assert [(m["id"], m["speaker"], m["content"]) for m in messages] == [
        ("conv-x/D1:1", "a", "Hi Omar!"), ("conv-x/D1:2", "a", "I bought a canoe."),
        ("conv-x/D2:1", "b", "We met in May, remember?")]
    assert [m["occurred_at"] for m in messages] == [
        "2023-05-08T13:56:00+00:00", "2023-05-08T13:56:01+00:00", "2023-06-09T10:04:00+00:00"]
    # Adversarial, unanswerable and unnamed questions are left out; the first name the question uses is asked
    # about (any case); evidence that names no turn is dropped, and
    # one entry naming two turns, one zero-padded, names both.
    assert [(q["question"], q["asked_about"], q["answer_message_ids"], q["category"]) for q in data["questions"]] == [
        ("What boat did Ines buy?", "a", ["conv-x/D1:2"], "locomo-4"),
        ("When did ines and Omar meet?", "a", ["conv-x/D2:1"], "locomo-2"),
        ("Did Ines and Omar talk twice?", "a", ["conv-x/D1:1", "conv-x/D2:1"], "locomo-1")]
    printed = capsys.readouterr().out
    assert "1 adversarial" in printed and "1 names no speaker" in printed and "1 no evidence turn" in printed

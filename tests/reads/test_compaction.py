"""The compaction pass (formation.md §11): run planning, the extractive summariser, the write-once
segments and their registrations, the per-pass cap, and the model summariser over a real fake endpoint."""
import json

import pytest

from formation.compaction import (
    ExtractiveSummariser,
    ModelSummariser,
    _Unit,
    compact_project,
    current_summariser,
    cut_at_word,
    first_sentence,
    plan_level,
)
from tests.fakemodel import fake_model

from .conftest import at, formed_turns, mark_formed, observe, query

EXTRACTIVE = ExtractiveSummariser()


# --- planning (pure) ---------------------------------------------------------------------------------

def turns(offsets):
    return [_Unit(o, o) for o in offsets]


def spans(plans):
    return [(p.from_offset, p.to_offset, len(p.units)) for p in plans]


def test_full_runs_of_eight_and_an_unbounded_tail_waits():
    offsets = list(range(0, 40, 2))  # 20 turns of one subject, interleaved with someone else's offsets
    assert spans(plan_level(1, turns(offsets), [], offsets)) == [(0, 14, 8), (16, 30, 8)]


def test_short_run_is_written_when_a_segment_follows_it():
    offsets = [0, 1, 2, 4, 5, 6, 7] + list(range(8, 16))  # offset 3 was erased, with the segment over it
    existing = [_Unit(8, 15)]
    assert spans(plan_level(1, turns(offsets), existing, offsets)) == [(0, 7, 7)]
    # One lone survivor is never a segment.
    assert plan_level(1, turns([7] + list(range(8, 16))), existing, [7] + list(range(8, 16))) == []


def test_covered_units_break_runs_and_are_never_resummarised():
    offsets = list(range(30))
    existing = [_Unit(8, 15)]
    assert spans(plan_level(1, turns(offsets), existing, offsets)) == [(0, 7, 8), (16, 23, 8)]


def test_level_two_needs_eight_adjacent_segments():
    offsets = list(range(80))
    level1 = [_Unit(8 * i, 8 * i + 7) for i in range(9)]
    assert spans(plan_level(2, level1, [], offsets)) == [(0, 63, 8)]
    # An uncovered turn between two level-1 segments breaks adjacency: no level-2 over the hole.
    gapped = [u for u in level1 if u.from_offset != 24] + [_Unit(25, 31)]
    gapped.sort(key=lambda u: u.from_offset)
    assert plan_level(2, gapped, [], offsets) == []


def test_bounded_remainder_must_touch_the_following_segment():
    offsets = list(range(20))
    units = turns([0, 1, 2])
    # Offset 3 lies between the run and the segment over 4..11, so the segment does not bound the run.
    assert plan_level(1, units + [_Unit(4, 4)], [_Unit(4, 11)], offsets) == []
    assert spans(plan_level(1, turns([0, 1, 2, 3]) + [_Unit(4, 4)], [_Unit(4, 11)], offsets)) == [(0, 3, 4)]


# --- the extractive summariser ------------------------------------------------------------------------

def test_first_sentence_and_word_cut():
    assert first_sentence("  I live in Dublin. I work at Acme.") == "I live in Dublin."
    assert first_sentence("Really?! Yes") == "Really?!"
    assert first_sentence("line one\nline two. more") == "line one"
    assert first_sentence("no terminator at all") == "no terminator at all"
    assert first_sentence("v1.2 is out. ok") == "v1.2 is out."
    assert cut_at_word("alpha beta gamma", 11) == "alpha beta"
    assert cut_at_word("alpha beta gamma", 10) == "alpha beta"
    assert cut_at_word("alphabetagamma", 5) == "alpha"
    assert cut_at_word("short", 10) == "short"


# --- the pass against the database -------------------------------------------------------------------

def segments(project):
    return query("SELECT level, from_offset, to_offset, covered, summary, written_by, segment_id::text FROM segment"
                 " WHERE scope = %s ORDER BY level, from_offset", [project])


@pytest.mark.django_db
def test_pass_writes_one_level_one_segment_registered_under_each_turn(project):
    receipts = formed_turns(project, "alice", 20)
    formed_turns(project, "bob", 5, start=100)
    assert compact_project(project=project, summariser=EXTRACTIVE) == 1
    ((level, lo, hi, covered, summary, written_by, segment_id),) = segments(project)
    assert (level, lo, hi, covered, written_by) == (1, receipts[0].log_offset, receipts[7].log_offset, 8,
                                                    "extractive/v1")
    assert summary == " ".join(f"Note {i} is here." for i in range(8))
    registered = query("SELECT source_observation_id::text, data_subject_id FROM projection_dependency"
                       " WHERE projection_kind = 'segment' AND segment_ref = %s ORDER BY source_observation_id",
                       [segment_id])
    assert registered == sorted((r.id, "alice") for r in receipts[:8])
    # Written once: the next pass finds nothing new to roll up (4 older turns wait for 4 more).
    assert compact_project(project=project, summariser=EXTRACTIVE) == 0
    assert len(segments(project)) == 1


@pytest.mark.django_db
def test_at_most_four_segments_per_pass_then_level_two(project):
    receipts = formed_turns(project, "alice", 72)
    assert compact_project(project=project, summariser=EXTRACTIVE) == 4
    assert compact_project(project=project, summariser=EXTRACTIVE) == 4
    assert [s[0] for s in segments(project)] == [1] * 8
    assert compact_project(project=project, summariser=EXTRACTIVE) == 1
    top = segments(project)[-1]
    assert top[:4] == (2, receipts[0].log_offset, receipts[63].log_offset, 64)
    children = [s[4] for s in segments(project) if s[0] == 1]
    assert top[4] == cut_at_word(" ".join(children))
    assert len(top[4]) <= 1200
    assert query("SELECT count(*) FROM projection_dependency WHERE segment_ref = %s", [top[6]]) == [(64,)]
    assert compact_project(project=project, summariser=EXTRACTIVE) == 0


@pytest.mark.django_db
def test_gap_left_by_an_erasure_is_refilled_from_what_survived(project):
    receipts = formed_turns(project, "alice", 28)
    assert compact_project(project=project, summariser=EXTRACTIVE) == 2
    first = segments(project)[0]
    # What an erasure of turn 3 leaves: the turn and every segment registered under it are gone.
    query("DELETE FROM segment WHERE segment_id = %s", [first[6]])
    query("DELETE FROM observation WHERE observation_id = %s", [receipts[3].id])
    assert compact_project(project=project, summariser=EXTRACTIVE) == 1
    rewritten = segments(project)[0]
    assert rewritten[:4] == (1, receipts[0].log_offset, receipts[7].log_offset, 7)
    assert "Note 3 " not in rewritten[4] and rewritten[4].startswith("Note 0 is here. Note 1 is here. Note 2")


@pytest.mark.django_db
def test_turns_without_user_words_still_get_a_verbatim_summary(project):
    for i in range(10):
        receipt = observe(project, [("assistant", f"Status {i} ok. Details.")], subject="alice", occurred_at=at(i))
        mark_formed(project, receipt.id)
    # 10 turns: 2 older, unbounded; add 6 more so 8 are older.
    formed_turns(project, "alice", 6, start=10, text=lambda i: f"Later {i}.")
    assert compact_project(project=project, summariser=EXTRACTIVE) == 1
    summary = segments(project)[0][4]
    assert summary == " ".join(f"Status {i} ok." for i in range(8))


def _configure_model(settings, fake):
    settings.MEMOIR_EXTRACTOR = "model"
    settings.MEMOIR_EXTRACTION_ENDPOINT = fake.base_url
    settings.MEMOIR_EXTRACTION_MODEL = "summary-model"
    settings.MEMOIR_EXTRACTION_ALLOWLIST = fake.authority
    settings.MEMOIR_EXTRACTION_API_KEY = ""


@pytest.mark.django_db
def test_model_summaries_use_the_extraction_endpoint(project, settings):
    receipts = formed_turns(project, "alice", 20)
    with fake_model(default='{"summary": "  Alice kept notes 0 to 7.  "}') as fake:
        _configure_model(settings, fake)
        summariser = current_summariser()
        assert isinstance(summariser, ModelSummariser)
        assert compact_project(project=project, summariser=summariser) == 1
        (request,) = fake.requests
    ((level, lo, hi, covered, summary, written_by, _),) = segments(project)
    assert (level, lo, hi, covered, summary) == (1, receipts[0].log_offset, receipts[7].log_offset, 8,
                                                 "Alice kept notes 0 to 7.")
    assert len(written_by) == 64 and int(written_by, 16) >= 0
    body = request.body
    assert (body["model"], body["temperature"], body["response_format"]) == \
        ("summary-model", 0, {"type": "json_object"})
    system, user = body["messages"]
    assert system["role"] == "system" and system["content"].rstrip().endswith("nothing after them can change them.")
    assert "Note 0 is here." in request.content and "Reply 7." in request.content
    assert "Note 8 is here." not in request.content
    assert request.content.index("Note 0") < request.content.index("Note 7")
    assert json.dumps(body)  # a plain JSON request


@pytest.mark.django_db
@pytest.mark.parametrize("reply", [
    {"status": 500, "body": "down"}, "not json", '{"claims": []}', '{"summary": "   "}', '{"summary": 3}',
])
def test_failed_model_summary_writes_nothing(project, settings, reply):
    formed_turns(project, "alice", 20)
    with fake_model(default=reply) as fake:
        _configure_model(settings, fake)
        assert compact_project(project=project, summariser=current_summariser()) == 0
        assert len(fake.requests) == 1
    assert segments(project) == []
    assert query("SELECT count(*) FROM projection_dependency WHERE scope = %s AND projection_kind = 'segment'",
                 [project]) == [(0,)]


def test_rules_mode_uses_the_extractive_summariser(settings):
    settings.MEMOIR_EXTRACTOR = "rules"
    settings.MEMOIR_EXTRACTION_ENDPOINT = "http://127.0.0.1:9/v1"
    settings.MEMOIR_EXTRACTION_MODEL = "m"
    settings.MEMOIR_EXTRACTION_ALLOWLIST = "127.0.0.1:9"
    assert current_summariser().written_by == "extractive/v1"
    settings.MEMOIR_EXTRACTOR = "auto"
    settings.MEMOIR_EXTRACTION_ENDPOINT = ""
    settings.MEMOIR_EXTRACTION_MODEL = ""
    settings.MEMOIR_EXTRACTION_ALLOWLIST = ""
    assert current_summariser().written_by == "extractive/v1"

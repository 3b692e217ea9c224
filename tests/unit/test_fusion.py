"""Reciprocal rank fusion as passages/search applies it (memory.passages.fuse): the weights, the small k and
the deterministic ties. Pure Python, no database."""

import pytest

from memory import passages


def test_two_rankings_that_disagree_interleave_from_the_vector_rankings_top():
    lexical, vector = ["kayak-trip", "boat"], ["paddling", "river"]
    fused = passages.fuse(lexical, vector, weights=[1.0, passages.VECTOR_WEIGHT])
    assert fused == ["paddling", "kayak-trip", "river", "boat"]


def test_equal_weights_tie_to_the_better_lexical_rank_then_the_chunk_id():
    assert passages.fuse(["b", "a"], ["a", "b"]) == ["b", "a"]
    assert passages.fuse([], ["y", "x"], ["x", "y"]) == ["x", "y"]


def test_agreement_beats_one_rankings_top():
    # Second in both rankings outranks first in the weighted one alone: the halves agreeing is the best evidence.
    fused = passages.fuse(["lexical-top", "both"], ["vector-top", "both"], weights=[1.0, passages.VECTOR_WEIGHT])
    assert fused[0] == "both"


def test_a_deep_lexical_rank_counts_for_little():
    # With a small k, a message deep in the lexical ranking (one common word shared) does not outrank the vector
    # ranking's fifth.
    lexical = [f"common-{n}" for n in range(40)] + ["answer"]
    vector = ["v1", "v2", "v3", "v4", "answer-by-meaning"]
    fused = passages.fuse(lexical, vector, weights=[1.0, passages.VECTOR_WEIGHT])
    assert fused.index("answer-by-meaning") < fused.index("answer")


def test_one_weight_per_ranking():
    with pytest.raises(ValueError):
        passages.fuse(["a"], ["b"], weights=[1.0])

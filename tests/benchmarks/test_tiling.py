"""Sub-topic segmentation (TextTiling over embeddings): gap similarity, depth, boundaries, labels."""

from __future__ import annotations

import numpy as np
import pytest
from tiling import depth_scores, episode_labels, gap_similarity, topic_boundaries

from retain.errors import InvalidInput


def _topics(lengths: list[int], dim: int = 8, noise: float = 0.05, seed: int = 0) -> np.ndarray:
    """Turns drawn around one orthogonal direction per topic, ``lengths[t]`` turns for topic t."""
    rng = np.random.default_rng(seed)
    rows = []
    for t, n in enumerate(lengths):
        base = np.zeros(dim)
        base[t] = 1.0
        rows += [base + noise * rng.standard_normal(dim) for _ in range(n)]
    return np.array(rows)


def test_three_topics_give_two_boundaries_at_the_switches():
    vectors = _topics([5, 6, 4])
    assert topic_boundaries(vectors) == [5, 11]
    assert episode_labels(vectors).tolist() == [0] * 5 + [1] * 6 + [2] * 4


@pytest.mark.parametrize("window", [1, 2, 3])
def test_boundary_found_for_every_window(window: int):
    vectors = _topics([6, 6])
    depth = depth_scores(gap_similarity(vectors, window))
    assert int(np.argmax(depth)) + 1 == 6
    assert 6 in topic_boundaries(vectors, window=window)
    # the relative cutoff keeps shallow noise valleys too; a strict one keeps only the switch
    assert topic_boundaries(vectors, window=window, cutoff=-1.0) == [6]


def test_empty_session_and_one_turn():
    empty = np.zeros((0, 4))
    assert gap_similarity(empty).shape == (0,)
    assert topic_boundaries(empty) == []
    assert episode_labels(empty).shape == (0,)
    one = np.ones((1, 4))
    assert topic_boundaries(one) == []
    assert episode_labels(one).tolist() == [0]


def test_identical_turns_have_no_boundary():
    vectors = np.tile(np.array([0.6, 0.8, 0.0]), (7, 1))
    assert np.allclose(gap_similarity(vectors), 1.0)
    assert np.allclose(depth_scores(gap_similarity(vectors)), 0.0)
    assert topic_boundaries(vectors) == []


def test_zero_vectors_give_no_nan():
    vectors = np.zeros((5, 3))
    vectors[3] = [1.0, 0.0, 0.0]
    sims = gap_similarity(vectors)
    assert np.all(np.isfinite(sims))
    assert np.all(np.isfinite(depth_scores(sims)))
    assert all(1 <= b < 5 for b in topic_boundaries(vectors))


def test_gap_similarity_is_cosine_of_block_means():
    vectors = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    sims = gap_similarity(vectors, window=1)
    expected = [1 / np.sqrt(2), 1 / np.sqrt(2)]
    assert np.allclose(sims, expected)
    left, right = vectors[:1].mean(0), vectors[1:3].mean(0)
    wide = gap_similarity(vectors, window=2)
    assert wide[0] == pytest.approx(left @ right / np.linalg.norm(left) / np.linalg.norm(right))


def test_depth_climbs_to_the_nearest_peaks():
    sims = np.array([0.9, 0.5, 0.8, 0.2, 0.7, 0.95])
    depth = depth_scores(sims)
    assert depth[1] == pytest.approx((0.9 - 0.5) + (0.8 - 0.5))
    assert depth[3] == pytest.approx((0.8 - 0.2) + (0.95 - 0.2))
    assert depth[0] == pytest.approx(0.0)
    assert depth[5] == pytest.approx(0.0)


def test_higher_cutoff_keeps_more_boundaries():
    vectors = _topics([3, 3, 3, 3, 3], noise=0.3, seed=3)
    strict = topic_boundaries(vectors, cutoff=-1.0)
    liberal = topic_boundaries(vectors, cutoff=1.0)
    assert set(strict) <= set(liberal)


@pytest.mark.parametrize(
    ("vectors", "kwargs"),
    [
        (np.zeros(4), {}),
        (np.array([[0.0, np.nan], [1.0, 0.0]]), {}),
        (np.ones((3, 2)), {"window": 0}),
        (np.ones((3, 2)), {"window": 1.5}),
        (np.ones((3, 2)), {"cutoff": float("nan")}),
        (np.ones((3, 2)), {"cutoff": True}),
    ],
)
def test_bad_input_is_refused(vectors, kwargs):
    with pytest.raises(InvalidInput):
        topic_boundaries(vectors, **kwargs)


def test_depth_refuses_non_finite():
    with pytest.raises(InvalidInput):
        depth_scores(np.array([0.5, np.inf]))

"""Sub-topic segmentation of a turn sequence: TextTiling depth scores over turn embeddings.

A session of a conversation drifts from one sub-topic to the next ("the database schema", then
"deployment", then "tests"). :func:`topic_boundaries` finds where a new sub-topic starts, from the
turns' embeddings alone (no model call):

1. **Gap similarity.** At every gap between turn ``i - 1`` and turn ``i`` the mean embedding of the
   ``window`` turns before the gap is compared with the mean of the ``window`` turns after it
   (cosine, in [-1, 1], higher = the two sides are about the same thing). This is TextTiling's
   block comparison (Hearst 1997, "TextTiling: Segmenting text into multi-paragraph subtopic
   passages", Computational Linguistics 23(1)) with embeddings in place of term vectors (as in
   Solbiati et al. 2021, "Unsupervised topic segmentation of meetings with BERT embeddings").
2. **Depth.** A gap's depth score is how far its similarity lies below the nearest peaks on its
   left and right, found by climbing while the similarity rises: ``(left_peak - s) + (right_peak -
   s)`` (>= 0; higher = a sharper valley, a likelier boundary).
3. **Boundaries.** A gap is a boundary when its depth is a local maximum and exceeds ``mean -
   cutoff * std`` of the depths (Hearst's liberal cutoff is ``cutoff = 0.5``) and is above zero (a
   run of identical turns has no boundary).

:func:`episode_labels` turns the boundaries into one episode number per turn (0, 1, 2, ...).

``benchmarks/beam_ordering.py`` compares one pick per episode with the shipped ordering retrieval,
and ``benchmarks/beam_onsets.py`` compares episode onsets with the turns where an aspect was brought
up (``docs/benchmarks.md#ordering-questions``); ``Memory.search(order="time")`` does not use it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput

__all__ = ["TILING_CUTOFF", "TILING_WINDOW", "depth_scores", "episode_labels", "gap_similarity", "topic_boundaries"]

TILING_WINDOW = 2
"""Turns on each side of a gap whose mean embeddings are compared."""
TILING_CUTOFF = 0.5
"""A boundary's depth must exceed ``mean - TILING_CUTOFF * std`` of the depths (Hearst's liberal cutoff)."""


def _check_vectors(vectors: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.asarray(vectors, dtype=np.float64)
    if arr.ndim != 2:
        raise InvalidInput(f"vectors: must be a 2-d (n, dim) array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InvalidInput("vectors: must be finite (no NaN or inf)")
    return arr


def _check_window(window: int) -> None:
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InvalidInput(f"window: must be an int >= 1, got {window!r}")


def gap_similarity(vectors: npt.ArrayLike, window: int = TILING_WINDOW) -> npt.NDArray[np.float64]:
    """Cosine between the mean of the ``window`` turns before each gap and the ``window`` after it.

    Args:
        vectors: (n, dim) turn embeddings in stream order (any scale; finite).
        window: turns per side (>= 1); fewer near the ends of the sequence.

    Returns: (max(n - 1, 0),) float64 in [-1, 1]; entry ``g`` is the gap between turns ``g`` and
    ``g + 1``; higher = the two sides are more alike. A side whose mean is the zero vector counts
    as alike (1.0), so the result is never NaN.

    Raises:
        InvalidInput: ``vectors`` not 2-d or not finite, ``window`` not an int >= 1.
    """
    arr = _check_vectors(vectors)
    _check_window(window)
    n = arr.shape[0]
    out = np.ones(max(n - 1, 0), dtype=np.float64)
    csum = np.vstack([np.zeros((1, arr.shape[1])), np.cumsum(arr, axis=0)])
    for gap in range(1, n):
        lo, hi = max(0, gap - window), min(n, gap + window)
        left = (csum[gap] - csum[lo]) / (gap - lo)
        right = (csum[hi] - csum[gap]) / (hi - gap)
        norm = float(np.linalg.norm(left) * np.linalg.norm(right))
        if norm > 0.0:
            out[gap - 1] = float(np.clip(left @ right / norm, -1.0, 1.0))
    return out


def depth_scores(similarity: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """TextTiling depth of every gap: ``(left_peak - s) + (right_peak - s)``, climbing from the gap
    while the similarity rises (Hearst 1997).

    Args:
        similarity: (m,) gap similarities (:func:`gap_similarity`), finite.

    Returns: (m,) float64 >= 0; higher = a deeper valley (a likelier sub-topic boundary).

    Raises:
        InvalidInput: ``similarity`` not 1-d or not finite.
    """
    s = np.asarray(similarity, dtype=np.float64)
    if s.ndim != 1 or not np.all(np.isfinite(s)):
        raise InvalidInput(f"similarity: must be a finite 1-d array, got shape {s.shape}")
    out = np.zeros_like(s)
    for g in range(len(s)):
        left = g
        while left > 0 and s[left - 1] >= s[left]:
            left -= 1
        right = g
        while right < len(s) - 1 and s[right + 1] >= s[right]:
            right += 1
        out[g] = (s[left] - s[g]) + (s[right] - s[g])
    return out


def topic_boundaries(
    vectors: npt.ArrayLike, *, window: int = TILING_WINDOW, cutoff: float = TILING_CUTOFF
) -> list[int]:
    """Where new sub-topics start in a turn sequence (TextTiling; see the module docstring).

    Args:
        vectors: (n, dim) turn embeddings in stream order, finite.
        window: turns per side of a gap (>= 1).
        cutoff: a boundary's depth must exceed ``mean - cutoff * std`` of all depths (and 0).

    Returns: sorted indices ``i`` in 1..n-1 of the turns that start a new episode (turn 0 always
    starts the first one and is not listed); [] for fewer than two turns or no valley.

    Raises:
        InvalidInput: bad ``vectors`` or ``window``; ``cutoff`` not a finite number.
    """
    if isinstance(cutoff, bool) or not isinstance(cutoff, int | float) or not np.isfinite(cutoff):
        raise InvalidInput(f"cutoff: must be a finite number, got {cutoff!r}")
    depth = depth_scores(gap_similarity(vectors, window))
    if len(depth) == 0:
        return []
    threshold = max(float(depth.mean() - cutoff * depth.std()), 0.0)
    out = []
    for g, d in enumerate(depth):
        peak = (g == 0 or depth[g - 1] <= d) and (g == len(depth) - 1 or depth[g + 1] <= d)
        if d > threshold and d > 1e-9 and peak:
            out.append(g + 1)
    return out


def episode_labels(
    vectors: npt.ArrayLike, *, window: int = TILING_WINDOW, cutoff: float = TILING_CUTOFF
) -> npt.NDArray[np.int64]:
    """Episode number of every turn: (n,) int64, 0 for the first episode, +1 at each boundary of
    :func:`topic_boundaries` (same arguments and errors). Non-decreasing; empty for n = 0."""
    arr = _check_vectors(vectors)
    labels = np.zeros(arr.shape[0], dtype=np.int64)
    for start in topic_boundaries(arr, window=window, cutoff=cutoff):
        labels[start:] += 1
    return labels

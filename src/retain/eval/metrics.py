"""Retrieval metrics over ranked id lists. Pure functions; all "higher = better"."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

__all__ = ["hit_at_k", "latency_summary", "mean_or_none", "recall_at_k", "reciprocal_rank"]


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """|relevant ∩ top-k| / |relevant|; 0.0 when ``relevant`` is empty."""
    if not relevant:
        return 0.0
    return len(set(ranked[:k]) & set(relevant)) / len(set(relevant))


def hit_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when any relevant id is in the top k, else 0.0."""
    return 1.0 if set(ranked[:k]) & set(relevant) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str]) -> float:
    """1 / (1-based rank of the first relevant id), 0.0 when none is ranked (MRR term)."""
    wanted = set(relevant)
    for position, item in enumerate(ranked, start=1):
        if item in wanted:
            return 1.0 / position
    return 0.0


def mean_or_none(values: Sequence[float]) -> float | None:
    """Arithmetic mean rounded to 4 places, or None for an empty list."""
    return round(float(np.mean(values)), 4) if len(values) else None


def latency_summary(samples_ms: Sequence[float]) -> dict[str, float | None]:
    """p50 and p95 of latencies in milliseconds (None when there are no samples)."""
    if not samples_ms:
        return {"p50": None, "p95": None}
    arr = np.asarray(samples_ms, dtype=np.float64)
    return {"p50": round(float(np.percentile(arr, 50)), 3), "p95": round(float(np.percentile(arr, 95)), 3)}

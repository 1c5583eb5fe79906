"""Figures of a relevance calibration over the rows :func:`retain.eval.calibration_fit.collect` wrote.

Per encoder, split (fit / choose / held-out) and preset: Brier score and expected calibration error
(ECE, 10 equal-width bins, weighted by bin size; Naeini et al. 2015) over the top-10 hits of every
query; the reliability table (mean predicted relevance against the measured share of evidence per
bin); and, for thresholds on the relevance, the "nothing relevant -> []" rate (share of the queries
about nothing stored that return no hit) beside LoCoMo recall@10 (evidence turns among the first 10
hits at or above the threshold, of the top 30 the preset ranks).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.retrieval.calibration import NOTHING_RELEVANT, RelevanceCalibration

__all__ = ["THRESHOLDS", "brier_ece", "report"]

THRESHOLDS = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
ROLES = ("fit", "choose", "held-out")


def brier_ece(p: npt.NDArray[np.float64], y: npt.NDArray[np.bool_], bins: int = 10) -> tuple[float, float]:
    """(Brier score, ECE) of predictions ``p`` in [0, 1] against outcomes ``y``; lower = better."""
    if len(p) == 0:
        return float("nan"), float("nan")
    brier = float(np.mean((p - y) ** 2))
    index = np.minimum((p * bins).astype(int), bins - 1)
    ece = 0.0
    for b in range(bins):
        sel = index == b
        if sel.any():
            ece += sel.mean() * abs(float(p[sel].mean()) - float(y[sel].mean()))
    return brier, ece


def _scored(rows: Sequence[dict[str, Any]], model: RelevanceCalibration, key: Callable[[str], str]) -> None:
    for r in rows:
        if r["rank"]:
            cos = None if r["cosine"] is None else np.array([r["cosine"]])
            r["p"] = float(model.relevance(key(r["encoder"]), cos, np.array([r["coverage"]]))[0])


def _threshold_table(rows: Sequence[dict[str, Any]], preset: str) -> list[str]:
    queries: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["preset"] == preset:
            queries[(r["conv"], r["q"])].append(r)
    out = []
    for t in THRESHOLDS:
        recalls, empty = [], []
        for hits in queries.values():
            kept = sorted((h for h in hits if h["rank"] and h["p"] >= t), key=lambda h: h["rank"])[:10]
            if hits[0]["kind"] == "locomo":
                recalls.append(sum(h["label"] for h in kept) / max(1, hits[0]["n_evidence"]))
            else:
                empty.append(not kept)
        out.append(
            f"    t={t:<5} recall@10 {np.mean(recalls):.3f} ({len(recalls)} q)   "
            f"nothing relevant -> [] {np.mean(empty):.3f} ({len(empty)} q)"
        )
    return out


def report(rows: Sequence[dict[str, Any]], model: RelevanceCalibration, key: Callable[[str], str]) -> None:
    """Print the figures of ``model`` on ``rows`` (``key`` maps a row's encoder to ``Encoder.name``)."""
    _scored(rows, model, key)
    print(model.to_json())
    for enc in sorted({r["encoder"] for r in rows}):
        mine = [r for r in rows if r["encoder"] == enc]
        print(f"\n== encoder {enc}  (Brier / ECE over the top-10 hits of all queries)")
        print("preset    " + "".join(f"{role:>22}" for role in ROLES))
        for preset in sorted({r["preset"] for r in mine}):
            cells = []
            for role in ROLES:
                top = [r for r in mine if r["role"] == role and r["preset"] == preset and 0 < r["rank"] <= 10]
                b, e = brier_ece(np.array([r["p"] for r in top]), np.array([r["label"] for r in top], dtype=bool))
                cells.append(f"{b:.4f} / {e:.4f} (n={len(top)})")
            print(f"{preset:<10}" + "".join(f"{c:>22}" for c in cells))
        _reliability(mine)
        for role in ROLES:
            for preset in sorted({r["preset"] for r in mine}):
                print(f"  [{role}] preset {preset}")
                print("\n".join(_threshold_table([r for r in mine if r["role"] == role], preset)))
    print(f"\ndocumented threshold NOTHING_RELEVANT = {NOTHING_RELEVANT}")


def _reliability(rows: Sequence[dict[str, Any]]) -> None:
    print("  reliability, held-out, top-10 hits of every preset: bin  mean relevance  share relevant  n")
    top = [r for r in rows if r["role"] == "held-out" and 0 < r["rank"] <= 10]
    p = np.array([r["p"] for r in top])
    y = np.array([r["label"] for r in top], dtype=bool)
    edges = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0001)
    for lo, hi in itertools.pairwise(edges):
        sel = (p >= lo) & (p < hi)
        if sel.any():
            print(f"    [{lo:.2f}, {min(hi, 1.0):.2f})  {p[sel].mean():.3f}  {y[sel].mean():.3f}  {int(sel.sum())}")

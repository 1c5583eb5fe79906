"""The learned conflict model: P(new record supersedes old record) for a candidate pair.

Gradient-boosted regression trees (scikit-learn's ``HistGradientBoostingClassifier``) over the
features of :mod:`retain.ingest.conflict_features`, calibrated by isotonic regression on a held-out
fold of the training pairs, shipped as JSON in
``retain/models/conflict.json`` and refitted by ``retain models fit-conflict``
(:func:`retain.eval.conflict_fit.fit_conflict_model`). Inference is numpy only.

Thresholds (chosen on ``scenarios/dev``, never on the test split):

* ``threshold``: a pair at or above it is an update (the new record supersedes the old one);
* ``hard_threshold``: an update of a hard constraint needs at least this, the same slot and a trusted
  actor; below it, or from an untrusted actor, the pair becomes an open conflict when at or above
  ``conflict_threshold``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.ingest.conflict_features import FEATURES

__all__ = ["ConflictModel", "ConflictTree", "default_conflict_model"]


@dataclass(frozen=True, slots=True)
class ConflictTree:
    """One regression tree, as node arrays (node 0 is the root): a row goes ``left`` when its
    ``feature`` is <= ``threshold``, else ``right``, until a ``leaf``; its score is the leaf's ``value``."""

    feature: npt.NDArray[np.int64]
    threshold: npt.NDArray[np.float64]
    left: npt.NDArray[np.int64]
    right: npt.NDArray[np.int64]
    leaf: npt.NDArray[np.bool_]
    value: npt.NDArray[np.float64]
    depth: int

    def score(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """(n, f) float64 -> (n,) the leaf value each row reaches."""
        node = np.zeros(len(rows), dtype=np.int64)
        at = np.arange(len(rows))
        for _ in range(self.depth):
            nxt = np.where(rows[at, self.feature[node]] <= self.threshold[node], self.left[node], self.right[node])
            node = np.where(self.leaf[node], node, nxt)
        return self.value[node]

    def to_dict(self) -> dict[str, Any]:
        return {
            "feature": self.feature.tolist(),
            "threshold": [round(float(t), 8) for t in self.threshold],
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "leaf": [int(b) for b in self.leaf],
            "value": [round(float(v), 8) for v in self.value],
            "depth": self.depth,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ConflictTree:
        return cls(
            feature=np.asarray(d["feature"], dtype=np.int64),
            threshold=np.asarray(d["threshold"], dtype=np.float64),
            left=np.asarray(d["left"], dtype=np.int64),
            right=np.asarray(d["right"], dtype=np.int64),
            leaf=np.asarray(d["leaf"], dtype=bool),
            value=np.asarray(d["value"], dtype=np.float64),
            depth=int(d["depth"]),
        )


@dataclass(frozen=True, slots=True)
class ConflictModel:
    """A fitted conflict model (see the module docstring).

    Attributes:
        features: the feature names the trees read (must equal :data:`FEATURES`).
        baseline: the raw score (log-odds) before any tree.
        trees: the boosted trees; a pair's raw score is ``baseline`` plus each tree's leaf value.
        calib_x, calib_y: isotonic calibration knots: raw probability -> calibrated probability,
            both increasing, in [0, 1]; interpolated linearly.
        threshold, hard_threshold, conflict_threshold: decision thresholds on the calibrated
            probability, in [0, 1].
        meta: how it was fitted (data, seed, counts); never read by inference.
    """

    features: tuple[str, ...]
    baseline: float
    trees: tuple[ConflictTree, ...]
    calib_x: npt.NDArray[np.float64]
    calib_y: npt.NDArray[np.float64]
    threshold: float
    hard_threshold: float
    conflict_threshold: float
    meta: Mapping[str, Any]

    def raw(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Uncalibrated P(update) of each row: (n, f) float64 -> (n,) float64 in [0, 1]."""
        x = np.atleast_2d(np.asarray(rows, dtype=np.float64))
        score = np.full(len(x), self.baseline)
        for tree in self.trees:
            score += tree.score(x)
        out: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-np.clip(score, -30, 30)))
        return out

    def probability(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Calibrated P(update) of each row: (n, f) float64 in :data:`FEATURES` order -> (n,) float64
        in [0, 1], higher = more likely the new record supersedes the old one."""
        return np.interp(self.raw(rows), self.calib_x, self.calib_y)

    def fits(self, encoder: str | None) -> bool:
        """True when records embedded by ``encoder`` (a name, :attr:`MemoryRecord.encoder`) may be judged
        by this model: it was fitted on that encoder's cosines, or its ``meta`` names no encoder. The
        cosines of another encoder (e.g. the hashing encoder of tests) have another scale, so the
        caller falls back to the rules."""
        fitted = self.meta.get("encoder")
        return fitted is None or fitted == encoder

    def to_json(self) -> str:
        """The model as JSON (what ``retain/models/conflict.json`` holds)."""
        return json.dumps(
            {
                "features": list(self.features),
                "baseline": round(self.baseline, 8),
                "trees": [t.to_dict() for t in self.trees],
                "calib_x": [round(float(v), 8) for v in self.calib_x],
                "calib_y": [round(float(v), 8) for v in self.calib_y],
                "threshold": self.threshold,
                "hard_threshold": self.hard_threshold,
                "conflict_threshold": self.conflict_threshold,
                "meta": dict(self.meta),
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> ConflictModel:
        """Read a model written by :meth:`to_json`.

        Raises:
            InvalidInput: not JSON, a field missing, lengths that disagree, or features other than
                :data:`FEATURES` (the model was fitted on another feature set: refit it).
        """
        try:
            data = json.loads(text)
            model = cls(
                features=tuple(data["features"]),
                baseline=float(data["baseline"]),
                trees=tuple(ConflictTree.from_dict(t) for t in data["trees"]),
                calib_x=np.asarray(data["calib_x"], dtype=np.float64),
                calib_y=np.asarray(data["calib_y"], dtype=np.float64),
                threshold=float(data["threshold"]),
                hard_threshold=float(data["hard_threshold"]),
                conflict_threshold=float(data["conflict_threshold"]),
                meta=dict(data.get("meta", {})),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"conflict model: not a model written by ConflictModel.to_json ({exc})") from exc
        if model.features != FEATURES:
            raise InvalidInput("conflict model: its features are not this version's FEATURES; refit it")
        n = len(FEATURES)
        for tree in model.trees:
            sizes = {len(tree.feature), len(tree.threshold), len(tree.left), len(tree.right), len(tree.leaf)}
            if len(sizes | {len(tree.value)}) != 1 or (len(tree.feature) and int(tree.feature.max()) >= n):
                raise InvalidInput("conflict model: a tree's arrays disagree with each other or the features")
        if len(model.calib_x) != len(model.calib_y) or not len(model.calib_x):
            raise InvalidInput("conflict model: calibration knots missing or of different lengths")
        return model


@functools.lru_cache(maxsize=1)
def default_conflict_model() -> ConflictModel:
    """The shipped model (``retain/models/conflict.json``), read once."""
    text = resources.files("retain").joinpath("models/conflict.json").read_text(encoding="utf-8")
    return ConflictModel.from_json(text)

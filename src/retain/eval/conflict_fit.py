"""Fitting the conflict model (:mod:`retain.ingest.conflict_model`) on labelled (new, old) pairs.

Pairs come from scenario files (``gold.supersedes``): each event in turn is the new record; its
candidates are the earlier events still current by gold, the ``window`` nearest by cosine and the
``window`` sharing the most query terms (each weighted by its inverse document frequency among
them), as :func:`retain.ingest.detect.find_updates` pools them from a store. A pair is positive when
the new event's ``gold.supersedes`` lists the old one. Record types are predicted by the classifier
(:func:`retain.text.classify.classify`), as on add, never read from gold.

:func:`fit_conflict_model` fits gradient-boosted trees (scikit-learn's
``HistGradientBoostingClassifier``; shipped as node arrays, no scikit-learn at inference) on the
pairs of the training scenarios minus a calibration fold (every fifth scenario), calibrates them by
isotonic regression on that fold, and takes its thresholds as given (chosen on ``scenarios/dev``
with :func:`pair_figures` and ``benchmarks/supersede_detection.py``). ``retain fit-conflict`` runs it
and writes the JSON.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import Encoder
from retain.eval.scenarios import Scenario, load_scenarios
from retain.ingest.conflict import rule_relations
from retain.ingest.conflict_features import FEATURES, pair_features, pool_contexts, pool_rows, read_text
from retain.ingest.conflict_model import ConflictModel, ConflictTree
from retain.record import MemoryRecord, MemoryType
from retain.text.classify import classify
from retain.text.lexical import query_terms

__all__ = ["PairSet", "fit_conflict_model", "fit_from_folder", "pair_figures", "scenario_pairs"]

Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]


@dataclass(frozen=True, slots=True)
class PairSet:
    """Labelled candidate pairs.

    Attributes:
        rows: (n, len(FEATURES)) float64 feature rows.
        labels: (n,) int, 1 = the new event supersedes the old one (gold).
        keys: (scenario id, new event id, old event id) per row.
        old_hard: (n,) bool, the old record's predicted type is ``hard_constraint``.
        missed: gold links whose old event was not in the new event's pool (counted as misses).
    """

    rows: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int64]
    keys: tuple[tuple[str, str, str], ...]
    old_hard: npt.NDArray[np.bool_]
    missed: int

    @staticmethod
    def concat(parts: Sequence[PairSet]) -> PairSet:
        """The pairs of ``parts`` together, in order."""
        return PairSet(
            rows=np.vstack([p.rows for p in parts]) if parts else np.zeros((0, len(FEATURES))),
            labels=np.concatenate([p.labels for p in parts]) if parts else np.zeros(0, dtype=np.int64),
            keys=tuple(k for p in parts for k in p.keys),
            old_hard=np.concatenate([p.old_hard for p in parts]) if parts else np.zeros(0, dtype=bool),
            missed=sum(p.missed for p in parts),
        )


def _pool(
    i: int, current: Sequence[int], unit: npt.NDArray[np.float32], terms: Sequence[set[str]], window: int
) -> list[int]:
    """Indices of the candidates of event ``i`` among ``current`` earlier events (see the module docstring)."""
    if not current:
        return []
    cos = unit[list(current)] @ unit[i]
    by_cos = [current[j] for j in np.argsort(-cos, kind="stable")[:window]]
    n = len(current)
    df: dict[str, int] = {}
    for j in current:
        for t in terms[j]:
            df[t] = df.get(t, 0) + 1
    weight = {j: sum(math.log1p(n / df[t]) for t in terms[i] & terms[j]) for j in current}
    by_terms = [j for j in sorted(current, key=lambda j: (-weight[j], -j)) if weight[j] > 0][:window]
    return sorted(set(by_cos) | set(by_terms))


def scenario_pairs(scenario: Scenario, embed: Embed, *, window: int = 10) -> PairSet:
    """The labelled candidate pairs of one scenario (see the module docstring); ``embed`` maps texts
    to (n, d) float32 L2-normalised vectors."""
    events = scenario.events
    unit = np.asarray(embed([e.text for e in events]), dtype=np.float32)
    terms = [set(query_terms(e.text)) for e in events]
    records = [
        MemoryRecord(
            id=f"{scenario.id}:{e.id}",
            namespace="s",
            content=e.text,
            type=classify(e.text, e.role),
            role=e.role,
            embedding=unit[e.index],
        )
        for e in events
    ]
    rows: list[npt.NDArray[np.float64]] = []
    labels: list[int] = []
    keys: list[tuple[str, str, str]] = []
    hard: list[bool] = []
    missed = 0
    for e in events[1:]:
        gone = scenario.superseded_by_gold(e.index - 1)
        current = [j for j in range(e.index) if events[j].id not in gone]
        pool = _pool(e.index, current, unit, terms, window)
        gold = set(e.gold.supersedes) if e.gold else set()
        missed += len(gold - {events[j].id for j in pool})
        new = records[e.index]
        cosines = [float(unit[j] @ unit[e.index]) for j in pool]
        rules = rule_relations(new, [(records[j], c) for j, c in zip(pool, cosines, strict=True)])
        if rules is None:  # a paraphrase in the pool: no update is considered (as on add)
            missed += len(gold & {events[j].id for j in pool})
            continue
        contexts = pool_contexts(cosines, pool, rules)
        own: list[npt.NDArray[np.float64]] = []
        for j, c, ctx in zip(pool, cosines, contexts, strict=True):
            old = records[j]
            own.append(
                pair_features(
                    read_text(new.content),
                    read_text(old.content),
                    cos=c,
                    new_role=new.role,
                    old_role=old.role,
                    new_hard=new.type is MemoryType.HARD_CONSTRAINT,
                    old_hard=old.type is MemoryType.HARD_CONSTRAINT,
                    context=ctx,
                )
            )
            labels.append(int(events[j].id in gold))
            keys.append((scenario.id, e.id, events[j].id))
            hard.append(old.type is MemoryType.HARD_CONSTRAINT)
        if own:
            rows.extend(pool_rows(np.vstack(own)))
    return PairSet(
        rows=np.asarray(rows, dtype=np.float64).reshape(-1, len(FEATURES)),
        labels=np.asarray(labels, dtype=np.int64),
        keys=tuple(keys),
        old_hard=np.asarray(hard, dtype=bool),
        missed=missed,
    )


def fit_conflict_model(
    pairs: PairSet,
    *,
    thresholds: tuple[float, float, float],
    seed: int = 0,
    meta: Mapping[str, Any] | None = None,
) -> ConflictModel:
    """Fit the boosted trees on ``pairs`` minus the calibration fold (the scenarios whose sorted
    position is a multiple of 5), calibrate them by isotonic regression on that fold, and return the
    model with ``thresholds`` = (threshold, hard_threshold, conflict_threshold).

    Raises:
        InvalidInput: no positive or no negative pair in either part.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.isotonic import IsotonicRegression

    from retain.errors import InvalidInput

    scenarios = sorted({k[0] for k in pairs.keys})
    calib_ids = set(scenarios[::5])
    calib = np.asarray([k[0] in calib_ids for k in pairs.keys], dtype=bool)
    fit_y, cal_y = pairs.labels[~calib], pairs.labels[calib]
    if len(set(fit_y.tolist())) < 2 or len(set(cal_y.tolist())) < 2:
        raise InvalidInput("conflict model: the fit and calibration parts each need positive and negative pairs")
    gb = HistGradientBoostingClassifier(**_TREES, random_state=seed).fit(pairs.rows[~calib], fit_y)
    trees = tuple(_tree(predictors[0].nodes) for predictors in gb._predictors)
    base = ConflictModel(
        features=FEATURES,
        baseline=float(np.ravel(gb._baseline_prediction)[0]),
        trees=trees,
        calib_x=np.asarray([0.0, 1.0]),
        calib_y=np.asarray([0.0, 1.0]),
        threshold=0.5,
        hard_threshold=0.5,
        conflict_threshold=0.5,
        meta={},
    )
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(base.raw(pairs.rows[calib]), cal_y)
    threshold, hard_threshold, conflict_threshold = thresholds
    return dataclasses.replace(
        base,
        calib_x=np.asarray(iso.X_thresholds_, dtype=np.float64),
        calib_y=np.asarray(iso.y_thresholds_, dtype=np.float64),
        threshold=threshold,
        hard_threshold=hard_threshold,
        conflict_threshold=conflict_threshold,
        meta={
            "pairs": len(pairs.labels),
            "positives": int(pairs.labels.sum()),
            "calibration_scenarios": len(calib_ids),
            "seed": seed,
            "trees": dict(_TREES),
            **(meta or {}),
        },
    )


_TREES = {"max_iter": 300, "learning_rate": 0.05, "max_depth": 4}


def _tree(nodes: Any) -> ConflictTree:
    """A :class:`ConflictTree` from a fitted predictor's node table (numeric splits only)."""
    return ConflictTree(
        feature=np.asarray(nodes["feature_idx"], dtype=np.int64),
        threshold=np.asarray(nodes["num_threshold"], dtype=np.float64),
        left=np.asarray(nodes["left"], dtype=np.int64),
        right=np.asarray(nodes["right"], dtype=np.int64),
        leaf=np.asarray(nodes["is_leaf"], dtype=bool),
        value=np.asarray(nodes["value"], dtype=np.float64),
        depth=int(np.max(nodes["depth"])) if len(nodes) else 0,
    )


def pair_figures(model: ConflictModel, pairs: PairSet, threshold: float) -> dict[str, float]:
    """Precision, recall and F1 of ``p >= threshold`` on ``pairs`` (gold links outside every pool
    count as misses), in [0, 1]."""
    p = model.probability(pairs.rows)
    pred = p >= threshold
    tp = int((pred & (pairs.labels == 1)).sum())
    fp = int((pred & (pairs.labels == 0)).sum())
    fn = int(((~pred) & (pairs.labels == 1)).sum()) + pairs.missed
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def fit_from_folder(folder: Path, encoder: Encoder, thresholds: tuple[float, float, float]) -> ConflictModel:
    """Load the scenarios of ``folder``, build their pairs (:func:`scenario_pairs`, ``encoder``'s
    vectors) and fit the model (:func:`fit_conflict_model`, seed 0).

    Raises:
        InvalidInput: no scenario in ``folder``, a malformed file, or a threshold outside [0, 1].
    """
    from retain.errors import InvalidInput

    if not all(0.0 <= t <= 1.0 for t in thresholds):
        raise InvalidInput(f"thresholds: probabilities in [0, 1], got {thresholds}")
    scenarios = load_scenarios(folder)
    if not scenarios:
        raise InvalidInput(f"{folder}: no scenario files")
    pairs = PairSet.concat([scenario_pairs(s, encoder.encode) for s in scenarios])
    meta = {"trained_on": f"{folder.name} ({len(scenarios)} scenarios)", "encoder": encoder.name}
    return fit_conflict_model(pairs, thresholds=thresholds, meta=meta)

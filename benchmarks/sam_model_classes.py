"""Does another model class over the SAM features rank better than the shipped scorer? (issue 5)

`benchmarks/sam_ceiling.py` showed that the shipped scorer's model (:func:`retain.state.training.train_state_scorer`)
cannot fit the evaluation probes past recall@5 0.709 at the penalty that generalises. This asks the
other question: whether a standard classifier of another kind, on the same inputs, generalises better.
Each candidate of each probe (the same pools a search builds) gets:

- the shipped state features (:func:`retain.state.features.state_features`, 38 columns), the content score, the
  classifier's type as one-hot, whether the query is terse and log(1 + its content terms);
- ``text`` inputs (new): three text-density columns the shipped scorer lacks: log(1 + characters),
  log(1 + canonical dates, times and amounts, :func:`retain.text.values.canonical_values`) and the share of
  digits (short chit-chat such as "oh thank god" otherwise ranks among the needed records);
- ``echo`` inputs (new): how much the stream came back to a record after it was written, the trace the
  reasoning steps that used it leave: among the pool's later records, log(1 + those with cosine > 0.5),
  log(1 + such agent records), their share of the later records, and the best cosine with a later agent
  record (in these scenarios the pool holds every earlier event).

Two models, both scikit-learn, are fitted on the training files only (each probe weighs the same: its
needed candidates share weight 1 and all its candidates share weight 1):

- logistic regression (L2, C = 0.1, standardised inputs);
- gradient-boosted trees (``HistGradientBoostingClassifier``, depth 3, 150 rounds, learning rate 0.05,
  at least 60 candidates a leaf).

Each model and input set is scored as the shipped scorer is: ``5-fold`` rows by cross-validation
grouped by scenario on the training files, ``held out`` rows fitted on all training files and scored on
the evaluation files. The shipped model is scored on the evaluation files too (its 5-fold figure is what
``retain train-sam`` prints). Nothing is saved and nothing fitted here is shipped. About 5 minutes on 2
cores (replaying the scenarios into memories takes most of it).

    python benchmarks/sam_model_classes.py [--train scenarios/train --train scenarios/dev]
        [--eval ../shared/scenarios] [--inputs base --inputs text --inputs echo --inputs text,echo]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from retain.encoders.basis import MiniLMEncoder
from retain.eval.sam_train import ProbeExample, probe_examples, rank_metrics, scenario_files, score_metrics
from retain.eval.scenarios import load_scenario
from retain.state.candidates import TYPES
from retain.state.features import state_features
from retain.state.scorer import StateScorer
from retain.text.values import canonical_values

Model = Callable[[], object]
MODELS: dict[str, Model] = {
    "logistic regression": lambda: make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000)),
    "gradient-boosted trees": lambda: HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.05, max_depth=3, min_samples_leaf=60, random_state=0
    ),
}


def _texts(files: Sequence[Path]) -> dict[tuple[str, str], str]:
    out = {}
    for path in files:
        sc = load_scenario(path)
        out.update({(sc.id, e.id): e.text for e in sc.events})
    return out


def _density(text: str) -> list[float]:
    digits = sum(c.isdigit() for c in text)
    return [math.log1p(len(text)), math.log1p(len(canonical_values(text))), digits / max(len(text), 1)]


ECHO_COSINE = 0.5
"""A later record whose cosine with a record exceeds this restates it (the ``echo`` inputs)."""
_AGENT_ROLES = frozenset({"agent_thought", "agent_action", "agent", "assistant"})


def _echo(p: ProbeExample) -> npt.NDArray[np.float64]:
    """(n, 4) float64 ``echo`` inputs of one probe's n candidates (see the module docstring)."""
    c = p.example.cands
    vectors = c.vectors.astype(np.float64)
    later = c.positions[None, :] > c.positions[:, None]  # (n, n): j was written after i
    agent = np.array([r in _AGENT_ROLES for r in c.roles], dtype=bool)[None, :]
    cos = np.where(later, vectors @ vectors.T, -1.0)
    echoes = cos > ECHO_COSINE
    return np.stack(
        [
            np.log1p(echoes.sum(axis=1)),
            np.log1p((echoes & agent).sum(axis=1)),
            echoes.sum(axis=1) / np.maximum(later.sum(axis=1), 1),
            np.where(later & agent, cos, -1.0).max(axis=1, initial=-1.0).clip(0.0),
        ],
        axis=1,
    )


def _inputs(p: ProbeExample, texts: dict[tuple[str, str], str], kinds: frozenset[str]) -> npt.NDArray[np.float64]:
    """(n, f) float64 inputs of one probe's n candidates: the base columns, then those of ``kinds``."""
    e = p.example
    n = len(e.content)
    cols = [
        state_features(e.state, e.phase, e.cands),
        e.content[:, None],
        np.eye(len(TYPES))[e.cands.types],
        np.full((n, 1), float(e.terse)),
        np.full((n, 1), math.log1p(e.query_terms)),
    ]
    if "text" in kinds:
        cols.append(np.array([_density(texts[(e.group, i)]) for i in p.event_ids]).reshape(n, 3))
    if "echo" in kinds:
        cols.append(_echo(p))
    return np.hstack(cols)


def _fit(name: str, xs: Sequence[npt.NDArray[np.float64]], probes: Sequence[ProbeExample]) -> object:
    ys = [p.example.needed.astype(int) for p in probes]
    weights = [np.where(y == 1, 1.0 / max(int(y.sum()), 1), 1.0 / len(y)) for y in ys]
    model = MODELS[name]()
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(weights) * len(probes)
    if name == "logistic regression":
        model.fit(x, y, logisticregression__sample_weight=w)  # type: ignore[attr-defined]
    else:
        model.fit(x, y, sample_weight=w)  # type: ignore[attr-defined]
    return model


def _scores(model: object, xs: Sequence[npt.NDArray[np.float64]]) -> list[npt.NDArray[np.float64]]:
    return [model.predict_proba(x)[:, 1] for x in xs]  # type: ignore[attr-defined]


def _row(name: str, figures: dict[str, dict[str, float]]) -> str:
    a, t = figures["all"], figures["terse"]
    return (
        f"{name:<60} {a['probes']:>4} {a['recall@5']:.3f} {a['recall@10']:.3f} {a['mrr']:.3f}"
        f"   {t['probes']:>4} {t['recall@5']:.3f} {t['recall@10']:.3f} {t['mrr']:.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", action="append", help="training scenario file or folder (repeatable)")
    ap.add_argument("--eval", default="../shared/scenarios", help="evaluation scenario file or folder")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument(
        "--inputs",
        action="append",
        help="input set: base, or base plus comma-separated extras (text, echo); repeatable; default all four",
    )
    args = ap.parse_args()
    specs = args.inputs or ["base", "text", "echo", "text,echo"]
    for spec in specs:
        if {k for k in spec.split(",") if k != "base"} - {"text", "echo"}:
            ap.error(f"--inputs {spec!r}: base, or base plus extras among text, echo")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    train_files = scenario_files(args.train or ["scenarios/train", "scenarios/dev"])
    eval_files = scenario_files([args.eval])
    encoder = MiniLMEncoder()
    train = [p for p in probe_examples(train_files, encoder) if p.needed]
    held = [p for p in probe_examples(eval_files, encoder) if p.needed]
    texts = _texts([*train_files, *eval_files])
    groups = sorted({p.example.group for p in train})
    fold_of = {g: i % args.folds for i, g in enumerate(groups)}
    print(f"{len(train_files)} training files ({len(train)} probes), {len(eval_files)} evaluation files")
    print(f"{'model (inputs)':<60} {'n':>4} r@5   r@10  MRR      terse r@5  r@10  MRR")
    for spec in specs:
        kinds = frozenset(k for k in spec.split(",") if k != "base")
        x_train = [_inputs(p, texts, kinds) for p in train]
        x_held = [_inputs(p, texts, kinds) for p in held]
        label = " + ".join(["base", *sorted(kinds)])
        for name in MODELS:
            cv: list[npt.NDArray[np.float64]] = [np.zeros(0)] * len(train)
            for fold in range(args.folds):
                fit = [i for i, p in enumerate(train) if fold_of[p.example.group] != fold]
                model = _fit(name, [x_train[i] for i in fit], [train[i] for i in fit])
                for i, p in enumerate(train):
                    if fold_of[p.example.group] == fold:
                        cv[i] = _scores(model, [x_train[i]])[0]
            print(_row(f"{name} ({label}), {args.folds}-fold", score_metrics(train, cv)))
            model = _fit(name, x_train, train)
            print(_row(f"{name} ({label}), held out", score_metrics(held, _scores(model, x_held))))
    print(_row("shipped scorer on eval", rank_metrics(held, StateScorer.load())))
    print(_row("content only on eval", rank_metrics(held, None)))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""How far turn-level utility prediction can go on LoCoMo (issue 3's 0.70 hit rate at a 25% budget).

A turn is "needed" when some question cites it as evidence. Which of several similar factual turns a
question-writer happened to cite is close to a coin flip, so part of the label cannot be predicted
from the turn. This prints, leave-one-conversation-out, ROC-AUC and the hit rate of "keep the top
10 / 25 / 50 % of each conversation's turns by score" (:func:`retain.eval.utility_traces.evaluate`'s
definition: the ceil(share * n) best, ties in stream order) for:

- the shipped model class (:func:`retain.eval.utility_traces.loco_auc`: :func:`retain.retention.utility.train_utility`,
  logistic regression on the causal features plus the embedding), trained on LoCoMo only;
- gradient boosting (scikit-learn HistGradientBoostingClassifier) on the same features plus a 24-dim
  PCA of the embedding (PCA fitted on the training conversations only);
- the dataset's own annotations: LoCoMo's ``observation`` field lists, per session, the facts its
  annotators extracted, each citing turns. Scoring a turn 1 when it is cited there is *not* a
  causal predictor (it uses the annotation); it shows how well even human fact extraction
  foresees what questions will cite.

Usage::

    .venv/bin/python benchmarks/utility_ceiling.py [--data LOCOMO.json] [--encoder minilm]

Embedding every turn with MiniLM takes a few minutes on a CPU. Data is read in place, never copied.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingClassifier

from retain.cli.common import make_encoder
from retain.cli.utility import SHARES, loco_table
from retain.eval.datasets import load_locomo, resolve_locomo
from retain.eval.utility_traces import evaluate_scores, loco_auc, locomo_traces
from retain.retention.utility import utility_features


def cited_by_observations(raw: dict, turn_ids: list[str]) -> np.ndarray:
    """1.0 for each turn an ``observation`` fact of the LoCoMo conversation ``raw`` cites, else 0.0."""
    cited: set[str] = set()
    for per_session in raw.get("observation", {}).values():
        for facts in per_session.values():
            for _, evidence in facts:
                cited.update(evidence if isinstance(evidence, list) else (e.strip() for e in evidence.split(",")))
    return np.array([t in cited for t in turn_ids], dtype=np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo-format file (dev data)")
    parser.add_argument("--encoder", default="minilm", help="'minilm' or 'hashing-<dim>'")
    args = parser.parse_args()
    console = Console(width=None if sys.stdout.isatty() else 140)
    path = resolve_locomo(args.data)
    conversations = load_locomo(path)
    raw = {c["sample_id"]: c for c in json.loads(path.read_text(encoding="utf-8"))}
    traces = locomo_traces(conversations, make_encoder(args.encoder))
    labels = [t[2].astype(np.float64) for t in traces]
    features = [utility_features(t[0], t[1]) for t in traces]
    embeddings = [np.stack([r.embedding for r in t[0]]) for t in traces]
    n = len(traces)
    console.print(
        f"{path.name}: {n} conversations, {sum(map(len, labels))} turns, {sum(y.sum() for y in labels):.0f} cited"
    )

    boosted = []
    for i in range(n):
        rest = [j for j in range(n) if j != i]
        pca = PCA(24, random_state=0).fit(np.vstack([embeddings[j] for j in rest]))
        design = [np.hstack([features[j], pca.transform(embeddings[j])]) for j in range(n)]
        gbm = HistGradientBoostingClassifier(
            max_iter=200, learning_rate=0.05, max_leaf_nodes=15, l2_regularization=1.0, random_state=0
        )
        gbm.fit(np.vstack([design[j] for j in rest]), np.concatenate([labels[j] for j in rest]))
        boosted.append(gbm.predict_proba(design[i])[:, 1])
    annotated = [cited_by_observations(raw[c.sample_id], [t.dia_id for t in c.turns]) for c in conversations]
    console.print(loco_table("LearnedUtility (logistic), leave-one-conversation-out", loco_auc(traces, shares=SHARES)))
    console.print(
        loco_table(
            "gradient boosting, features + PCA(24) embedding, LOCO", evaluate_scores(traces, boosted, shares=SHARES)
        )
    )
    console.print(
        loco_table(
            "annotators' observations (not causal; annotation)", evaluate_scores(traces, annotated, shares=SHARES)
        )
    )


if __name__ == "__main__":
    main()

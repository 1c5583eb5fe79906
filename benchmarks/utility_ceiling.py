"""How far turn-level utility prediction can go on LoCoMo (issue 3's 0.70 hit rate at a 25% budget).

A turn is "needed" when some question cites it as evidence. Which of several similar factual turns a
question-writer happened to cite is close to a coin flip, so part of the label cannot be predicted
from the turn. This prints, leave-one-conversation-out, ROC-AUC and the hit rate of "keep the top
10 / 25 / 50 % of each conversation's turns by score" for:

- the shipped model class (:func:`retain.utility.train_utility`, logistic regression on the causal
  features plus the embedding), trained on LoCoMo only;
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
from pathlib import Path

import numpy as np
from sklearn.decomposition import PCA
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score

from retain.cli import make_encoder
from retain.eval.datasets import load_locomo, resolve_locomo
from retain.eval.utility_traces import locomo_traces
from retain.utility import train_utility, utility_features

SHARES = (0.1, 0.25, 0.5)


def hit_rate(labels: np.ndarray, scores: np.ndarray, share: float) -> float:
    """Share of the positives among the top ``share`` of turns by score (ties broken by order)."""
    k = round(share * len(labels))
    top = np.argsort(-scores, kind="stable")[:k]
    return float(labels[top].sum() / max(1, labels.sum()))


def cited_by_observations(raw: dict, turn_ids: list[str]) -> np.ndarray:
    cited: set[str] = set()
    for per_session in raw.get("observation", {}).values():
        for facts in per_session.values():
            for _, evidence in facts:
                cited.update(evidence if isinstance(evidence, list) else (e.strip() for e in evidence.split(",")))
    return np.array([t in cited for t in turn_ids], dtype=np.float64)


def row(name: str, results: list[tuple[float, ...]]) -> None:
    mean = np.mean(results, axis=0)
    hits = "  ".join(f"hit@{s:.0%} {h:.3f}" for s, h in zip(SHARES, mean[1:], strict=True))
    print(f"{name:58s} ROC-AUC {mean[0]:.3f}  {hits}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo-format file (dev data)")
    parser.add_argument("--encoder", default="minilm", help="'minilm' or 'hashing-<dim>'")
    args = parser.parse_args()
    path = resolve_locomo(args.data)
    conversations = load_locomo(path)
    raw = {c["sample_id"]: c for c in json.loads(path.read_text(encoding="utf-8"))}
    traces = locomo_traces(conversations, make_encoder(args.encoder))
    labels = [t[2].astype(np.float64) for t in traces]
    features = [utility_features(t[0], t[1]) for t in traces]
    embeddings = [np.stack([r.embedding for r in t[0]]) for t in traces]
    n = len(traces)
    print(f"{path.name}: {n} conversations, {sum(map(len, labels))} turns, {sum(y.sum() for y in labels):.0f} cited")

    def scored(y: np.ndarray, s: np.ndarray) -> tuple[float, ...]:
        return (float(roc_auc_score(y, s)), *(hit_rate(y, s, share) for share in SHARES))

    linear, boosted, annotated = [], [], []
    for i in range(n):
        rest = [j for j in range(n) if j != i]
        model = train_utility([traces[j] for j in rest])
        linear.append(scored(labels[i], model.score(traces[i][0], traces[i][1])))
        pca = PCA(24, random_state=0).fit(np.vstack([embeddings[j] for j in rest]))
        design = [np.hstack([features[j], pca.transform(embeddings[j])]) for j in range(n)]
        gbm = HistGradientBoostingClassifier(
            max_iter=200, learning_rate=0.05, max_leaf_nodes=15, l2_regularization=1.0, random_state=0
        )
        gbm.fit(np.vstack([design[j] for j in rest]), np.concatenate([labels[j] for j in rest]))
        boosted.append(scored(labels[i], gbm.predict_proba(design[i])[:, 1]))
        turn_ids = [t.dia_id for t in conversations[i].turns]
        annotated.append(scored(labels[i], cited_by_observations(raw[conversations[i].sample_id], turn_ids)))
    row("LearnedUtility (logistic), leave-one-conversation-out", linear)
    row("gradient boosting, features + PCA(24) embedding, LOCO", boosted)
    row("annotators' observations (not causal; annotation)", annotated)


if __name__ == "__main__":
    main()

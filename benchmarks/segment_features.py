"""Does hierarchical retrieval help? Leave-one-conversation-out recall on LoCoMo dev with and without
the ``segment_summary_sim`` fusion feature, from one ingest of every conversation (paired: same
pools, same questions), plus the search latency with the feature computed.

Run: ``python benchmarks/segment_features.py [--data ../shared/data/locomo/locomo_dev.json]``.
Prints recall@10 per category and the headline (categories 1-4) for both feature sets.
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import numpy as np

from retain.basis import MiniLMEncoder
from retain.eval.datasets import load_locomo, resolve_locomo
from retain.eval.locomo import HEADLINE_CATEGORIES, QuestionPool, _labels, collect_pools, loco_rankings, score_run
from retain.retrieve import FEATURE_NAMES, train_fusion


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=None, help="also write the fusion fitted on every conversation here")
    parser.add_argument("--pools", default=None, help="cache the candidate pools in this pickle (read when it exists)")
    args = parser.parse_args()
    path = resolve_locomo(args.data)
    conversations = load_locomo(path)
    encoder = MiniLMEncoder()
    started = time.perf_counter()
    if args.pools and Path(args.pools).is_file():
        pools = pickle.loads(Path(args.pools).read_bytes())
    else:
        pools = collect_pools(conversations, lambda: encoder, search=False, progress=False)
        if args.pools:
            Path(args.pools).write_bytes(pickle.dumps(pools))
    print(f"pools ready in {time.perf_counter() - started:.0f} s ({len(pools)} questions)")
    without = [i for i, n in enumerate(FEATURE_NAMES) if n != "segment_summary_sim"]

    seg = FEATURE_NAMES.index("segment_summary_sim")

    def variant(p: QuestionPool, kind: str) -> np.ndarray:
        base = p.features[:, without]
        sim = p.features[:, seg]
        if kind == "none":
            return base
        if kind == "sim":
            return p.features
        gap = sim - (sim.max() if sim.size else 0.0)
        if kind == "sim+gap":
            return np.column_stack([p.features, gap])
        ranks = {v: r for r, v in enumerate(sorted(set(sim.tolist()), reverse=True))}
        rr = np.array([1.0 / (1.0 + ranks[v]) for v in sim.tolist()])
        return np.column_stack([p.features, gap, rr])

    for label, kind in (
        ("without segment_summary_sim", "none"),
        ("with segment_summary_sim", "sim"),
        ("with sim + gap to the best segment", "sim+gap"),
        ("with sim + gap + segment rank", "sim+gap+rr"),
    ):
        report = score_run(
            pools, loco_rankings([QuestionPool(**{**p.__dict__, "features": variant(p, kind)}) for p in pools])
        )
        cats = report["by_category"]
        print(
            f"{label}: headline r@10 {report['recall@10']:.3f} r@5 {report['recall@5']:.3f} mrr {report['mrr']:.3f} | "
            + " ".join(f"cat{c} r@10 {cats[c]['recall@10']:.3f}" for c in ("1", "2", "3", "4"))
        )

    if args.out:  # same data and trained_on text as `retain train-fusion`
        kept = [p for p in pools if p.category in HEADLINE_CATEGORIES and p.evidence]
        ids = ", ".join(c.sample_id for c in conversations)
        model = train_fusion(
            [p.features for p in kept],
            [_labels(p) for p in kept],
            trained_on=(
                f"{path.name} ({len(conversations)} conversations: {ids}), categories 1-4, encoder {encoder.name}"
            ),
        )
        Path(args.out).write_text(model.to_json() + "\n", encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

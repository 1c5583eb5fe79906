"""Does hierarchical retrieval help? Leave-one-conversation-out recall on LoCoMo dev with and without
segment relevance features, from one ingest of every conversation (paired: same pools, same
questions).

Segment relevance = cosine of the query to the centroid of the candidate's session
(:class:`retain.sequence.segments.SegmentIndex`), tried as: the raw cosine (``segment_summary_sim``), plus its
gap to the best session in the pool, plus the session's reciprocal rank. Each variant appends its
columns to the 14 shipped fusion features and refits the fusion leave-one-conversation-out.

Run: ``python benchmarks/segment_features.py [--data ../shared/data/locomo/locomo_dev.json] [--pools FILE]``.
Prints recall@10 per category and the headline (categories 1-4) for each variant.
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import MiniLMEncoder
from retain.eval.datasets import load_locomo, resolve_locomo
from retain.eval.locomo import QuestionPool, ingest, loco_rankings, score_run
from retain.memory import Memory
from retain.retrieval.fusion import PRESETS
from retain.retrieval.pool import candidates
from retain.sequence.segments import SegmentIndex
from retain.store import RecordFilter


def build(data: str | None) -> list[tuple[QuestionPool, npt.NDArray[np.float64]]]:
    """(pool, segment cosine per candidate) for every question."""
    encoder = MiniLMEncoder()
    out = []
    for conv in load_locomo(resolve_locomo(data)):
        namespace = f"locomo-{conv.sample_id}"
        with Memory(":memory:", encoder=encoder) as mem:
            id_to_dia = ingest(mem, conv, namespace)
            index = SegmentIndex.build(mem.store, namespace)
            for q in conv.questions:
                pool = candidates(mem.store, mem.encoder, q.question, namespace, RecordFilter(), PRESETS["default"])
                sim = index.similarity(pool.query_vector, [r.segment for r in pool.records])
                qp = QuestionPool(
                    sample_id=conv.sample_id,
                    category=q.category,
                    evidence=q.evidence,
                    dia_ids=[id_to_dia.get(r.id, "") for r in pool.records],
                    features=pool.features(),
                    rrf=pool.rrf,
                )
                out.append((qp, sim))
    return out


def variant(pool: QuestionPool, sim: npt.NDArray[np.float64], kind: str) -> npt.NDArray[np.float64]:
    """The pool's features with the segment columns of ``kind`` appended."""
    if kind == "none":
        return pool.features
    gap = sim - (sim.max() if sim.size else 0.0)
    ranks = {v: r for r, v in enumerate(sorted(set(sim.tolist()), reverse=True))}
    rr = np.array([1.0 / (1.0 + ranks[v]) for v in sim.tolist()])
    cols = {"sim": [sim], "sim+gap": [sim, gap], "sim+gap+rr": [sim, gap, rr], "gap+rr": [gap, rr]}[kind]
    return np.column_stack([pool.features, *cols])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=None)
    parser.add_argument("--pools", default=None, help="cache the pools in this pickle (read when it exists)")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.pools and Path(args.pools).is_file():
        pairs = pickle.loads(Path(args.pools).read_bytes())
    else:
        pairs = build(args.data)
        if args.pools:
            Path(args.pools).write_bytes(pickle.dumps(pairs))
    print(f"pools ready in {time.perf_counter() - started:.0f} s ({len(pairs)} questions)")
    pools = [p for p, _ in pairs]
    for kind in ("none", "sim", "sim+gap", "gap+rr", "sim+gap+rr"):
        varied = [QuestionPool(**{**p.__dict__, "features": variant(p, s, kind)}) for p, s in pairs]
        report = score_run(pools, loco_rankings(varied))
        cats = report["by_category"]
        print(
            f"{kind:>11}: headline r@10 {report['recall@10']:.3f} r@5 {report['recall@5']:.3f} "
            f"mrr {report['mrr']:.3f} | "
            + " ".join(f"cat{c} r@10 {cats[c]['recall@10']:.3f}" for c in ("1", "2", "3", "4"))
        )


if __name__ == "__main__":
    main()

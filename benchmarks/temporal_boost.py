"""Does time-aware ranking help LoCoMo? A grid of post-fusion boosts, scored per category.

Replays the LoCoMo dev conversations (time expressions resolved on add against each session's date),
then for every question takes the default search's candidate pool and fused scores (the shipped
learned fusion) and adds ``w_when * dated + w_range * in_range`` (:func:`retain.text.temporal.time_features`;
``now`` = the conversation's last session date). Prints recall@10 per category and the headline
(categories 1-4) for each weight pair, the ingest speed (time resolution and embedding included) and
the cost of time resolution alone per turn.

The weights are chosen on the same dev conversations the fusion was fitted on: an in-sample figure.

Usage::

    .venv/bin/python benchmarks/temporal_boost.py [--data LOCOMO.json] [--encoder minilm] [--limit N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from retain.cli.common import make_encoder
from retain.eval.datasets import load_locomo
from retain.eval.locomo import HEADLINE_CATEGORIES, ingest
from retain.eval.metrics import recall_at_k
from retain.memory import Memory
from retain.retrieval.fusion import PRESETS
from retain.retrieval.pool import candidates
from retain.retrieval.search import fuse
from retain.store import RecordFilter
from retain.text.temporal import resolve_times, time_features

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"
GRID_WHEN = (0.0, 0.05, 0.1, 0.2, 0.3)
GRID_RANGE = (0.0, 0.05, 0.1, 0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    args = parser.parse_args()
    conversations = load_locomo(args.data)[: args.limit]
    encoder = make_encoder(args.encoder)

    turns = [(t.text, t.session_time) for c in conversations for t in c.turns]
    resolve_times("yesterday", turns[0][1])  # dateparser's first call loads its language data
    t0 = time.perf_counter()
    refs = sum(len(resolve_times(text, when)) for text, when in turns)
    resolve_ms = (time.perf_counter() - t0) * 1000 / len(turns)

    rows = []  # (category, evidence, dia_ids, fused, dated, in_range)
    ingest_turns, ingest_s = 0, 0.0
    cfg = PRESETS["default"]
    for conv in conversations:
        namespace = f"locomo-{conv.sample_id}"
        with Memory(":memory:", encoder=encoder) as mem:
            started = time.perf_counter()
            id_to_dia = ingest(mem, conv, namespace)
            ingest_s += time.perf_counter() - started
            ingest_turns += len(conv.turns)
            now = max((t.session_time for t in conv.turns if t.session_time is not None), default=None)
            for q in conv.questions:
                if not q.evidence:
                    continue
                pool = candidates(mem.store, mem.encoder, q.question, namespace, RecordFilter(), cfg)
                fused = fuse(mem.fusion, pool, cfg)
                dated, in_range = time_features(pool.records, q.question, now)
                dia = [id_to_dia.get(r.id, "") for r in pool.records]
                rows.append((q.category, q.evidence, dia, fused, dated, in_range))

    print(f"{len(turns)} turns: {refs} time expressions; resolution {resolve_ms:.3f} ms/turn")
    print(f"ingest {ingest_turns / ingest_s:.1f} turns/s (time resolution and embedding included)")
    asked = sum(1 for r in rows if r[4].any())
    ranged = sum(1 for r in rows if r[5].any())
    print(f"questions: {len(rows)}; asking when with a dated candidate: {asked}; with a time range match: {ranged}")
    cats = sorted({r[0] for r in rows})
    print("w_when w_range " + " ".join(f"cat{c}_r@10" for c in cats) + " headline_r@10")
    for w_when in GRID_WHEN:
        for w_range in GRID_RANGE:
            per_cat: dict[int, list[float]] = {c: [] for c in cats}
            for cat, evidence, dia, fused, dated, in_range in rows:
                scores = fused + w_when * dated + w_range * in_range
                ranked = [dia[i] for i in np.argsort(-scores, kind="stable")[:10]]
                per_cat[cat].append(recall_at_k(ranked, evidence, 10))
            headline = [v for c in HEADLINE_CATEGORIES for v in per_cat.get(c, [])]
            cells = " ".join(f"{np.mean(per_cat[c]):.3f}" for c in cats)
            print(f"{w_when:<6} {w_range:<7} {cells} {np.mean(headline):.3f}")


if __name__ == "__main__":
    main()

"""Timings of retain.retrieval.graph: search expansion and personalised PageRank over 10,000 records.

Prints figures; asserts nothing. Run: ``.venv/bin/python benchmarks/graph_expand.py``.
Setup: one namespace of ``--records`` records (HashingEncoder(64), in-memory SQLite) with about
``--degree`` random typed edges per record (plus nothing else: edges on write are off while
building, so the graph is exactly the random one). Reports:

* search latency (ms p50/p95) with ``expand=0`` and ``expand=5`` (query embedding included), and
  the expansion step alone (:func:`retain.retrieval.graph.expand_hits` on the same top 10);
* :func:`retain.retrieval.graph.graph_importance` (scipy.sparse power iteration, 50 seeds) and one full
  :meth:`Memory.propagate_importance` (which also writes and audits every changed record);
* ingest cost of edges on write: ``add`` per record with the graph on and off (1,000 records).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from retain.config import GraphConfig, MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.retrieval.graph import expand_hits, graph_importance
from retain.store import HOT_TIERS, Edge, EdgeType, RecordFilter

WORDS = (  # noqa: SIM905
    "kayak river hotel museum budget flight visa ticket train dinner lunch coffee hiking tent stove "
    "map beach harbour ferry bus taxi airport passport luggage camera charger jacket boots market"
).split()
TYPES = [EdgeType.SUPPORTS, EdgeType.ELABORATES, EdgeType.SAME_ENTITY, EdgeType.DERIVED_FROM]


def pct(ms: list[float]) -> str:
    a = np.asarray(ms)
    return f"p50 {np.percentile(a, 50):7.2f} ms  p95 {np.percentile(a, 95):7.2f} ms"


def text(rng: np.random.Generator, i: int) -> str:
    return f"note {i}: " + " ".join(rng.choice(WORDS, 8))


def build(n: int, degree: int, seed: int) -> tuple[Memory, list[str]]:
    rng = np.random.default_rng(seed)
    config = MemoryConfig(supersede=False, dedupe=False, graph=GraphConfig(edges_on_write=False))
    mem = Memory(encoder=HashingEncoder(64), config=config)
    ids: list[str] = []
    for start in range(0, n, 1000):
        items = [NewMemory(text(rng, i)) for i in range(start, min(n, start + 1000))]
        ids += mem.add_many(items, namespace="bench")
    keys = set()
    while len(keys) < degree * n:
        a, b = rng.integers(0, n, 2)
        if a != b:
            keys.add((int(a), int(b), TYPES[int(rng.integers(0, len(TYPES)))]))
    edges = [Edge("bench", ids[a], ids[b], t, float(rng.uniform(0.5, 1.5))) for a, b, t in sorted(keys)]
    for start in range(0, len(edges), 5000):
        mem.store.put([], edges=edges[start : start + 5000])
    return mem, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--degree", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    t0 = time.perf_counter()
    mem, ids = build(args.records, args.degree, args.seed)
    n_edges = len(mem.store.edges("bench"))
    print(f"built {args.records:,} records, {n_edges:,} edges in {time.perf_counter() - t0:.1f} s")

    queries = [" ".join(rng.choice(WORDS, 3)) for _ in range(args.queries)]
    for q in queries[:5]:  # warm caches
        mem.search(q, namespace="bench", k=10, expand=5)
    plain, expanded, step, added = [], [], [], []
    flt = RecordFilter(tiers=HOT_TIERS)
    for q in queries:
        t = time.perf_counter()
        hits = mem.search(q, namespace="bench", k=10)
        plain.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        mem.search(q, namespace="bench", k=10, expand=5)
        expanded.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        out = expand_hits(mem.store, "bench", hits, expand=5, k=10, flt=flt)
        step.append((time.perf_counter() - t) * 1000)
        added.append(sum(h.via_edge is not None for h in out))
    print(f"search expand=0      {pct(plain)}   ({args.queries} queries, k=10)")
    print(f"search expand=5      {pct(expanded)}")
    print(f"expand_hits alone    {pct(step)}   (neighbours entering the top 10: mean {np.mean(added):.2f})")

    ppr = []
    for _ in range(5):
        seeds = {ids[int(i)]: 1.0 for i in rng.choice(len(ids), 50, replace=False)}
        t = time.perf_counter()
        scores = graph_importance(mem.store, "bench", seeds)
        ppr.append((time.perf_counter() - t) * 1000)
    print(f"graph_importance     {pct(ppr)}   ({len(scores):,} nodes, 50 seeds, 5 runs; edges read included)")
    for rid in list(seeds)[:20]:
        mem.feedback(rid, namespace="bench", used=True)
    t = time.perf_counter()
    changed = mem.propagate_importance("bench")
    took = (time.perf_counter() - t) * 1000
    print(f"propagate_importance {took:8.1f} ms  ({len(changed):,} records written and audited)")

    for on in (False, True):
        m = Memory(
            encoder=HashingEncoder(64), config=MemoryConfig(supersede=False, graph=GraphConfig(edges_on_write=on))
        )
        rng2 = np.random.default_rng(args.seed)
        names = ["Caroline Smith", "Melanie Jones", "PR #884", "5000 EUR", "New York"]
        t = time.perf_counter()
        for i in range(1000):
            m.add(f"{text(rng2, i)} with {names[i % len(names)]}", namespace="ingest", segment="s", seq=i)
        per = (time.perf_counter() - t) * 1000 / 1000  # ms per record over 1,000 adds
        print(
            f"add, edges on write {'on ' if on else 'off'}  {per:.2f} ms per record (1,000 single adds; "
            f"{len(m.store.edges('ingest')):,} edges)"
        )
        m.close()
    mem.close()


if __name__ == "__main__":
    main()

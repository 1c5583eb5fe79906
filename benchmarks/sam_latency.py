"""What state-adaptive scoring adds to a search over 10,000 records (issue: <= 5 ms p95).

Builds one namespace of N records (HashingEncoder at 384 dims, so the shipped state scorer applies
and no model load distorts the timing), then runs the same queries with and without an agent state.
The state changes every ``--state-every`` searches (a new phase / subgoal / result), so the figure
includes encoding new states, not only cache hits.

    python benchmarks/sam_latency.py [--records 10000] [--queries 300] [--state-every 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from retain import HashingEncoder, Memory, MemoryConfig
from retain.graph import GraphConfig
from retain.state import StateEncoder

WORDS = (
    "budget", "hotel", "flight", "train", "museum", "allergy", "deadline", "invoice", "refund",
    "courier", "tag", "bag", "kitchen", "permit", "contractor", "quote", "recital", "tempo",
    "chord", "paper", "sample", "window", "api", "webhook", "key", "rate", "limit", "test",
    "flake",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--state-every", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    # building 10,000 records is not what is measured: skip supersede detection, edges and time parsing
    fast = MemoryConfig(supersede=False, resolve_times=False, graph=GraphConfig(edges_on_write=False))
    mem = Memory(encoder=HashingEncoder(dim=384), config=fast)
    ns = "bench"
    items = []
    for i in range(args.records):
        words = " ".join(rng.choice(WORDS, size=8))
        items.append({"content": f"event {i}: {words}", "seq": i, "type": "fact" if i % 50 else "hard_constraint"})
    for start in range(0, len(items), 1000):
        mem.add_many(items[start : start + 1000], namespace=ns)
    queries = [" ".join(rng.choice(WORDS, size=3)) if i % 2 else "ok, continue" for i in range(args.queries)]
    states = [
        {
            "phase": f"phase_{i % 7}",
            "subgoals": [" ".join(rng.choice(WORDS, size=3))],
            "constraints": {f"c{j}": " ".join(rng.choice(WORDS, size=2)) for j in range(5)},
            "last_result": " ".join(rng.choice(WORDS, size=4)),
        }
        for i in range(args.queries // args.state_every + 1)
    ]
    mem.search("warm up", namespace=ns, k=10)
    mem.search("warm up", namespace=ns, k=10, state=states[0])
    plain, stated, encode = [], [], []
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        mem.search(q, namespace=ns, k=10)
        plain.append((time.perf_counter() - t0) * 1000)
        state = states[i // args.state_every]
        t0 = time.perf_counter()
        mem.search(q, namespace=ns, k=10, state=state)
        stated.append((time.perf_counter() - t0) * 1000)
    se = StateEncoder(mem.encoder)
    for state in states:
        t0 = time.perf_counter()
        se.encode(state)
        encode.append((time.perf_counter() - t0) * 1000)
    p = np.percentile
    print(f"records {args.records}, queries {args.queries}, state changes every {args.state_every} searches")
    print(f"search without state: p50 {p(plain, 50):.2f} ms, p95 {p(plain, 95):.2f} ms")
    print(f"search with state:    p50 {p(stated, 50):.2f} ms, p95 {p(stated, 95):.2f} ms")
    extra = np.array(stated) - np.array(plain)
    print(f"added by the state:   p50 {p(extra, 50):.2f} ms, p95 {p(extra, 95):.2f} ms")
    print(f"encoding a new state (cold, hashing encoder): p50 {p(encode, 50):.2f} ms, p95 {p(encode, 95):.2f} ms")


if __name__ == "__main__":
    main()

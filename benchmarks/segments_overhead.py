"""Search latency cost of context windows, paired on one synthetic store (HashingEncoder, so only
retain's own work is timed, not the embedding model), and the cost of summarising and compressing.

Run: ``python benchmarks/segments_overhead.py [--sessions 20 --turns 30 --queries 300]``.
Prints search p50/p95 (ms) without a window and with ``window=1``, and the time to summarise and
to compress one session.
"""

from __future__ import annotations

import argparse
import random
import time

from retain.encoders.basis import HashingEncoder
from retain.eval.metrics import latency_summary
from retain.ingest.draft import NewMemory
from retain.memory import Memory

WORDS = (
    "garden",
    "tomato",
    "flight",
    "hotel",
    "lisbon",
    "budget",
    "cat",
    "dog",
    "piano",
    "concert",
    "paint",
    "museum",
    "river",
    "hike",
    "camp",
    "recipe",
    "oven",
    "bread",
    "coffee",
    "tea",
    "book",
    "novel",
    "poem",
    "school",
    "exam",
    "teacher",
    "friend",
    "sister",
    "brother",
    "job",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(7)
    mem = Memory(encoder=HashingEncoder(384), state_scorer=False)
    seq = 0
    for s in range(args.sessions):
        items = []
        for _ in range(args.turns):
            items.append(
                NewMemory(
                    content=" ".join(rng.choice(WORDS) for _ in range(12)) + ".",
                    type="observation",
                    seq=seq,
                    segment=f"session_{s}",
                )
            )
            seq += 1
        mem.add_many(items, namespace="bench")
    queries = [" ".join(rng.choice(WORDS) for _ in range(5)) for _ in range(args.queries)]

    def timed(**kwargs: object) -> dict[str, float | None]:
        out = []
        for q in queries:
            t0 = time.perf_counter()
            mem.search(q, namespace="bench", k=10, **kwargs)  # type: ignore[arg-type]
            out.append((time.perf_counter() - t0) * 1000)
        return latency_summary(out)

    timed()  # warm-up (fusion load)
    base = timed()
    win = timed(window=1)
    print(f"{args.sessions} sessions x {args.turns} turns, {args.queries} queries (ms)")
    print(f"search:            p50 {base['p50']:.2f} p95 {base['p95']:.2f}")
    print(f"search, window=1:  p50 {win['p50']:.2f} p95 {win['p95']:.2f}")
    t0 = time.perf_counter()
    mem.summarize("bench", "session_0")
    t1 = time.perf_counter()
    mem.compress_segment("bench", "session_1")
    t2 = time.perf_counter()
    print(f"summarize one session {1000 * (t1 - t0):.1f} ms, compress one session {1000 * (t2 - t1):.1f} ms")


if __name__ == "__main__":
    main()

"""Timings of retain.retention.policies: exact knapsack at 2,000 items, incremental decisions at capacity 10,000.

Prints figures; asserts nothing. Run: ``.venv/bin/python benchmarks/bench_retention.py``.
Targets: exact knapsack (2,000 items) well under 200 ms; p95 incremental decision <= 5 ms.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from retain.retention.policies import IncrementalRetainer, RetentionProblem, solve


def percentiles(ms: list[float]) -> str:
    a = np.asarray(ms)
    return f"p50 {np.percentile(a, 50):7.2f} ms  p95 {np.percentile(a, 95):7.2f} ms  max {a.max():7.2f} ms"


def knapsack_problem(rng: np.random.Generator, n: int, *, quotas: bool) -> RetentionProblem:
    costs = rng.integers(10, 400, n).astype(float)  # tokens per record
    types = rng.choice(["fact", "goal", "plan_step", "observation", "chatter"], n).astype(object)
    utility = rng.beta(2, 5, n) * np.where(types == "plan_step", 0.3, 1.0)  # a quota that binds
    return RetentionProblem(
        costs=costs,
        utility=utility,
        mandatory=rng.random(n) < 0.05,
        budget=0.3 * costs.sum(),
        types=types,
        quotas={"goal": 150, "plan_step": n // 10} if quotas else None,
    )


def bench_knapsack(n: int, repeats: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for quotas in (False, True):
        times, exact, methods = [], 0, set()
        for _ in range(repeats):
            p = knapsack_problem(rng, n, quotas=quotas)
            t = time.perf_counter()
            result = solve(p, "knapsack")
            times.append(1000 * (time.perf_counter() - t))
            exact += result.exact
            methods.add(result.method)
        label = "with quotas" if quotas else "no quotas  "
        print(f"knapsack exact, n={n}, {label}: {percentiles(times)}  exact {exact}/{repeats} via {sorted(methods)}")
    p = knapsack_problem(rng, 50_000, quotas=True)
    t = time.perf_counter()
    result = solve(p, "knapsack")
    print(f"knapsack greedy fallback, n=50000: {1000 * (time.perf_counter() - t):.1f} ms  method={result.method}")


def bench_lookahead(n: int, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n // 10, dim))
    e = centres[rng.integers(0, centres.shape[0], n)] + 0.3 * rng.normal(size=(n, dim))
    p = RetentionProblem(
        costs=rng.integers(10, 400, n).astype(float),
        utility=rng.beta(2, 5, n),
        mandatory=rng.random(n) < 0.05,
        budget=0.3 * rng.integers(10, 400, n).sum(),
        embeddings=e.astype(np.float32),
    )
    t = time.perf_counter()
    result = solve(p, "lookahead")
    print(f"lookahead full solve, n={n}, d={dim}: {1000 * (time.perf_counter() - t):.1f} ms  kept {result.keep.sum()}")


def bench_incremental(capacity: int, decisions: int, dim: int, seed: int) -> None:
    for policy in ("fifo", "lru", "utility", "knapsack", "lookahead"):
        rng = np.random.default_rng(seed)
        retainer = IncrementalRetainer(policy, capacity, dim=dim)
        centres = rng.normal(size=(capacity // 20, dim))  # clusters of near-duplicates, as in real memories
        emb = centres[rng.integers(0, centres.shape[0], capacity + decisions)]
        emb = (emb + 0.5 * rng.normal(size=emb.shape)).astype(np.float32)
        vectors = list(emb) if policy == "lookahead" else [None] * emb.shape[0]
        utility = rng.random(capacity + decisions)
        t = time.perf_counter()
        for i in range(capacity):
            retainer.add(1.0, float(utility[i]), mandatory=i % 500 == 0, embedding=vectors[i])
        fill_s = time.perf_counter() - t
        times = []
        for i in range(capacity, capacity + decisions):
            if policy == "lru":
                kept = retainer.kept
                retainer.touch(int(kept[rng.integers(0, kept.size)]), float(i))
            t = time.perf_counter()
            retainer.add(1.0, float(utility[i]), embedding=vectors[i])
            times.append(1000 * (time.perf_counter() - t))
        assert retainer.kept.size == capacity
        print(f"incremental {policy:9s} at capacity {capacity}: {percentiles(times)}  (fill {fill_s:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000, help="items in the exact knapsack")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--capacity", type=int, default=10_000, help="records held by the incremental retainer")
    parser.add_argument("--decisions", type=int, default=2000, help="arrivals timed at capacity")
    parser.add_argument("--dim", type=int, default=384, help="embedding dimension (lookahead)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"cpus available: {len(os.sched_getaffinity(0))}")
    bench_knapsack(args.n, args.repeats, args.seed)
    bench_lookahead(args.n, args.dim, args.seed)
    bench_incremental(args.capacity, args.decisions, args.dim, args.seed)


if __name__ == "__main__":
    main()

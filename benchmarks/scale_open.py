"""A large SQLite store opened in a fresh process: the first default hybrid search after opening
(store and Memory construction included), then default hybrid and dense searches, peak resident memory,
and a one-thread numpy exact scan of a random matrix of the same shape as the reference measured in the
same run. The store is one ``retain bench scale --keep`` wrote (its corpus, queries, lookup encoder:
query embedding excluded).

    python benchmarks/scale_open.py --db /tmp/keep/scale-1000000.db [--n 1000000] [--queries 50]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from threadpoolctl import threadpool_limits

from retain.eval.store_scale import DIM, NAMESPACE, _LookupEncoder, _percentiles, peak_rss_mb, queries
from retain.memory import Memory
from retain.store.sqlite import SQLiteStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    texts, vecs = queries(args.n, args.queries + 1)
    start = time.perf_counter()
    store = SQLiteStore(args.db)
    mem = Memory(store=store, encoder=_LookupEncoder(dict(zip(texts, vecs, strict=True))))
    mem.search(texts[0], namespace=NAMESPACE, k=10)
    first = time.perf_counter() - start
    hybrid, dense = [], []
    for text, vec in zip(texts[1:], vecs[1:], strict=True):
        t = time.perf_counter()
        mem.search(text, namespace=NAMESPACE, k=10)
        hybrid.append(time.perf_counter() - t)
        t = time.perf_counter()
        store.search_vector(NAMESPACE, vec, limit=10)
        dense.append(time.perf_counter() - t)
    rss = peak_rss_mb()
    mem.close()
    matrix = np.random.default_rng(0).standard_normal((args.n, DIM), dtype=np.float32)
    exact = []
    with threadpool_limits(1):
        for q in vecs[1:]:
            t = time.perf_counter()
            np.argpartition(-(matrix @ q), 10)[:10]
            exact.append(time.perf_counter() - t)
    h, d, e = _percentiles(hybrid), _percentiles(dense), _percentiles(exact)
    print(
        f"records={args.n} first_search_s={first:.2f} hybrid_p50_ms={h[0]:.1f} hybrid_p95_ms={h[1]:.1f} "
        f"dense_p50_ms={d[0]:.2f} dense_p95_ms={d[1]:.2f} peak_rss_mb={rss:,.0f} numpy_exact_p50_ms={e[0]:.1f} "
        f"numpy_exact_p95_ms={e[1]:.1f} ratio_hybrid_p95={h[1] / e[1]:.2f} load={os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()

"""The SQLite store's HNSW build cost (usearch, int8, cosine) by setting, wall and CPU side by side: on
a shared host the wall time follows the load, the CPU time is the build's own cost.

    python benchmarks/hnsw_build.py [--n 50000] [--settings 2:128,1:128,2:64]

``--n`` vectors of ``retain bench scale``'s corpus (:func:`retain.eval.store_scale.corpus_vectors`) are
added in chunks of 20,000 (as the store's build does) for each ``threads:expansion_add`` setting
(connectivity 16); then recall@10 of 100 queries near stored vectors against the exact scan, the
graph's top 100 rescored by their float32 vectors (as the store's search does, ef_search 256).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from usearch.index import Index

from retain.eval.store_scale import corpus_vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--settings", default="2:128,1:128,2:64", help="threads:expansion_add, comma-separated")
    args = parser.parse_args()
    vectors = corpus_vectors(args.n)
    rng = np.random.default_rng(1)
    queries = vectors[rng.integers(0, args.n, 100)] + 0.02 * rng.standard_normal((100, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact = [set(np.argpartition(-(vectors @ q), 10)[:10].tolist()) for q in queries]
    for setting in args.settings.split(","):
        threads, expansion = (int(x) for x in setting.split(":"))
        index = Index(ndim=384, metric="cos", dtype="i8", connectivity=16, expansion_add=expansion)
        index.expansion_search = 256  # type: ignore[misc]  # settable at run time
        keys = np.arange(args.n, dtype=np.int64)
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, args.n, 20_000):
            index.add(keys[start : start + 20_000], vectors[start : start + 20_000], threads=threads)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        recall = []
        for q, want in zip(queries, exact, strict=True):
            found = np.asarray(index.search(q, 100).keys, dtype=np.int64)
            top = found[np.argsort(-(vectors[found] @ q))[:10]]
            recall.append(len(set(top.tolist()) & want) / 10)
        print(
            f"n={args.n} threads={threads} expansion_add={expansion} build_wall_s={wall:.1f} build_cpu_s={cpu:.1f} "
            f"recall@10={np.mean(recall):.3f} load={os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

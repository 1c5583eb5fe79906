"""Default hybrid search latency on one large SQLite or Postgres namespace, against a numpy exact scan of
the same vectors measured in the same run: a faster, targeted form of ``retain bench scale`` (its corpus,
queries and lookup encoder, :mod:`retain.eval.store_scale`) that builds the store once and reuses it.

    python benchmarks/hybrid_scale.py --db /tmp/scale100k.db [--n 100000] [--queries 100] [--profile]
    python benchmarks/hybrid_scale.py --db 'postgresql://...#schema' ...

``--db`` is a SQLite file, or a Postgres URL with ``#schema`` (the store's schema in that database). The
store is written (``Store.put`` in batches of 1,000, then its HNSW graph built) only when the file does
not exist yet (Postgres: when the namespace is empty). Then, in this process: ``--warm`` untimed
searches of other queries (near other records: the timed ones find nothing cached), ``--queries``
default hybrid searches (``Memory.search``, preset "default", k=10, query embedding excluded) and the
exact scan of the same query vectors (one BLAS thread); p50 / p95 ms of each and their ratio.
``--profile`` prints the top functions of a cProfile of the searches (cumulative time) instead.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

from retain.eval.store_scale import NAMESPACE, _LookupEncoder, _open, _percentiles, exact_reference, ingest, queries


def _empty(backend: str, location: str) -> bool:
    if backend == "sqlite":
        return not os.path.exists(location)
    store = _open(backend, location)
    store.setup()
    try:
        return store.count(NAMESPACE) == 0
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warm", type=int, default=50, help="untimed searches of other queries first")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    backend = "postgres" if args.db.startswith(("postgresql://", "postgres://")) else "sqlite"
    if _empty(backend, args.db):
        built = ingest(backend, args.db, args.n)
        print("built:", {k: round(v, 1) for k, v in built.items()}, flush=True)

    from retain.memory import Memory

    texts, vecs = queries(args.n, args.queries)
    warm_texts, warm_vecs = queries(args.n, args.warm, seed=12)  # other records: nothing timed is cached
    lookup = dict(zip(warm_texts, warm_vecs, strict=True)) | dict(zip(texts, vecs, strict=True))
    mem = Memory(store=_open(backend, args.db), encoder=_LookupEncoder(lookup))
    for text in warm_texts:
        mem.search(text, namespace=NAMESPACE, k=10)
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for text in texts:
            mem.search(text, namespace=NAMESPACE, k=10)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
        mem.close()
        return
    times = []
    for text in texts:
        t = time.perf_counter()
        mem.search(text, namespace=NAMESPACE, k=10)
        times.append(time.perf_counter() - t)
    mem.close()
    _, exact = exact_reference(args.n, args.queries)
    hybrid = _percentiles(times)
    print(
        f"records={args.n} queries={args.queries} hybrid_p50_ms={hybrid[0]:.2f} hybrid_p95_ms={hybrid[1]:.2f} "
        f"exact_p50_ms={exact[0]:.2f} exact_p95_ms={exact[1]:.2f} ratio_p95={hybrid[1] / exact[1]:.2f} "
        f"load={os.getloadavg()[0]:.1f} backend={backend}"
    )


if __name__ == "__main__":
    main()

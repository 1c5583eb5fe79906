"""Is the budget hard across processes? N processes add to one SQLite file under Budget(10, "fifo")
while this process samples the committed hot count; then the audit log is replayed.

Prints, for each process count: adds acknowledged and refused (WriteConflict after every attempt),
hot-count samples taken while the writers ran and the largest one, the hot count at the end, the
evictions of records the log already shows archived, evict rows without policy or scores, and
whether the audit chain verifies. The budget holds when the max sample is <= 10 and both counts are 0.

    python benchmarks/budget_processes.py [--procs 2 4 8] [--adds 120] [--capacity 10] [--min-samples 10000]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sqlite3
import tempfile
import time
from pathlib import Path

NS = "shared"


def _writer(path: str, worker: int, adds: int, capacity: int, start_at: float) -> tuple[int, int]:
    from retain import Budget, HashingEncoder, Memory, MemoryConfig
    from retain.errors import WriteConflict

    config = MemoryConfig(supersede=False, merge_paraphrases=False)
    mem = Memory(
        path, encoder=HashingEncoder(dim=64), config=config, budget=Budget(capacity, policy="fifo"), state_scorer=False
    )
    time.sleep(max(0.0, start_at - time.time()))  # every writer starts at once
    done = refused = 0
    for i in range(adds):
        try:
            mem.add(f"worker {worker} note {i}: parcel {worker * 10_000 + i} arrived", namespace=NS, type="fact")
            done += 1
        except WriteConflict:
            refused += 1
    mem.close()
    return done, refused


def _replay(path: str) -> tuple[int, int, int]:
    """(evictions of records already archived, evict rows without policy or scores, hot count at the end)."""
    conn = sqlite3.connect(path)
    tiers: dict[str, str] = {}
    archived_evictions = bare = 0
    import json

    for op, rid, policy, details in conn.execute(
        "SELECT op, record_id, policy, details FROM audit WHERE namespace = ? ORDER BY seq", (NS,)
    ):
        info = json.loads(details)
        if op == "add":
            tiers[rid] = info.get("tier", "dynamic")
        elif op == "restore":
            tiers[rid] = info.get("tier_after", "dynamic")
        elif op == "evict":
            if tiers.get(rid) == "archive":
                archived_evictions += 1
            if not policy or "utility" not in info or "capacity" not in info:
                bare += 1
            tiers[rid] = "archive"
    (hot,) = conn.execute(
        "SELECT count(*) FROM records WHERE namespace = ? AND superseded_by IS NULL AND tier IN ('core', 'dynamic')",
        (NS,),
    ).fetchone()
    conn.close()
    return archived_evictions, bare, int(hot)


def run(procs: int, adds: int, capacity: int, min_samples: int) -> None:
    from retain import HashingEncoder, Memory
    from retain.safety.audit import verify_store

    folder = tempfile.mkdtemp(prefix="retain-budget-")
    path = str(Path(folder) / "shared.db")
    Memory(path, encoder=HashingEncoder(dim=64), state_scorer=False).close()  # schema made once
    ctx = mp.get_context("spawn")
    with ctx.Pool(procs) as pool:
        start_at = time.time() + 3.0 + procs
        results = [pool.apply_async(_writer, (path, w, adds, capacity, start_at)) for w in range(procs)]
        reader = sqlite3.connect(path, timeout=30)
        time.sleep(max(0.0, start_at - time.time()))
        samples, biggest = 0, 0
        while not all(r.ready() for r in results) or samples < min_samples:
            (hot,) = reader.execute(
                "SELECT count(*) FROM records WHERE namespace = ? AND superseded_by IS NULL "
                "AND tier IN ('core', 'dynamic')",
                (NS,),
            ).fetchone()
            samples += 1
            biggest = max(biggest, int(hot))
        reader.close()
        counts = [r.get() for r in results]
    done = sum(c[0] for c in counts)
    refused = sum(c[1] for c in counts)
    archived, bare, final = _replay(path)
    mem = Memory(path, encoder=HashingEncoder(dim=64), state_scorer=False)
    ok = verify_store(mem.store).ok
    mem.close()
    print(
        f"procs={procs} adds acknowledged={done} refused={refused} samples={samples} max_hot={biggest} "
        f"final_hot={final} evictions_of_archived={archived} evict_rows_without_scores={bare} "
        f"audit_verify={'ok' if ok else 'FAILED'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--adds", type=int, default=120, help="adds per process")
    parser.add_argument("--capacity", type=int, default=10)
    parser.add_argument("--min-samples", type=int, default=10_000)
    args = parser.parse_args()
    for procs in args.procs:
        run(procs, args.adds, args.capacity, args.min_samples)


if __name__ == "__main__":
    main()

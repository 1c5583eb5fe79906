"""Audit-log verification: detection rate under fuzzed tampering, and verify time, at 10,000 entries.

Builds the log through a real SQLiteStore (so the hashes are the store's), then tampers with copies
of it: one changed field, one removed entry, two adjacent entries swapped (as table rows, and as
list items), one forged entry inserted (correctly hashed, later seqs renumbered). Each trial counts
as detected when the report is not ok, and as located when ``first_bad_seq`` names the tampered
entry. Also shows the two documented limits: a cut-off tail without the store's counter, and a
rewrite that re-hashed the rest of the log without a checkpoint.

Prints figures; asserts nothing. Run: ``.venv/bin/python benchmarks/audit_verify.py [--n 10000] [--trials 200]``.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from retain.safety.audit import VerifyReport, verify_chain, verify_store
from retain.store import GENESIS_HASH, AppendAudit, AuditEntry, audit_hash
from retain.store.sqlite import SQLiteStore

Entry = dict[str, Any]
HASHED = ("ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details")
FIELDS = ("seq", *HASHED, "prev_hash", "hash")


def build_store(path: Path, n: int, rng: random.Random) -> SQLiteStore:
    store = SQLiteStore(path)
    store.setup()
    ops = ["add", "update", "supersede", "delete", "evict", "archive"]
    for start in range(0, n, 500):
        batch = [
            AppendAudit(
                AuditEntry(
                    namespace=rng.choice(["agent-1", "trip-42", "用户-7"]),
                    op=rng.choice(ops),
                    record_id=f"{rng.getrandbits(64):016X}",
                    actor=rng.choice(["user", "agent", "policy:lru"]),
                    reason=rng.choice(["", "budget", "user asked"]),
                    policy=rng.choice([None, "lru", "utility"]),
                    details={"tokens": rng.randint(1, 500), "importance": round(rng.random(), 6), "tier": "dynamic"},
                )
            )
            for _ in range(min(500, n - start))
        ]
        store.batch(batch)
    return store


def mutated(value: Any, rng: random.Random) -> Any:
    if value is None:
        return "x"
    if isinstance(value, int):
        return value + rng.choice([-1, 1]) * rng.randint(1, 1000)
    if isinstance(value, float):
        return math.nextafter(value, rng.choice([-math.inf, math.inf]))
    if isinstance(value, str):
        if not value:
            return " "
        i = rng.randrange(len(value))
        return value[:i] + ("a" if value[i] != "a" else "b") + value[i + 1 :]
    if isinstance(value, dict):
        out = dict(value)
        key = rng.choice([*out, "extra"])
        out[key] = mutated(out.get(key), rng) if key in out else 1
        return out
    raise TypeError(f"no mutation for {value!r}")


def change(log: Sequence[Entry], rng: random.Random) -> tuple[list[Entry], int]:
    i, field = rng.randrange(len(log)), rng.choice(FIELDS)
    out = list(log)
    out[i] = {**log[i], field: mutated(log[i][field], rng)}
    return out, i + 1


def remove(log: Sequence[Entry], rng: random.Random) -> tuple[list[Entry], int]:
    i = rng.randrange(len(log))
    return [*log[:i], *log[i + 1 :]], i + 1


def swap_rows(log: Sequence[Entry], rng: random.Random) -> tuple[list[Entry], int]:
    i = rng.randrange(len(log) - 1)
    out = list(log)
    out[i], out[i + 1] = {**log[i + 1], "seq": log[i]["seq"]}, {**log[i], "seq": log[i + 1]["seq"]}
    return out, i + 1


def swap_entries(log: Sequence[Entry], rng: random.Random) -> tuple[list[Entry], int]:
    i = rng.randrange(len(log) - 1)
    out = list(log)
    out[i], out[i + 1] = log[i + 1], log[i]
    return out, i + 1


def insert(log: Sequence[Entry], rng: random.Random) -> tuple[list[Entry], int]:
    i = rng.randrange(len(log))
    prev = log[i - 1]["hash"] if i else GENESIS_HASH
    fields = {f: log[rng.randrange(len(log))][f] for f in HASHED} | {"reason": "forged"}
    forged = {"seq": i + 1, **fields, "prev_hash": prev, "hash": audit_hash(prev, fields)}
    return [*log[:i], forged, *({**e, "seq": e["seq"] + 1} for e in log[i:])], i + 1


def timed(fn: Callable[..., VerifyReport], *args: Any, **kwargs: Any) -> tuple[VerifyReport, float]:
    """The report and the wall time of the call (ms)."""
    start = time.perf_counter()
    report = fn(*args, **kwargs)
    return report, 1000 * (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="entries in the log")
    parser.add_argument("--trials", type=int, default=200, help="trials per kind of tampering")
    parser.add_argument("--seed", type=int, default=1729)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    n = args.n

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        store = build_store(Path(tmp) / "audit.db", n, rng)
        print(f"built {n:,} audit entries through SQLiteStore in {time.perf_counter() - start:.2f} s")
        store_ms = [timed(verify_store, store)[1] for _ in range(5)]
        log = store.audit_log()
        store.close()
    clean, _ = timed(verify_chain, log, last_seq=n)
    chain_ms = [timed(verify_chain, log, last_seq=n)[1] for _ in range(5)]
    print(f"clean log verifies: {clean.ok}")
    print(f"verify_store (raw read + verify): median {statistics.median(store_ms):.1f} ms")
    print(
        f"verify_chain (parsed entries):    median {statistics.median(chain_ms):.1f} ms "
        f"({1000 * statistics.median(chain_ms) / n:.1f} µs per entry)"
    )

    kinds: dict[str, Callable[[Sequence[Entry], random.Random], tuple[list[Entry], int]]] = {
        "change one field": change,
        "remove one entry": remove,
        "swap adjacent rows": swap_rows,
        "swap adjacent entries": swap_entries,
        "insert forged entry": insert,
    }
    print(f"\n{'tampering':<24} {'trials':>6} {'detected':>9} {'located':>8} {'verify ms (mean)':>17}")
    for label, tamper in kinds.items():
        detected = located = 0
        times = []
        for _ in range(args.trials):
            tampered, bad_seq = tamper(log, rng)
            report, ms = timed(verify_chain, tampered, last_seq=n)
            times.append(ms)
            detected += not report.ok
            located += report.first_bad_seq == bad_seq
        print(
            f"{label:<24} {args.trials:>6} {detected / args.trials:>9.1%} {located / args.trials:>8.1%} "
            f"{statistics.mean(times):>17.1f}"
        )

    print("\nlimits (see retain.safety.audit):")
    cut = log[:-3]
    print(
        f"  newest 3 entries removed: detected without counter {not verify_chain(cut).ok}, "
        f"with the store's counter {not verify_chain(cut, last_seq=n).ok}"
    )
    forged = [dict(e) for e in log]
    k = n // 2
    forged[k]["reason"] = "rewritten"
    for i in range(k, n):
        forged[i]["prev_hash"] = forged[i - 1]["hash"]
        forged[i]["hash"] = audit_hash(forged[i]["prev_hash"], {f: forged[i][f] for f in HASHED})
    checkpoint = {n: log[-1]["hash"]}
    print(
        f"  entry {k + 1} rewritten and the rest re-hashed: detected without checkpoint "
        f"{not verify_chain(forged, last_seq=n).ok}, with a checkpoint of the head "
        f"{not verify_chain(forged, checkpoints=checkpoint).ok}"
    )


if __name__ == "__main__":
    main()

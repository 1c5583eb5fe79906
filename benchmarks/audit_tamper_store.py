"""`retain audit verify` against tampering with the store file itself (not only the chain's rows):
append-only triggers swapped for same-named no-ops, an extra trigger that swallows new entries, the
log emptied (rows and counter) beside its records, a record's content edited in place, a record
inserted without an entry. Each trial tampers with a fresh copy of a store built through Memory
(random records, one update in three) and counts as detected when ``verify_store`` is not ok.
The chain's own tampering (row edits, deletions, swaps, insertions) is ``benchmarks/audit_verify.py``.

Prints figures; asserts nothing. Run: ``python benchmarks/audit_tamper_store.py [--trials 50] [--records 40]``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from retain import HashingEncoder, Memory
from retain.safety.audit import verify_store
from retain.store import SQLiteStore

WORDS = ["flight", "hotel", "budget", "window", "aisle", "Lisbon", "Berlin", "Friday", "meeting", "parcel", "train"]


def build(path: Path, records: int, rng: random.Random) -> None:
    with Memory(path, encoder=HashingEncoder(dim=64), state_scorer=False) as mem:
        ids = []
        for i in range(records):
            text = " ".join(rng.choice(WORDS) for _ in range(6)) + f" note {i}."
            ids.append(mem.add(text, namespace=rng.choice(["a", "b"]), type="fact"))
            if i % 3 == 2:
                rid = ids[rng.randrange(len(ids))]
                for ns in ("a", "b"):
                    try:
                        ids.append(mem.update(rid, f"revised note {i}", namespace=ns))
                    except Exception:  # not in this namespace, or already superseded
                        continue


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


DROP = ("DROP TRIGGER audit_no_update", "DROP TRIGGER audit_no_delete")
BODY = "BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END"
NOOP = (
    f"CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit WHEN 0 {BODY}",
    f"CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit WHEN 0 {BODY}",
)
GOOD = tuple(sql.replace(" WHEN 0", "") for sql in NOOP)


def trigger_swap(path: Path, rng: random.Random) -> None:
    _sql(path, *DROP, *NOOP)


def swallowing_trigger(path: Path, rng: random.Random) -> None:
    _sql(path, "CREATE TRIGGER audit_z BEFORE INSERT ON audit BEGIN SELECT RAISE(IGNORE); END")


def emptied_log(path: Path, rng: random.Random) -> None:
    _sql(path, *DROP, "DELETE FROM audit", "DELETE FROM sqlite_sequence WHERE name = 'audit'", *GOOD)


def record_edit(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    rowids = [r[0] for r in conn.execute("SELECT rowid FROM records")]
    target = rng.choice(rowids)
    conn.execute("UPDATE records SET content = content || ' (edited)' WHERE rowid = ?", (target,))
    conn.commit()
    conn.close()


def record_insert(path: Path, rng: random.Random) -> None:
    conn = sqlite3.connect(path)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(records)") if row[1] != "rowid"]
    forged = f"'01FORGED{rng.randrange(10**17):018d}'"
    picked = ", ".join(forged if c == "id" else c for c in columns)
    rowids = [r[0] for r in conn.execute("SELECT rowid FROM records")]
    conn.execute(
        f"INSERT INTO records ({', '.join(columns)}) SELECT {picked} FROM records WHERE rowid = ?",
        (rng.choice(rowids),),
    )
    conn.commit()
    conn.close()


KINDS: dict[str, Callable[[Path, random.Random], None]] = {
    "trigger swap (same-named no-ops)": trigger_swap,
    "extra trigger swallowing inserts": swallowing_trigger,
    "emptied log (rows and counter)": emptied_log,
    "record content edited in place": record_edit,
    "record inserted without an entry": record_insert,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1729)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="retain-tamper-"))
    clean = folder / "clean.db"
    build(clean, args.records, rng)
    store = SQLiteStore(clean)
    store.setup()
    baseline = verify_store(store)
    store.close()
    print(f"untampered store: ok={baseline.ok}, {baseline.entries} entries, {baseline.records} records")
    for name, tamper in KINDS.items():
        detected = 0
        for trial in range(args.trials):
            copy = folder / f"t{trial}.db"
            shutil.copy(clean, copy)
            tamper(copy, rng)
            store = SQLiteStore(copy)
            store.setup()
            detected += not verify_store(store).ok
            store.close()
            copy.unlink()
        print(f"{name:36s} detected {detected}/{args.trials} ({detected / args.trials:.0%})")


if __name__ == "__main__":
    main()

"""`retain audit verify` against tampering with the store file, unkeyed and keyed.

Two stores are built through Memory (random records, one update in three): one with the unkeyed
sha256 chain, one with ``MemoryConfig(audit_key=...)`` (HMAC-SHA256 chain). Each trial tampers with
a fresh copy, as someone with write access to the file but not the key would: a row's field edited
(left as is, or re-hashed with sha256), a middle row deleted, two rows' contents swapped, a
correctly hashed row inserted in the middle (later seqs renumbered), a correctly hashed row
appended at the end (counter bumped: the forged append), the append-only triggers swapped for
same-named no-ops, an extra trigger that swallows new entries, the log emptied (rows and counter)
beside its records, a record's content edited in place, a record inserted without an entry. Row
edits go around the triggers and put them back, so the triggers are not what gives them away.
A trial counts as detected when ``verify_store`` (with the key, for the keyed store) is not ok.

Prints figures; asserts nothing. Run: ``python benchmarks/audit_tamper_store.py [--trials 50] [--records 40]``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

from retain import HashingEncoder, Memory, MemoryConfig
from retain.safety.audit import verify_store
from retain.store import SQLiteStore, audit_hash

KEY = bytes(range(32))
AUDIT_COLUMNS = (
    "seq",
    "ts",
    "namespace",
    "op",
    "record_id",
    "actor",
    "reason",
    "policy",
    "details",
    "prev_hash",
    "hash",
)
HASHED = AUDIT_COLUMNS[1:9]

WORDS = ["flight", "hotel", "budget", "window", "aisle", "Lisbon", "Berlin", "Friday", "meeting", "parcel", "train"]


def build(path: Path, records: int, rng: random.Random, key: bytes | None) -> None:
    config = MemoryConfig(audit_key=key)
    with Memory(path, encoder=HashingEncoder(dim=64), config=config, state_scorer=False) as mem:
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


def _rows(conn: sqlite3.Connection) -> list[dict[str, object]]:
    return [
        dict(zip(AUDIT_COLUMNS, r, strict=True))
        for r in conn.execute(f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit ORDER BY seq")
    ]


def _sha(prev: object, row: dict[str, object]) -> str:
    fields = {k: row[k] for k in HASHED}
    fields["details"] = json.loads(str(row["details"]))
    return audit_hash(str(prev), fields)


def _around_triggers(path: Path, work: Callable[[sqlite3.Connection], None]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql in DROP:
            conn.execute(sql)
        work(conn)
        for sql in GOOD:
            conn.execute(sql)
    finally:
        conn.close()


def row_edit(path: Path, rng: random.Random, *, rehash: bool = False) -> None:
    def work(conn: sqlite3.Connection) -> None:
        row = rng.choice(_rows(conn))
        reason = f"{row['reason']} (edited)"
        conn.execute("UPDATE audit SET reason = ? WHERE seq = ?", (reason, row["seq"]))
        if rehash:
            row["reason"] = reason
            conn.execute("UPDATE audit SET hash = ? WHERE seq = ?", (_sha(row["prev_hash"], row), row["seq"]))

    _around_triggers(path, work)


def row_delete(path: Path, rng: random.Random) -> None:
    def work(conn: sqlite3.Connection) -> None:
        rows = _rows(conn)
        conn.execute("DELETE FROM audit WHERE seq = ?", (rng.choice(rows[:-1])["seq"],))

    _around_triggers(path, work)


def row_swap(path: Path, rng: random.Random) -> None:
    def work(conn: sqlite3.Connection) -> None:
        rows = _rows(conn)
        while True:
            a, b = rng.sample(rows, 2)
            if any(a[k] != b[k] for k in ("op", "record_id", "reason", "details")):
                break
        names = AUDIT_COLUMNS[2:]  # everything but seq and ts
        for row, other in ((a, b), (b, a)):
            assignments = ", ".join(f"{c} = ?" for c in names)
            conn.execute(f"UPDATE audit SET {assignments} WHERE seq = ?", (*(other[c] for c in names), row["seq"]))

    _around_triggers(path, work)


def _forged(prev_hash: str, like: dict[str, object], seq: int) -> tuple[object, ...]:
    row = dict(like, seq=seq, op="delete", reason="forged", actor="user", prev_hash=prev_hash)
    row["hash"] = _sha(prev_hash, row)
    return tuple(row[c] for c in AUDIT_COLUMNS)


def row_insert(path: Path, rng: random.Random) -> None:
    def work(conn: sqlite3.Connection) -> None:
        rows = _rows(conn)
        p = rng.randrange(1, len(rows))
        for row in reversed(rows[p:]):  # renumber the later rows, newest first
            conn.execute("UPDATE audit SET seq = seq + 1 WHERE seq = ?", (row["seq"],))
        marks = ", ".join("?" * len(AUDIT_COLUMNS))
        conn.execute(f"INSERT INTO audit VALUES ({marks})", _forged(str(rows[p - 1]["hash"]), rows[p], p + 1))
        conn.execute("UPDATE sqlite_sequence SET seq = seq + 1 WHERE name = 'audit'")

    _around_triggers(path, work)


def forged_append(path: Path, rng: random.Random) -> None:
    """A well-formed sha256 row chained onto the newest, the counter bumped to match."""

    def work(conn: sqlite3.Connection) -> None:
        rows = _rows(conn)
        last = rows[-1]
        marks = ", ".join("?" * len(AUDIT_COLUMNS))
        conn.execute(f"INSERT INTO audit VALUES ({marks})", _forged(str(last["hash"]), rng.choice(rows), len(rows) + 1))

    _around_triggers(path, work)


KINDS: dict[str, Callable[[Path, random.Random], None]] = {
    "single-row edit": row_edit,
    "single-row edit, re-hashed": lambda path, rng: row_edit(path, rng, rehash=True),
    "row deleted (not the newest)": row_delete,
    "two rows swapped": row_swap,
    "row inserted (hashed, renumbered)": row_insert,
    "forged append (hashed, counter bumped)": forged_append,
    "trigger swap (same-named no-ops)": trigger_swap,
    "extra trigger swallowing inserts": swallowing_trigger,
    "emptied log (rows and counter)": emptied_log,
    "record content edited in place": record_edit,
    "record inserted without an entry": record_insert,
}


def detection(
    clean: Path, tamper: Callable[[Path, random.Random], None], trials: int, rng: random.Random, key: bytes | None
) -> int:
    detected = 0
    for trial in range(trials):
        copy = clean.with_name(f"t{trial}.db")
        shutil.copy(clean, copy)
        tamper(copy, rng)
        store = SQLiteStore(copy)
        store.setup()
        detected += not verify_store(store, key=key).ok
        store.close()
        copy.unlink()
    return detected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1729)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="retain-tamper-"))
    stores = {"unkeyed": (folder / "unkeyed" / "clean.db", None), "keyed": (folder / "keyed" / "clean.db", KEY)}
    for clean, key in stores.values():
        clean.parent.mkdir()
        build(clean, args.records, random.Random(args.seed), key)
        store = SQLiteStore(clean)
        store.setup()
        baseline = verify_store(store, key=key)
        store.close()
        mode = "keyed (verified with the key)" if key else "unkeyed"
        print(f"untampered {mode} store: ok={baseline.ok}, {baseline.entries} entries, {baseline.records} records")
    print(f"{'tampering':40s} {'unkeyed':>16s} {'keyed':>16s}")
    for name, tamper in KINDS.items():
        cells = []
        for clean, key in stores.values():
            found = detection(clean, tamper, args.trials, rng, key)
            cells.append(f"{found}/{args.trials} ({found / args.trials:.0%})")
        print(f"{name:40s} {cells[0]:>16s} {cells[1]:>16s}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

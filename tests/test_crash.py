"""Crashes: a torn audit entry is found and located; a WAL cut mid-frame recovers to the last commit."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from retain import HashingEncoder, Memory
from retain.cli.app import app
from retain.safety.audit import verify_store

NS = "crash"
runner = CliRunner()


def state(mem: Memory) -> list[tuple[str, str, str, str | None]]:
    return [
        (r.id, r.content, r.tier.value, r.superseded_by) for r in mem.records(namespace=NS, include_superseded=True)
    ]


def test_torn_last_audit_entry_is_located_and_the_store_opens_intact(tmp_path: Path) -> None:
    db = tmp_path / "torn.db"
    with Memory(db, encoder=HashingEncoder(64)) as mem:
        first = mem.add("The ferry leaves at 07:40.", namespace=NS)
        mem.update(first, "The ferry leaves at 08:10.", namespace=NS)
        mem.add("Cabin 14 is booked.", namespace=NS)
        before = state(mem)
        n = len(mem.store.audit_log())
    raw = sqlite3.connect(db)  # the crash: the last entry's payload holds only a prefix of itself
    (details,) = raw.execute("SELECT details FROM audit WHERE seq = ?", (n,)).fetchone()
    raw.execute("DROP TRIGGER audit_no_update")
    raw.execute("UPDATE audit SET details = ? WHERE seq = ?", (details[: len(details) // 2], n))
    raw.commit()
    raw.close()

    result = runner.invoke(app, ["audit", "verify", "--db", str(db)])
    assert result.exit_code == 1
    assert f"first untrusted entry: {n}" in result.stdout
    assert f"last entry ({n}) truncated / unreadable JSON in details" in result.stdout

    with Memory(db, encoder=HashingEncoder(64)) as mem:
        assert state(mem) == before
        assert mem.search("cabin booked", namespace=NS, k=1)[0].record.content == "Cabin 14 is booked."
        report = verify_store(mem.store)
    assert report.first_bad_seq == n and report.entries == n


def test_wal_cut_mid_frame_recovers_to_the_last_commit(tmp_path: Path) -> None:
    db = tmp_path / "wal.db"
    crashed = tmp_path / "crashed.db"
    mem = Memory(db, encoder=HashingEncoder(64))
    try:
        mem.add_many([{"content": f"Committed note {i} about the ferry."} for i in range(5)], namespace=NS)
        kept = state(mem)
        wal = Path(f"{db}-wal")
        size_before = wal.stat().st_size
        mem.add_many([{"content": f"Lost note {i}, its commit never finished."} for i in range(5)], namespace=NS)
        size_after = wal.stat().st_size
        assert size_after > size_before  # the second commit is only in the WAL
        shutil.copyfile(db, crashed)  # the files as a power cut leaves them (no checkpoint yet)
        shutil.copyfile(wal, f"{crashed}-wal")
    finally:
        mem.close()
    page = sqlite3.connect(crashed).execute("PRAGMA page_size").fetchone()[0]
    cut = size_before + (size_after - size_before) // 2
    if (cut - 32) % (24 + page) == 0:  # never on a frame boundary: tear a frame
        cut += 11
    with open(f"{crashed}-wal", "r+b") as handle:
        handle.truncate(cut)

    with Memory(crashed, encoder=HashingEncoder(64)) as again:
        assert state(again) == kept  # the torn transaction is gone, all of it; the committed one is whole
        assert len(kept) == 5
        hits = again.search("lost note commit never finished", namespace=NS, k=10)
        assert hits and all(h.record.content.startswith("Committed") for h in hits)  # indexes agree
        report = verify_store(again.store)
        assert report.ok and report.entries == len(kept)  # one "add" entry per committed record
        again.add("Written after recovery.", namespace=NS)
        assert verify_store(again.store).ok

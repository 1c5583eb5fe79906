"""The keyed audit chain (issue 21, point 3): HMAC-SHA256 under a key kept outside the database.

Each tampering kind of ``benchmarks/audit_tamper_store.py`` is applied to a small store built
through Memory, unkeyed and keyed, and must be found; a forged append must be found in keyed mode
(and, the documented limit, is not in unkeyed mode). Both backends share the chain code: the keyed
chain is also written and verified on Postgres."""

from __future__ import annotations

import random
import shutil
import sqlite3
import uuid
from pathlib import Path

import pytest
from audit_tamper_store import KINDS, build, forged_append
from typer.testing import CliRunner

from postgres_server import postgres_url
from retain import HashingEncoder, Memory, MemoryConfig
from retain.cli.app import app
from retain.errors import InvalidInput
from retain.safety.audit import verify_chain, verify_store
from retain.safety.audit_key import read_key_file, write_key_file
from retain.store import KEYED_PREFIX, AppendAudit, AuditEntry, SQLiteStore
from retain.store.postgres import PostgresStore

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("keyed")
    out = {}
    for mode, key in (("unkeyed", None), ("keyed", KEY)):
        (folder / mode).mkdir()
        out[mode] = folder / mode / "clean.db"
        build(out[mode], 12, random.Random(7), key)
    return out


def _verify(path: Path, key: bytes | None):  # type: ignore[no-untyped-def]
    store = SQLiteStore(path)
    store.setup()
    try:
        return verify_store(store, key=key)
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["unkeyed", "keyed"])
def test_untampered_store_verifies(built: dict[str, Path], mode: str) -> None:
    report = _verify(built[mode], KEY if mode == "keyed" else None)
    assert report.ok, report.problems
    assert report.entries > 12
    assert report.keyed == (report.entries if mode == "keyed" else 0)


@pytest.mark.parametrize("kind", [k for k in KINDS if not k.startswith("forged append")])
@pytest.mark.parametrize("mode", ["unkeyed", "keyed"])
def test_every_tampering_is_found(built: dict[str, Path], tmp_path: Path, mode: str, kind: str) -> None:
    for seed in range(3):
        copy = tmp_path / f"{seed}.db"
        shutil.copy(built[mode], copy)
        KINDS[kind](copy, random.Random(seed))
        assert not _verify(copy, KEY if mode == "keyed" else None).ok, f"{kind} (seed {seed}) not found"


def test_forged_append_is_found_only_with_the_key(built: dict[str, Path], tmp_path: Path) -> None:
    for mode, key in (("unkeyed", None), ("keyed", KEY)):
        copy = tmp_path / f"{mode}.db"
        shutil.copy(built[mode], copy)
        forged_append(copy, random.Random(0))
        report = _verify(copy, key)
        if key is None:  # the documented limit of an unkeyed chain: sha256 is anyone's to compute
            assert report.ok
        else:
            assert not report.ok
            assert any("written without the key: forged" in p for p in report.problems)
            assert report.first_bad_seq == report.entries


def test_keyed_entries_need_the_key_and_the_right_key(built: dict[str, Path]) -> None:
    without = _verify(built["keyed"], None)
    assert not without.ok
    assert any("can be checked only with the key" in p for p in without.problems)
    wrong = _verify(built["keyed"], OTHER_KEY)
    assert not wrong.ok
    assert any("HMAC mismatch" in p for p in wrong.problems)
    assert wrong.first_bad_seq == 1


def test_an_unkeyed_log_fails_a_keyed_verify(built: dict[str, Path]) -> None:
    report = _verify(built["unkeyed"], KEY)
    assert not report.ok
    assert any("no entry is keyed" in p for p in report.problems)


def test_key_set_later_anchors_the_unkeyed_prefix(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, encoder=HashingEncoder(dim=32), state_scorer=False) as mem:
        mem.add("The parcel arrives on Friday.", namespace="a")
    with Memory(path, encoder=HashingEncoder(dim=32), state_scorer=False, config=MemoryConfig(audit_key=KEY)) as mem:
        mem.add("The train leaves at nine.", namespace="a")
        report = mem.verify_audit()  # the config's key is used
        assert report.ok, report.problems
        assert 0 < report.keyed < report.entries
        entries = mem.audit_entries()
    # an unkeyed entry after the first keyed one was written without the key
    store = SQLiteStore(path)
    store.setup()
    store.batch([AppendAudit(AuditEntry("a", "delete", entries[0]["record_id"]))])
    report = verify_store(store, key=KEY)
    store.close()
    assert not report.ok
    assert report.first_bad_seq == len(entries) + 1
    # rewriting the unkeyed prefix breaks the link the first keyed entry's HMAC covers
    rewritten = [dict(e) for e in entries]
    rewritten[0]["reason"] = "rewritten"
    assert not verify_chain(rewritten, key=KEY).ok
    assert verify_chain(entries, key=KEY).ok


def test_keyed_chain_on_postgres() -> None:
    store = PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}")
    store.setup()
    try:
        store.audit_key = KEY
        store.batch([AppendAudit(AuditEntry("a", "add", f"r{i}", details={"i": i})) for i in range(3)])
        store.audit_key = None
        assert verify_store(store, key=KEY).ok
        assert all(e["hash"].startswith(KEYED_PREFIX) for e in store.audit_log())
        store.batch([AppendAudit(AuditEntry("a", "delete", "r0"))])  # written without the key
        report = verify_store(store, key=KEY)
        assert not report.ok
        assert report.first_bad_seq == 4
        assert not verify_store(store).ok  # keyed entries cannot be checked without the key
    finally:
        store.close()


def test_key_file_round_trip_and_bad_keys(tmp_path: Path) -> None:
    path = tmp_path / "audit.key"
    key = write_key_file(path)
    assert read_key_file(path) == key and len(key) == 32
    assert path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(InvalidInput, match="exists already"):
        write_key_file(path)
    (tmp_path / "short.key").write_bytes(b"short")
    with pytest.raises(InvalidInput, match="at least 16 bytes"):
        read_key_file(tmp_path / "short.key")
    with pytest.raises(InvalidInput, match="cannot be read"):
        read_key_file(tmp_path / "absent.key")
    with pytest.raises(InvalidInput, match="must be bytes"):
        MemoryConfig(audit_key="a string key that is long")  # type: ignore[arg-type]
    assert KEY.hex() not in repr(MemoryConfig(audit_key=KEY)) and str(KEY) not in repr(MemoryConfig(audit_key=KEY))


def test_cli_verify_with_key_file(built: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    key_file = tmp_path / "k"
    key_file.write_text(KEY.hex())
    copy = tmp_path / "c.db"
    shutil.copy(built["keyed"], copy)
    ok = runner.invoke(app, ["audit", "verify", "--db", str(copy), "--key-file", str(key_file)])
    assert ok.exit_code == 0, ok.output
    assert "keyed entries, HMAC checked with the key" in ok.output
    assert runner.invoke(app, ["audit", "verify", "--db", str(copy)]).exit_code == 1
    forged_append(copy, random.Random(1))
    bad = runner.invoke(app, ["audit", "verify", "--db", str(copy), "--key-file", str(key_file)])
    assert bad.exit_code == 1 and "forged" in bad.output
    made = runner.invoke(app, ["audit", "keygen", str(tmp_path / "new.key")])
    assert made.exit_code == 0 and len(read_key_file(tmp_path / "new.key")) == 32
    assert runner.invoke(app, ["audit", "keygen", str(tmp_path / "new.key")]).exit_code != 0


def test_tamper_helpers_leave_the_triggers_in_place(built: dict[str, Path], tmp_path: Path) -> None:
    """The row edits go around the append-only triggers and put them back, so a row edit is found
    by the chain, not by a missing trigger."""
    copy = tmp_path / "c.db"
    shutil.copy(built["unkeyed"], copy)
    KINDS["single-row edit"](copy, random.Random(0))
    report = _verify(copy, None)
    assert not any("trigger" in p for p in report.problems)
    conn = sqlite3.connect(copy)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit")
    conn.close()

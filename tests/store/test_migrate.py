"""retain.store.migrate: a whole store copied SQLite -> Postgres -> SQLite keeps every record, edge,
provenance and audit entry (hashes included), and the target verifies; refused targets get nothing."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Any

import pytest

from postgres_server import postgres_url
from retain import HashingEncoder, Memory
from retain.config import MemoryConfig
from retain.errors import EncoderMismatch, InvalidInput, StoreUnavailable
from retain.retention.budget import Budget
from retain.safety.audit import verify_store
from retain.store import ALL_RECORDS, ListProvenance, SQLiteStore, Store
from retain.store.migrate import check_chain, migrate
from retain.store.postgres import PostgresStore

KEY = b"k" * 32


def _postgres() -> PostgresStore:
    store = PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}")
    store.setup()
    return store


def _sqlite(path: Path) -> SQLiteStore:
    store = SQLiteStore(path)
    store.setup()
    return store


def _fill(path: Path, config: MemoryConfig | None = None) -> None:
    """Two namespaces: archived (budget), pinned, superseded and deleted records, metadata, an edge,
    a packed context's provenance."""
    config = config or MemoryConfig()
    with Memory(path, encoder=HashingEncoder(64), budget=Budget(4, policy="fifo"), config=config) as mem:
        ids = [mem.add(f"note {i}: the train leaves at {i + 7} o'clock", namespace="trip") for i in range(7)]
        mem.add("Never book flights before 9am.", namespace="trip", pinned=True, metadata={"src": "chat", "n": 3})
        mem.update(ids[-1], "note 6: the train leaves at 14 o'clock", namespace="trip", reason="changed")
        mem.link(ids[-2], ids[-3], "supports", namespace="trip")
        mem.delete(ids[-4], namespace="trip")
        mem.add("Chloé prefers the window seat.", namespace="ünïcode")
        mem.context("when does the train leave", namespace="trip", budget_tokens=200)


def _records(store: Store) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for ns in store.namespaces():
        rows = []
        for rec in store.list_records(ns, ALL_RECORDS):
            row = dataclasses.asdict(rec)
            row["embedding"] = None if rec.embedding is None else rec.embedding.tobytes()
            rows.append(row)
        out[ns] = rows
    return out


def _everything(store: Store) -> tuple[Any, ...]:
    edges = {ns: store.edges(ns) for ns in store.namespaces()}
    provenance = store.batch([ListProvenance()])[0]
    meta = (store.get_meta("encoder_name"), store.get_meta("encoder_dim"))
    return _records(store), edges, provenance, store.audit_log(), meta


def test_sqlite_to_postgres_and_back_keeps_everything_and_verifies(tmp_path: Path) -> None:
    _fill(tmp_path / "a.db")
    source, pg, back = _sqlite(tmp_path / "a.db"), _postgres(), _sqlite(tmp_path / "b.db")
    want = _everything(source)
    assert {t for rows in want[0].values() for t in (r["tier"] for r in rows)} >= {"archive", "core", "dynamic"}
    assert any(r["superseded_by"] for r in want[0]["trip"]) and want[1]["trip"] and want[2]
    report = migrate(source, pg, chunk=3)
    assert (
        report.verbatim
        and report.audit_entries == len(want[3])
        and report.records == {ns: len(rows) for ns, rows in want[0].items()}
    )
    assert _everything(pg) == want
    assert verify_store(pg).ok and verify_store(pg).head_hash == verify_store(source).head_hash
    migrate(pg, back)
    assert _everything(back) == want
    assert verify_store(back).ok
    with Memory(store=back, encoder=HashingEncoder(64)) as mem:  # the copy serves searches
        assert "Chloé" in mem.search("window seat", namespace="ünïcode", k=1)[0].record.content
    for store in (source, pg):
        store.close()


def test_a_target_holding_other_namespaces_gets_the_chain_rechained(tmp_path: Path) -> None:
    _fill(tmp_path / "a.db")
    target = _postgres()
    with Memory(store=target, encoder=HashingEncoder(64)) as mem:
        mem.add("another tenant's note", namespace="other")
        source = _sqlite(tmp_path / "a.db")
        report = migrate(source, target)
        assert not report.verbatim
        assert verify_store(target).ok
        assert _records(target)["trip"] == _records(source)["trip"]
        copied = [(e["ts"], e["op"], e["record_id"]) for e in target.audit_log() if e["namespace"] != "other"]
        assert copied == [(e["ts"], e["op"], e["record_id"]) for e in source.audit_log()]
    source.close()


def test_a_non_empty_target_namespace_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    _fill(tmp_path / "a.db")
    with Memory(tmp_path / "b.db", encoder=HashingEncoder(64)) as mem:
        mem.add("already here", namespace="trip")
    source, target = _sqlite(tmp_path / "a.db"), _sqlite(tmp_path / "b.db")
    before = _everything(target)
    with pytest.raises(InvalidInput, match="'trip' already holds 1 records"):
        migrate(source, target)
    assert _everything(target) == before
    assert "ünïcode" not in target.namespaces()


def test_another_encoder_dimension_is_refused_on_both_backends(tmp_path: Path) -> None:
    _fill(tmp_path / "a.db")
    source = _sqlite(tmp_path / "a.db")
    for target in (_postgres(), _sqlite(tmp_path / "c.db")):
        target.set_meta("encoder_name", "hashing-32")
        target.set_meta("encoder_dim", "32")
        with pytest.raises(EncoderMismatch, match="32 dims"):
            migrate(source, target)
        assert target.namespaces() == [] and target.audit_log() == []
        target.close()


def test_a_tampered_source_chain_and_a_keyed_chain_without_its_key_are_refused(tmp_path: Path) -> None:
    _fill(tmp_path / "a.db", MemoryConfig(audit_key=KEY))
    source, target = _sqlite(tmp_path / "a.db"), _sqlite(tmp_path / "b.db")
    entries = source.audit_log()
    check_chain(entries, KEY, "source")
    tampered = [*entries[:2], {**entries[2], "reason": "forged"}, *entries[3:]]
    with pytest.raises(InvalidInput, match="does not verify at entry 3"):
        check_chain(tampered, KEY, "source")
    with pytest.raises(InvalidInput, match="keyed"):
        migrate(source, target)
    assert target.namespaces() == []
    migrate(source, target, key=KEY)
    assert verify_store(target, key=KEY).ok and verify_store(target, key=KEY).keyed == len(entries)


class _CutOff(Store):
    """A store that forwards to ``inner`` and breaks after ``writes`` write batches."""

    def __init__(self, inner: Store, writes: int) -> None:
        self.inner, self.left = inner, writes

    def batch(self, ops: Any) -> list[Any]:
        if any(type(op).__name__.startswith(("Put", "Append")) for op in ops):
            if self.left == 0:
                raise StoreUnavailable("cut off")
            self.left -= 1
        return self.inner.batch(ops)

    def setup(self) -> None: ...
    def get_meta(self, key: str) -> str | None:
        return self.inner.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.inner.set_meta(key, value)

    def close(self) -> None: ...

    @property
    def location(self) -> str:
        return self.inner.location


@pytest.mark.parametrize("writes", [2, 6, 12])  # in the records, the edges, the audit log
def test_a_copy_cut_off_is_refused_again_and_carried_on_with_resume(tmp_path: Path, writes: int) -> None:
    _fill(tmp_path / "a.db")
    source, target = _sqlite(tmp_path / "a.db"), _postgres()
    with pytest.raises(StoreUnavailable):
        migrate(source, _CutOff(target, writes), chunk=2)
    with pytest.raises(InvalidInput, match="--resume"):
        migrate(source, target)
    migrate(source, target, resume=True, chunk=2)
    assert _everything(target) == _everything(source)
    assert verify_store(target).ok
    again = migrate(source, target, resume=True)  # a finished copy resumed: nothing more to write
    assert (sum(again.records.values()), again.provenance, again.audit_entries) == (0, 0, 0)
    assert _everything(target) == _everything(source)

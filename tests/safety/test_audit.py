"""Audit verification and snapshots: tampering of every kind is found and located; diffs are exact.

The fuzzed logs are built here with the store's own ``audit_hash`` (not with retain.safety.audit), so
the verifier is checked against the chain the store writes; the SQLite tests then tamper with a
real store file by raw SQL.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from retain import HashingEncoder, Memory, Tier
from retain.cli.audit import register
from retain.errors import InvalidInput
from retain.safety.audit import (
    MAX_PROBLEMS,
    Snapshot,
    VerifyReport,
    diff,
    read_audit_raw,
    snapshot,
    verify_chain,
    verify_store,
)
from retain.store import GENESIS_HASH, SQLiteStore, Store, audit_hash

N = 10_000
SEED = 1729
Entry = dict[str, Any]
HASHED = ("ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details")
FIELDS = ("seq", *HASHED, "prev_hash", "hash")


# --- a synthetic chain, built with the store's hash -------------------------------------------


def forged_fields(rng: random.Random, ts: int) -> dict[str, Any]:
    return {
        "ts": ts,
        "namespace": rng.choice(["agent-1", "trip-42", "用户-7", "ns with space"]),
        "op": rng.choice(["add", "update", "supersede", "delete", "evict", "archive"]),
        "record_id": rng.choice([None, f"{rng.getrandbits(64):016X}"]),
        "actor": rng.choice(["user", "agent", "system", "policy:lru"]),
        "reason": rng.choice(["", "budget", "user asked", "Änderung ✓"]),
        "policy": rng.choice([None, "lru", "utility"]),
        "details": {
            "tokens": rng.randint(1, 500),
            "importance": round(rng.random(), 6),
            "tier": rng.choice(["core", "dynamic", "archive"]),
        },
    }


def build_chain(n: int, seed: int = SEED) -> list[Entry]:
    """``n`` entries with seq 1..n, each hashed over its predecessor's hash like the store does."""
    rng = random.Random(seed)
    prev, ts, out = GENESIS_HASH, 1_700_000_000_000_000, []
    for seq in range(1, n + 1):
        ts += rng.randint(1, 5_000_000)
        fields = forged_fields(rng, ts)
        digest = audit_hash(prev, fields)
        out.append({"seq": seq, **fields, "prev_hash": prev, "hash": digest})
        prev = digest
    return out


@pytest.fixture(scope="module")
def chain() -> list[Entry]:
    return build_chain(N)


def mutated(value: Any, rng: random.Random) -> Any:
    """A different value of the same kind."""
    if value is None:
        return "x"
    if isinstance(value, int):
        return value + rng.choice([-1, 1]) * rng.randint(1, 1000)
    if isinstance(value, float):  # the smallest possible change
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
    raise AssertionError(f"no mutation for {value!r}")


def change(log: Sequence[Entry], i: int, field: str, rng: random.Random) -> list[Entry]:
    out = list(log)
    out[i] = {**log[i], field: mutated(log[i][field], rng)}
    assert out[i][field] != log[i][field]
    return out


def remove(log: Sequence[Entry], i: int) -> list[Entry]:
    return [*log[:i], *log[i + 1 :]]


def swap_rows(log: Sequence[Entry], i: int) -> list[Entry]:
    """Entries i and i+1 trade places; seq stays with the position (a table keyed by seq)."""
    out = list(log)
    out[i] = {**log[i + 1], "seq": log[i]["seq"]}
    out[i + 1] = {**log[i], "seq": log[i + 1]["seq"]}
    return out


def swap_entries(log: Sequence[Entry], i: int) -> list[Entry]:
    """Entries i and i+1 trade places, seq included (a list read out of order)."""
    out = list(log)
    out[i], out[i + 1] = log[i + 1], log[i]
    return out


def insert(log: Sequence[Entry], i: int, rng: random.Random) -> list[Entry]:
    """A forged entry before position i, correctly hashed onto its predecessor, later seqs renumbered:
    the strongest insertion short of re-hashing the rest of the log."""
    prev = log[i - 1]["hash"] if i else GENESIS_HASH
    fields = forged_fields(rng, log[i]["ts"])
    forged = {"seq": i + 1, **fields, "prev_hash": prev, "hash": audit_hash(prev, fields)}
    return [*log[:i], forged, *({**e, "seq": e["seq"] + 1} for e in log[i:])]


def check(report: VerifyReport, expected_first_bad: int, what: str) -> str | None:
    """None when the tampering was found and located, else a description of the miss."""
    if report.ok:
        return f"{what}: not detected"
    if report.first_bad_seq != expected_first_bad:
        return f"{what}: first_bad_seq {report.first_bad_seq}, expected {expected_first_bad}: {report.problems}"
    return None


# --- pure chain -------------------------------------------------------------------------------


def test_clean_chain_verifies(chain: list[Entry]) -> None:
    report = verify_chain(chain, last_seq=N)
    assert report == VerifyReport(
        ok=True, entries=N, first_bad_seq=None, problems=[], head_seq=N, head_hash=chain[-1]["hash"]
    )
    assert verify_chain([]).ok
    assert verify_chain([], last_seq=0).ok


def test_details_as_raw_json_text_verify_like_parsed(chain: list[Entry]) -> None:
    raw = [{**e, "details": json.dumps(e["details"], ensure_ascii=False, sort_keys=True)} for e in chain[:500]]
    assert verify_chain(raw).ok


def test_every_single_field_change_is_detected_and_located(chain: list[Entry]) -> None:
    rng = random.Random(SEED)
    misses = []
    for _ in range(200):
        i, field = rng.randrange(N), rng.choice(FIELDS)
        report = verify_chain(change(chain, i, field, rng), last_seq=N)
        misses.append(check(report, i + 1, f"change {field} of entry {i + 1}"))
    assert [m for m in misses if m] == []


def positions(rng: random.Random, stop: int, k: int = 10) -> list[int]:
    """The edges and k random positions in [0, stop)."""
    return sorted({0, 1, stop - 2, stop - 1, *rng.sample(range(stop), k)})


def test_every_removal_is_detected_and_located(chain: list[Entry]) -> None:
    rng = random.Random(SEED + 1)
    misses = [check(verify_chain(remove(chain, i), last_seq=N), i + 1, f"remove {i + 1}") for i in positions(rng, N)]
    assert [m for m in misses if m] == []


def test_every_adjacent_swap_is_detected_and_located(chain: list[Entry]) -> None:
    rng = random.Random(SEED + 2)
    misses = []
    for i in positions(rng, N - 1):
        misses.append(check(verify_chain(swap_rows(chain, i), last_seq=N), i + 1, f"swap rows {i + 1}/{i + 2}"))
        misses.append(check(verify_chain(swap_entries(chain, i), last_seq=N), i + 1, f"swap entries {i + 1}/{i + 2}"))
    assert [m for m in misses if m] == []


def test_every_insertion_is_detected_and_located(chain: list[Entry]) -> None:
    rng = random.Random(SEED + 3)
    misses = []
    for i in positions(rng, N):
        tampered = insert(chain, i, rng)
        misses.append(check(verify_chain(tampered, last_seq=N), i + 1, f"insert before {i + 1}"))
        misses.append(check(verify_chain(tampered), i + 1, f"insert before {i + 1}, no counter"))
    assert [m for m in misses if m] == []


def test_every_position_of_a_short_chain() -> None:
    """Exhaustive over every position (and every field) of a 100-entry chain."""
    n, rng = 100, random.Random(SEED + 4)
    log = build_chain(n, seed=SEED + 4)
    misses = []
    for i in range(n):
        for field in FIELDS:
            misses.append(check(verify_chain(change(log, i, field, rng), last_seq=n), i + 1, f"{field}@{i + 1}"))
        misses.append(check(verify_chain(remove(log, i), last_seq=n), i + 1, f"remove {i + 1}"))
        misses.append(check(verify_chain(insert(log, i, rng), last_seq=n), i + 1, f"insert {i + 1}"))
        if i < n - 1:
            misses.append(check(verify_chain(swap_rows(log, i), last_seq=n), i + 1, f"swap rows {i + 1}"))
            misses.append(check(verify_chain(swap_entries(log, i), last_seq=n), i + 1, f"swap entries {i + 1}"))
    assert [m for m in misses if m] == []


def test_problem_messages_name_the_entry() -> None:
    log = build_chain(30)
    assert verify_chain(change(log, 16, "reason", random.Random(0))).problems == ["entry 17: hash mismatch (changed)"]
    assert verify_chain(remove(log, 16)).problems == [
        "entry 17 missing (gap in sequence)",
        "entry 18: prev_hash does not match entry 16 (changed, reordered or removed)",
    ]
    assert verify_chain([*log[:10], *log[13:]]).problems[0] == "entries 11-13 missing (gap in sequence)"
    swapped = verify_chain(swap_rows(log, 8))
    assert swapped.first_bad_seq == 9
    assert (
        swapped.problems[0]
        == "entry 9: prev_hash does not match entry 8; it points to entry 10 (inserted or reordered)"
    )
    assert verify_chain(log[:-2], last_seq=30).problems == [
        "entries 29-30 missing at the end of the log (the store's counter is at 30)"
    ]
    truncated = [*log[:-1], {**log[-1], "details": '{"tokens": 1'}]
    report = verify_chain(truncated)
    assert report.problems == ["last entry (30) truncated / unreadable JSON in details"]
    assert report.first_bad_seq == 30


def test_removing_the_newest_entries_needs_the_counter(chain: list[Entry]) -> None:
    """A chain cut short is still a valid chain: only a counter kept outside the rows shows the cut."""
    cut = chain[:-3]
    assert verify_chain(cut).ok
    report = verify_chain(cut, last_seq=N)
    assert not report.ok and report.first_bad_seq == N - 2


def test_rewrite_with_rehashed_suffix_needs_a_checkpoint() -> None:
    """An unkeyed chain re-hashed after a rewrite is valid; a hash recorded earlier exposes it."""
    log = build_chain(1000)
    k = 400  # rewrite entry 401 and re-hash everything after it
    forged = [dict(e) for e in log]
    forged[k]["reason"] = "nothing happened"
    for i in range(k, len(forged)):
        forged[i]["prev_hash"] = forged[i - 1]["hash"]
        forged[i]["hash"] = audit_hash(forged[i]["prev_hash"], {f: forged[i][f] for f in HASHED})
    assert verify_chain(forged, last_seq=1000).ok
    report = verify_chain(forged, checkpoints={300: log[299]["hash"], 1000: log[-1]["hash"]})
    assert not report.ok and report.first_bad_seq == 301
    assert report.problems == ["entry 1000: hash differs from the checkpoint (rewritten at or before it)"]
    assert verify_chain(log, checkpoints={300: log[299]["hash"], 1000: log[-1]["hash"]}).ok


def test_malformed_entries_are_reported_not_raised() -> None:
    log = build_chain(5)
    broken: list[dict[str, Any]] = [
        log[0],
        {k: v for k, v in log[1].items() if k != "op"},
        {**log[2], "seq": "three"},
        {**log[3], "details": b"\xff\xfe"},
        {**log[4], "ts": object()},
    ]
    report = verify_chain(broken)
    assert not report.ok and report.first_bad_seq == 2
    assert report.problems[0] == "entry 2: missing fields op"


def test_problem_list_is_capped(chain: list[Entry]) -> None:
    report = verify_chain([{**e, "reason": "x"} for e in chain[:1000]])
    assert len(report.problems) == MAX_PROBLEMS + 1
    assert report.problems[-1] == f"... and {1000 - MAX_PROBLEMS} more problems"


# --- a real SQLite store, tampered by raw SQL -------------------------------------------------

NS = "trip-42"


def new_memory(path: Path | str = ":memory:") -> Memory:
    return Memory(path, encoder=HashingEncoder(64))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store file whose audit log holds adds, an update (supersede + update) and a delete."""
    path = tmp_path / "audited.db"
    with new_memory(path) as mem:
        ids = [mem.add(f"Fact number {i}: the meeting room is R{i}.", namespace=NS, type="fact") for i in range(8)]
        mem.add("Kyoto trip in 🍁 season", namespace="other", type="fact")
        mem.update(ids[2], "Fact number 2: the meeting room moved to R99.", namespace=NS, reason="moved")
        mem.delete(ids[5], namespace=NS, reason="user asked")
        assert len(mem.store.audit_log()) == 12
    return path


def raw_sql(path: Path, *statements: str, params: Sequence[Sequence[Any]] = (), restore_triggers: bool = True) -> None:
    """Run statements on the file behind the store's back: the append-only triggers are dropped
    first and (as a careful attacker would) put back afterwards unless ``restore_triggers`` is False."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        saved = [sql for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'")]
        conn.execute("DROP TRIGGER IF EXISTS audit_no_update")
        conn.execute("DROP TRIGGER IF EXISTS audit_no_delete")
        for i, sql in enumerate(statements):
            conn.execute(sql, params[i] if i < len(params) else ())
        if restore_triggers:
            for sql in saved:
                conn.execute(sql)
    finally:
        conn.close()


def verify_file(path: Path) -> VerifyReport:
    store = SQLiteStore(path)
    store.setup()
    try:
        return verify_store(store)
    finally:
        store.close()


def test_clean_store_verifies(db: Path) -> None:
    report = verify_file(db)
    assert report.ok, report.problems
    assert report.entries == 12 and report.head_seq == 12


def test_triggers_refuse_tampering_through_sql(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit SET reason = 'x' WHERE seq = 3")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM audit WHERE seq = 3")
    finally:
        conn.close()


SWAP_3_4 = (
    "UPDATE audit SET seq = -3 WHERE seq = 3",
    "UPDATE audit SET seq = 3 WHERE seq = 4",
    "UPDATE audit SET seq = 4 WHERE seq = -3",
)


@pytest.mark.parametrize(
    ("statements", "first_bad", "problem"),
    [
        (["UPDATE audit SET reason = 'nothing to see' WHERE seq = 3"], 3, "entry 3: hash mismatch (changed)"),
        (["UPDATE audit SET details = '{\"tokens\": 99}' WHERE seq = 5"], 5, "entry 5: hash mismatch (changed)"),
        (["UPDATE audit SET namespace = 'other' WHERE seq = 12"], 12, "entry 12: hash mismatch (changed)"),
        (["DELETE FROM audit WHERE seq = 4"], 4, "entry 4 missing (gap in sequence)"),
        (["DELETE FROM audit WHERE seq = 1"], 1, "entry 1 missing (gap in sequence)"),
        (["DELETE FROM audit WHERE seq >= 11"], 11, "entries 11-12 missing at the end of the log"),
        (list(SWAP_3_4), 3, "entry 3: prev_hash does not match entry 2; it points to entry 4"),
    ],
    ids=["update-reason", "update-details", "update-last", "delete-middle", "delete-first", "delete-newest", "swap"],
)
def test_raw_sql_tampering_is_detected(db: Path, statements: list[str], first_bad: int, problem: str) -> None:
    raw_sql(db, *statements)
    report = verify_file(db)
    assert not report.ok
    assert report.first_bad_seq == first_bad
    assert report.problems[0].startswith(problem), report.problems


def test_rewritten_and_rehashed_row_is_detected_at_the_row(db: Path) -> None:
    """The forger recomputes the row's own hash; the next row still points at the old one."""
    store = SQLiteStore(db)
    store.setup()
    row = read_audit_raw(store).entries[5]  # seq 6
    store.close()
    fields = {f: row[f] for f in HASHED} | {"details": json.loads(row["details"]), "reason": "routine"}
    raw_sql(
        db,
        "UPDATE audit SET reason = ?, hash = ? WHERE seq = 6",
        params=[("routine", audit_hash(row["prev_hash"], fields))],
    )
    report = verify_file(db)
    assert not report.ok and report.first_bad_seq == 6
    assert report.problems == ["entry 7: prev_hash does not match entry 6 (changed, reordered or removed)"]


def test_truncated_audit_row_is_reported_and_the_store_still_works(db: Path) -> None:
    with new_memory(db) as mem:
        before = [
            (r.id, r.content, r.tier, r.superseded_by) for r in mem.records(namespace=NS, include_superseded=True)
        ]
        last = mem.store.audit_log()[-1]
    # A crash mid-write: the row's hash covers the whole entry, the details column holds half of it.
    fields = {"ts": last["ts"] + 1, "namespace": NS, "op": "add", "record_id": "X", "actor": "user"}
    fields |= {"reason": "", "policy": None, "details": {"a": 1}}
    raw_sql(
        db,
        "INSERT INTO audit (ts, namespace, op, record_id, actor, reason, policy, details, prev_hash, hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        params=[
            (*(fields[f] for f in HASHED[:-1]), '{"a": 1', last["hash"], audit_hash(last["hash"], fields)),
        ],
    )

    report = verify_file(db)
    assert not report.ok and report.first_bad_seq == 13 and report.entries == 13
    assert report.problems == ["last entry (13) truncated / unreadable JSON in details"]

    with new_memory(db) as mem:
        after = [(r.id, r.content, r.tier, r.superseded_by) for r in mem.records(namespace=NS, include_superseded=True)]
        assert after == before
        assert mem.search("meeting room R99", namespace=NS, k=1)[0].record.content.endswith("R99.")
        mem.add("Written after the crash.", namespace=NS, type="fact")  # chains onto the broken row
        report = verify_store(mem.store)
    assert report.entries == 14 and report.first_bad_seq == 13
    assert report.problems == ["entry 13: unreadable JSON in details (corrupted)"]


def test_read_audit_raw_returns_text_and_counter(db: Path) -> None:
    store = SQLiteStore(db)
    store.setup()
    try:
        raw = read_audit_raw(store)
        parsed = store.audit_log()
    finally:
        store.close()
    assert raw.last_seq == 12 and len(raw.entries) == 12
    assert all(isinstance(e["details"], str) for e in raw.entries)
    assert [{**e, "details": json.loads(e["details"])} for e in raw.entries] == parsed


class ProxyStore(Store):
    """A backend that is not SQLiteStore: verify_store goes through Store.audit_log."""

    def __init__(self, inner: SQLiteStore) -> None:
        self.inner = inner

    def setup(self) -> None:
        self.inner.setup()

    def batch(self, ops: Sequence[Any]) -> list[Any]:
        return self.inner.batch(ops)

    def get_meta(self, key: str) -> str | None:
        return self.inner.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.inner.set_meta(key, value)

    def close(self) -> None:
        self.inner.close()

    @property
    def location(self) -> str:
        return self.inner.location


def test_other_backends_are_verified_through_audit_log(db: Path) -> None:
    store = ProxyStore(SQLiteStore(db))
    store.setup()
    try:
        assert verify_store(store).ok
        raw_sql(db, "UPDATE audit SET details = '{\"a\": 1' WHERE seq = 12")
        report = verify_store(store)  # audit_log() raises on that row: reported, not raised
    finally:
        store.close()
    assert not report.ok and report.first_bad_seq is None
    assert report.problems[0].startswith("audit log unreadable (JSONDecodeError")


def test_an_audit_table_that_cannot_be_read_is_reported(db: Path) -> None:
    raw_sql(db, "DROP TABLE audit", restore_triggers=False)
    report = verify_file(db)
    assert not report.ok and report.entries == 0 and report.first_bad_seq is None
    assert report.problems == ["audit table unreadable: no such table: audit"]


class RawProxyStore(ProxyStore):
    """A backend that is not SQLiteStore but answers ReadAuditRaw: verify_store reads it raw."""

    supports_raw_audit = True


def test_backends_answering_the_raw_read_are_verified_through_the_contract(db: Path) -> None:
    store = RawProxyStore(SQLiteStore(db))
    store.setup()
    try:
        assert verify_store(store).ok
        raw_sql(db, "UPDATE audit SET details = '{\"a\": 1' WHERE seq = 12")
        report = verify_store(store)
    finally:
        store.close()
    assert not report.ok and report.first_bad_seq == 12
    assert report.problems == ["last entry (12) truncated / unreadable JSON in details"]
    with pytest.raises(InvalidInput, match="supports_raw_audit"):
        read_audit_raw(ProxyStore(SQLiteStore()))


# --- snapshots --------------------------------------------------------------------------------


def test_snapshot_and_diff_follow_add_delete_archive_update() -> None:
    with new_memory() as mem:
        a, b, c, e = (mem.add(t, namespace=NS, type="fact") for t in ("alpha", "bravo", "charlie", "echo"))
        first = snapshot(mem, NS)
        assert sorted(first.records) == sorted([a, b, c, e])
        assert first.records[a]["tier"] == "dynamic" and first.records[a]["superseded_by"] is None

        d = mem.add("delta", namespace=NS, type="fact")
        mem.delete(b, namespace=NS)
        (rec_c,) = mem.store.get(NS, [c])
        mem.store.put([rec_c.evolve(tier=Tier.ARCHIVE)])
        (rec_e,) = mem.store.get(NS, [e])
        mem.store.put([rec_e.evolve(priority=7)])
        a2 = mem.update(a, "alpha, revised", namespace=NS, priority=3, importance=0.9)
        second = snapshot(mem, NS)

        delta = diff(first, second)
        assert delta.added == sorted([d, a2])
        assert delta.removed == [b]
        assert delta.archived == [c]
        assert delta.restored == []
        assert delta.changed == {
            a: {"superseded_by": (None, a2)},
            c: {"tier": ("dynamic", "archive")},
            e: {"priority": (0, 7)},
        }
        assert delta.priority_changed == {e: (0, 7)}  # a2 is a new version: added, not changed
        assert second.records[a2]["priority"] == 3 and second.records[a2]["importance"] == 0.9
        assert second.records[a2]["content_hash"] != first.records[a]["content_hash"]

        mem.store.put([rec_c.evolve(tier=Tier.DYNAMIC)])
        back = diff(second, snapshot(mem, NS))
        assert back.restored == [c] and back.archived == [] and back.changed == {c: {"tier": ("archive", "dynamic")}}
        assert diff(second, second).is_empty and not delta.is_empty


def test_snapshot_json_round_trip_holds_no_content() -> None:
    with new_memory() as mem:
        mem.add("Das Passwort steht im Tresor 🔐", namespace="用户-7", type="fact")
        snap = snapshot(mem, "用户-7")
    text = snap.to_json()
    assert "Tresor" not in text and "用户-7" in text
    assert Snapshot.from_json(text) == snap
    assert snap.taken_at.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{", "not valid JSON"),
        ('{"format": "other"}', "format"),
        ('{"format": "retain-snapshot/1", "namespace": "", "taken_at": "2024-01-01T00:00:00+00:00"}', "namespace"),
        ('{"format": "retain-snapshot/1", "namespace": "n", "taken_at": "2024-01-01T00:00:00"}', "taken_at"),
        ('{"format": "retain-snapshot/1", "namespace": "n", "taken_at": "2024-01-01T00:00:00Z"}', "records"),
        (
            '{"format": "retain-snapshot/1", "namespace": "n", "taken_at": "2024-01-01T00:00:00Z", '
            '"records": {"r1": {"tier": "core"}}}',
            "lacks content_hash",
        ),
    ],
)
def test_bad_snapshot_files_are_refused(text: str, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        Snapshot.from_json(text)


# --- CLI --------------------------------------------------------------------------------------


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


runner = CliRunner()


def test_cli_commands_have_help(cli: typer.Typer) -> None:
    for command in (["audit", "verify"], ["snapshot"], ["diff"]):
        result = runner.invoke(cli, [*command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output, command


def test_cli_audit_verify(cli: typer.Typer, db: Path) -> None:
    ok = runner.invoke(cli, ["audit", "verify", "--db", str(db)])
    assert ok.exit_code == 0, ok.output
    assert "ok: 12 audit entries" in ok.output
    head = ok.output.split("head: ")[1].split()[0]
    assert runner.invoke(cli, ["audit", "verify", "--db", str(db), "--checkpoint", head]).exit_code == 0

    raw_sql(db, "DELETE FROM audit WHERE seq = 7")
    bad = runner.invoke(cli, ["audit", "verify", "--db", str(db)])
    assert bad.exit_code == 1
    assert "first untrusted entry: 7" in bad.output and "entry 7 missing (gap in sequence)" in bad.output

    missing = runner.invoke(cli, ["audit", "verify", "--db", str(db.parent / "nope.db")])
    assert missing.exit_code == 2 and "no store" in missing.output
    assert runner.invoke(cli, ["audit", "verify", "--db", str(db), "--checkpoint", "12:abc"]).exit_code == 2


def test_cli_snapshot_and_diff(cli: typer.Typer, db: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert runner.invoke(cli, ["snapshot", "-n", NS, "--db", str(db), "--out", str(a)]).exit_code == 0
    with new_memory(db) as mem:
        new = mem.add("A new fact about room R100.", namespace=NS, type="fact")
        victim = mem.records(namespace=NS)[0]
        mem.store.put([victim.evolve(tier=Tier.ARCHIVE, priority=2)])
    printed = runner.invoke(cli, ["snapshot", "-n", NS, "--db", str(db)])
    assert printed.exit_code == 0
    b.write_text(printed.output, encoding="utf-8")

    result = runner.invoke(cli, ["diff", str(a), str(b)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1:3] == ["added (1)", f"  {new}"]
    assert "removed (0)" in lines and "archived (1)" in lines and f"  {victim.id}" in lines
    assert f"  {victim.id}  tier: dynamic -> archive; priority: 0 -> 2" in lines
    at = lines.index("priority changed (1)")
    assert lines[at + 1] == f"  {victim.id}  0 -> 2"

    assert runner.invoke(cli, ["diff", str(a), str(tmp_path / "nope.json")]).exit_code == 2


def test_verify_fails_when_the_append_only_triggers_are_dropped(db: Path) -> None:
    raw_sql(db, restore_triggers=False)  # drops both triggers, changes no row
    report = verify_file(db)
    assert not report.ok and report.entries == 12
    assert report.problems == [
        "append-only trigger(s) audit_no_delete, audit_no_update missing or altered: the log can be edited in place"
    ]

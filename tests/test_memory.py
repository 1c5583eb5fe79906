"""The Memory facade against the bad-input list: each test asserts the right outcome.

Every test runs over each storage backend (the ``memory`` fixture); the tests that need a file on
disk (raw bytes, two processes, reopening with another encoder) use ``tmp_path`` directly.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import re
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from racing import on_batch, writes_records
from retain.encoders.basis import HashingEncoder
from retain.errors import EncoderMismatch, InvalidInput, RecordNotFound, SchemaError, WriteConflict
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.store import ALL_RECORDS
from retain.store.sqlite import SCHEMA_VERSION

DIM = 64
PRESETS = ("default", "rrf", "lexical", "dense")
ALL_TIERS = ("core", "dynamic", "archive")
NS = "agent-1"


def count(mem: Memory, namespace: str = NS) -> int:
    """Every record of ``namespace``, archived and superseded included."""
    return mem.store.count(namespace, ALL_RECORDS)


def contents(hits: list[Any]) -> list[str]:
    return [h.record.content for h in hits]


def assert_nothing_stored(mem: Memory) -> None:
    assert mem.store.namespaces() == []
    assert count(mem) == 0
    assert mem.store.audit_log() == []


# --- empty input -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\t  ", "\u3000\u00a0"], ids=["empty", "space", "mixed", "unicode-space"])
def test_empty_or_whitespace_text_is_refused(memory: Memory, text: str) -> None:
    with pytest.raises(InvalidInput, match="content"):
        memory.add(text, namespace=NS)
    assert_nothing_stored(memory)


def test_empty_query_returns_nothing(memory: Memory) -> None:
    memory.add("The user likes hiking", namespace=NS)
    assert memory.search("", namespace=NS) == []
    assert memory.search("  \n ", namespace=NS) == []
    assert contents(memory.search("hiking", namespace=NS)) == ["The user likes hiking"]


# --- long text -------------------------------------------------------------------------------


def long_text(n_chars: int = 60_000) -> str:
    """English sentences, each with a unique marker word ``zq<i>x``, cut to exactly ``n_chars``."""
    sentences, total, i = [], 0, 0
    while total < n_chars:
        sentence = f"Entry {i} notes the marker zq{i}x near the old harbour wall. "
        sentences.append(sentence)
        total += len(sentence)
        i += 1
    return "".join(sentences)[:n_chars]


def test_long_text_is_stored_as_linked_parts(memory: Memory) -> None:
    text = long_text()
    assert len(text) == 60_000
    limit = memory.config.max_record_chars

    first = memory.add(text, namespace=NS)

    parts = memory.records(namespace=NS)
    n = len(parts)
    assert n >= 60_000 // limit
    assert [p.metadata["part"] for p in parts] == list(range(n))
    assert {p.metadata["parts"] for p in parts} == {n}
    assert {p.metadata["split_group"] for p in parts} == {first}
    assert parts[0].id == first
    assert "".join(p.content for p in parts) == text
    assert max(len(p.content) for p in parts) <= limit
    assert len(memory.store.audit_log(NS)) == n

    # consistent store: every part has its embedding and is found by a word only it holds
    marker = re.compile(r"\bzq\d+x\b")
    owners: dict[str, set[str]] = {}
    for p in parts:
        for word in marker.findall(p.content):
            owners.setdefault(word, set()).add(p.id)
    for p in parts:
        assert p.embedding is not None and p.embedding.shape == (DIM,)
        assert float(np.linalg.norm(p.embedding)) == pytest.approx(1.0, abs=1e-5)
        assert p.encoder == f"hashing-{DIM}" and p.token_count > 0
        unique = next(w for w in marker.findall(p.content) if owners[w] == {p.id})
        hits = memory.search(unique, namespace=NS, config="lexical", k=3)
        assert [h.record.id for h in hits] == [p.id], unique

    short = memory.add("Remember to water the ficus on Tuesday", namespace=NS)
    assert memory.get(short, namespace=NS).content == "Remember to water the ficus on Tuesday"
    for preset in ("rrf", "lexical", "dense"):
        assert memory.search("ficus", namespace=NS, config=preset, k=1)[0].record.id == short, preset
    assert short in [h.record.id for h in memory.search("ficus", namespace=NS, k=50)]
    assert count(memory) == n + 1


def test_default_search_ranks_unique_match_first_among_long_parts(memory: Memory) -> None:
    memory.add(long_text(), namespace=NS)
    short = memory.add("Remember to water the ficus on Tuesday", namespace=NS)
    assert memory.search("ficus", namespace=NS, k=1)[0].record.id == short


# --- duplicates ------------------------------------------------------------------------------


def test_same_text_twice_is_stored_once(memory: Memory) -> None:
    first = memory.add("Alice prefers window seats", namespace=NS)
    assert memory.add("Alice prefers window seats", namespace=NS) == first
    assert memory.add("  Alice prefers\twindow seats ", namespace=NS) == first  # same normalised text
    assert count(memory) == 1
    assert [e["op"] for e in memory.store.audit_log()] == ["add"]
    # another namespace is another memory
    assert memory.add("Alice prefers window seats", namespace="agent-2") != first


def test_add_many_dedupes_inside_one_batch_and_against_the_store(memory: Memory) -> None:
    stored = memory.add("Bob is vegetarian", namespace=NS)
    ids = memory.add_many(
        [
            NewMemory("Carol plays the cello"),
            {"content": "Dave collects stamps"},
            NewMemory("Carol plays the cello"),
            NewMemory("Bob is vegetarian"),
        ],
        namespace=NS,
    )
    assert len(ids) == 4
    assert ids[2] == ids[0]
    assert ids[3] == stored
    assert len({ids[0], ids[1], stored}) == 3
    assert count(memory) == 3
    assert sorted(r.content for r in memory.records(namespace=NS)) == [
        "Bob is vegetarian",
        "Carol plays the cello",
        "Dave collects stamps",
    ]


# --- unicode ---------------------------------------------------------------------------------


def test_chinese_and_emoji_round_trip(memory: Memory) -> None:
    text = "用户喜欢绿茶 🍵"
    rid = memory.add(text, namespace=NS)
    memory.add("The user dislikes coffee", namespace=NS)

    got = memory.get(rid, namespace=NS)
    assert got.content == text
    assert got.content.encode("utf-8") == text.encode("utf-8")
    for preset in ("default", "lexical"):
        assert memory.search("绿茶", namespace=NS, config=preset)[0].record.id == rid, preset

    exported = memory.export(namespace=NS)
    assert text in exported
    assert "\\u" not in exported
    assert [r["content"] for r in json.loads(exported)["records"]] == [text, "The user dislikes coffee"]


# --- deletion --------------------------------------------------------------------------------


def test_delete_removes_content_from_every_search_and_the_audit(memory: Memory) -> None:
    memory.add("Project kickoff is on Monday", namespace=NS)
    memory.add("The codename of the old boat was Marlin", namespace=NS)
    secret = memory.add("Project codename is Bluefin", namespace=NS)
    assert memory.search("Bluefin", namespace=NS, config="lexical")[0].record.id == secret

    assert memory.delete(secret, namespace=NS, reason="user request") == 1

    for preset in PRESETS:
        for tiers, superseded in ((None, False), (ALL_TIERS, True)):
            hits = memory.search(
                "Project codename Bluefin", namespace=NS, config=preset, tiers=tiers, include_superseded=superseded
            )
            assert hits, preset  # the search itself still works
            assert secret not in [h.record.id for h in hits], preset
            assert not any("Bluefin" in c for c in contents(hits)), preset
    with pytest.raises(RecordNotFound):
        memory.get(secret, namespace=NS)

    exported = memory.export(namespace=NS)
    assert "bluefin" not in exported.lower() and secret not in exported

    audit = memory.store.audit_log()
    assert {"op": "delete", "record_id": secret, "reason": "user request"}.items() <= next(
        e for e in audit if e["op"] == "delete"
    ).items()
    assert "bluefin" not in json.dumps(audit, ensure_ascii=False).lower()

    # the deleted content is really gone: adding it again makes a new record
    assert memory.add("Project codename is Bluefin", namespace=NS) != secret


def test_deleted_content_leaves_no_bytes_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    mem = Memory(path, encoder=HashingEncoder(DIM))
    mem.add("Project kickoff is on Monday", namespace=NS)
    secret = mem.add("Project codename is Bluefin", namespace=NS)
    old = mem.add("Backup codename is Bluefin too", namespace=NS)
    mem.update(old, "Backup codename is Bluefin, final", namespace=NS)
    mem.search("Bluefin", namespace=NS)

    def disk_bytes() -> bytes:
        return b"".join(f.read_bytes() for f in tmp_path.iterdir() if f.name.startswith("mem.db"))

    assert b"Bluefin" in disk_bytes()  # the check below can fail

    assert mem.delete(secret, namespace=NS) == 1
    assert mem.delete(old, namespace=NS) == 2
    mem.close()

    files = {f.name for f in tmp_path.iterdir()}
    assert "mem.db" in files
    for name in ("mem.db", "mem.db-wal"):
        if name in files:
            assert b"bluefin" not in (tmp_path / name).read_bytes().lower(), name
    assert b"bluefin" not in disk_bytes().lower()


def test_delete_purges_a_version_another_writer_added_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mem.db"
    with Memory(path, encoder=HashingEncoder(DIM)) as a, Memory(path, encoder=HashingEncoder(DIM)) as b:
        old = a.add("The vault code is 4411.", namespace=NS)
        newer: list[str] = []
        batch = a.store.batch

        def hooked(ops: Any) -> Any:  # the other writer updates between the family read and the purge
            if not newer and any(type(op).__name__ == "DeleteRecords" for op in ops):
                newer.append(b.update(old, "The vault code is 9922.", namespace=NS))
            return batch(ops)

        monkeypatch.setattr(a.store, "batch", hooked)

        assert a.delete(old, namespace=NS) == 2  # every version, the one written meanwhile too

        assert a.store.list_records(NS, ALL_RECORDS) == []
        assert [e["record_id"] for e in a.store.audit_log(NS) if e["op"] == "delete"] == sorted([old, newer[0]])


# --- namespaces ------------------------------------------------------------------------------


def test_namespaces_are_isolated_in_every_channel(memory: Memory) -> None:
    memory.add("Friend Robin likes chess", namespace="A")
    memory.add("Friend Robin likes sailing", namespace="B")
    for preset in ("lexical", "dense", "default"):
        a_hits = memory.search("what does Robin like", namespace="A", config=preset)
        assert contents(a_hits) == ["Friend Robin likes chess"], preset
        assert {h.record.namespace for h in a_hits} == {"A"}
        b_hits = memory.search("what does Robin like", namespace="B", config=preset)
        assert contents(b_hits) == ["Friend Robin likes sailing"], preset
    exported = memory.export(namespace="A")
    assert "chess" in exported
    assert "sailing" not in exported


def test_namespaces_lists_those_holding_records_sorted(memory: Memory) -> None:
    assert memory.namespaces() == []
    memory.add("Friend Robin likes sailing", namespace="B")
    memory.add("Friend Robin likes chess", namespace="A")
    assert memory.namespaces() == ["A", "B"]
    memory.delete_all(namespace="B")
    assert memory.namespaces() == ["A"]


# --- two processes ---------------------------------------------------------------------------


def _writer(path: str, n: int, ready: Any, done: Any, results: Any) -> None:
    errors: list[str] = []
    ids: list[str] = []
    try:
        ready.wait(60)
        with Memory(path, encoder=HashingEncoder(DIM)) as mem:
            for i in range(n):
                ids.append(mem.add(f"Courier delivered parcel number {i} to dock {i % 7}", namespace="shared"))
    except BaseException:
        errors.append(traceback.format_exc())
    finally:
        done.set()
        results.put(("writer", errors, ids))


def _reader(path: str, ready: Any, done: Any, results: Any) -> None:
    errors: list[str] = []
    searches = 0
    try:
        mem = Memory(path, encoder=HashingEncoder(DIM))
        ready.set()
        try:
            while not done.is_set() or searches == 0:
                mem.search("which parcel went to the dock", namespace="shared", k=5)
                mem.search("parcel", namespace="shared", k=5, config="dense")
                searches += 1
                if searches % 10 == 0:  # reopening runs setup(), which takes the write lock briefly
                    mem.close()
                    mem = Memory(path, encoder=HashingEncoder(DIM))
        finally:
            mem.close()
    except BaseException:
        errors.append(traceback.format_exc())
    finally:
        ready.set()
        results.put(("reader", errors, searches))


def test_two_processes_write_and_search_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    Memory(path, encoder=HashingEncoder(DIM)).close()  # schema and encoder recorded up front
    n = 200

    ctx = mp.get_context("spawn")
    ready, done, results = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_reader, args=(path, ready, done, results)),
        ctx.Process(target=_writer, args=(path, n, ready, done, results)),
    ]
    for p in procs:
        p.start()
    try:
        reports = {role: (errors, payload) for role, errors, payload in (results.get(timeout=120) for _ in procs)}
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert reports["writer"][0] == [], reports["writer"][0]
    assert reports["reader"][0] == [], reports["reader"][0]
    assert [p.exitcode for p in procs] == [0, 0]
    written = reports["writer"][1]
    assert len(written) == n and len(set(written)) == n
    assert reports["reader"][1] >= 1

    with Memory(path, encoder=HashingEncoder(DIM)) as mem:
        assert count(mem, "shared") == n
        assert {r.id for r in mem.records(namespace="shared")} == set(written)
        assert contents(mem.search("parcel number 137", namespace="shared", config="lexical", k=1)) == [
            "Courier delivered parcel number 137 to dock 4"
        ]


# --- encoders --------------------------------------------------------------------------------


def test_other_encoder_is_refused(memory: Memory) -> None:
    memory.add("The ferry leaves at noon", namespace=NS)
    with pytest.raises(EncoderMismatch, match="reembed") as info:
        Memory(store=memory.store, encoder=HashingEncoder(32))
    assert "hashing-64" in str(info.value) and "hashing-32" in str(info.value)
    assert memory.store.get_meta("encoder_name") == "hashing-64"


def test_reembed_lets_another_encoder_open_the_store(tmp_path: Path) -> None:
    path = tmp_path / "enc.db"
    with Memory(path, encoder=HashingEncoder(DIM)) as mem:
        ferry = mem.add("The ferry leaves at noon", namespace=NS)
        old = mem.add("The bus leaves at nine", namespace="other")
        new = mem.update(old, "The bus leaves at ten", namespace="other")

    with pytest.raises(EncoderMismatch, match="reembed"):
        Memory(path, encoder=HashingEncoder(32))

    assert Memory.reembed(path, HashingEncoder(32)) == 3  # superseded versions too

    with Memory(path, encoder=HashingEncoder(32)) as mem:
        for preset in PRESETS:
            assert mem.search("ferry noon", namespace=NS, config=preset)[0].record.id == ferry, preset
        assert mem.search("bus", namespace="other", config="dense")[0].record.id == new
        for rec in mem.records(namespace="other", include_superseded=True):
            assert rec.embedding is not None and rec.embedding.shape == (32,)
            assert rec.encoder == "hashing-32"
        assert mem.info()["dim"] == 32
    with pytest.raises(EncoderMismatch):
        Memory(path, encoder=HashingEncoder(DIM))


def test_newer_schema_is_refused_at_open(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "future.db"
    Memory(path, encoder=HashingEncoder(DIM)).close()
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(SchemaError, match="Upgrade retain"):
        Memory(path, encoder=HashingEncoder(DIM))


# --- updates ---------------------------------------------------------------------------------


def test_update_supersedes_and_delete_purges_every_version(memory: Memory) -> None:
    old = memory.add("Alice lives in Paris", namespace=NS)
    other = memory.add("Bob lives in Rome", namespace=NS)
    new = memory.update(old, "Alice lives in Berlin", namespace=NS, reason="moved")
    assert new != old

    for preset in PRESETS:
        found = contents(memory.search("Where does Alice live", namespace=NS, config=preset))
        assert "Alice lives in Berlin" in found, preset
        assert "Alice lives in Paris" not in found, preset
    history_hits = memory.search("Alice Paris", namespace=NS, config="lexical", include_superseded=True)
    assert "Alice lives in Paris" in contents(history_hits)

    assert [r.id for r in memory.history(new, namespace=NS)] == [old, new]
    assert [r.content for r in memory.history(old, namespace=NS)] == ["Alice lives in Paris", "Alice lives in Berlin"]
    retired, current = memory.get(old, namespace=NS), memory.get(new, namespace=NS)
    assert retired.superseded_by == new and not retired.is_current
    assert current.supersedes == old and current.is_current
    assert [r.id for r in memory.records(namespace=NS)] == [other, new]
    with pytest.raises(InvalidInput, match="superseded"):
        memory.update(old, "Alice lives in Rome", namespace=NS)

    assert memory.delete(new, namespace=NS) == 2
    for rid in (old, new):
        with pytest.raises(RecordNotFound):
            memory.get(rid, namespace=NS)
    assert [r.id for r in memory.records(namespace=NS, include_superseded=True)] == [other]
    assert memory.search("Alice", namespace=NS, config="lexical", tiers=ALL_TIERS, include_superseded=True) == []
    deletes = [e["record_id"] for e in memory.store.audit_log() if e["op"] == "delete"]
    assert sorted(deletes) == sorted([old, new])


# --- bad field values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"importance": 2.0}, "importance"),
        ({"importance": float("nan")}, "importance"),
        ({"confidence": -0.1}, "confidence"),
        ({"type": "banana"}, "type"),
        ({"event_time": "yesterday-ish"}, "event_time"),
        ({"namespace": ""}, "namespace"),
        ({"namespace": "   "}, "namespace"),
        ({"namespace": "n" * 300}, "namespace: 300 characters, limit is 256"),
        ({"namespace": "bad\x00name"}, "namespace"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_bad_field_value_is_refused_by_name(memory: Memory, fields: dict[str, Any], named: str) -> None:
    kwargs: dict[str, Any] = {"namespace": NS, **fields}
    with pytest.raises(InvalidInput, match=re.escape(named)):
        memory.add("A perfectly fine memory", **kwargs)
    assert_nothing_stored(memory)


@pytest.mark.parametrize(
    "bad",
    [NewMemory(""), NewMemory("   "), NewMemory("fine text", importance=2.0), {"content": "x", "colour": "red"}],
    ids=["empty", "whitespace", "importance", "unknown-key"],
)
def test_add_many_with_one_bad_item_stores_none(memory: Memory, bad: Any) -> None:
    items: list[Any] = [NewMemory(f"Valid memory number {i}") for i in range(5)]
    items[2] = bad
    with pytest.raises(InvalidInput, match="item 2"):
        memory.add_many(items, namespace=NS)
    assert_nothing_stored(memory)


def test_length_prior_does_not_lift_unrelated_long_parts_with_the_real_model() -> None:
    """Regression: the learned fusion once ranked a matching short note below long unrelated parts."""
    from retain.encoders.basis import MiniLMEncoder

    mem = Memory(encoder=MiniLMEncoder())
    mem.add(long_text(), namespace=NS)
    short = mem.add("Remember to water the ficus on Tuesday", namespace=NS)
    for query in ("ficus", "when should I water the ficus?", "plants"):
        assert mem.search(query, namespace=NS, k=1)[0].record.id == short, query


def test_a_single_add_names_the_field_without_a_batch_index() -> None:
    m = Memory(encoder=HashingEncoder(64))
    with pytest.raises(InvalidInput) as single:
        m.add("The ferry leaves at 07:40.", namespace="n", type="fact2")
    assert str(single.value).startswith("type: 'fact2' is not one of")
    with pytest.raises(InvalidInput, match=r"^item 1: type: 'fact2'"):
        m.add_many([{"content": "ok"}, {"content": "The ferry.", "type": "fact2"}], namespace="n")


class _CommitBeforeBegin:
    """A connection proxy that lets another connection commit just before this one's next BEGIN."""

    def __init__(self, conn: Any, commit: Any) -> None:
        self._conn, self._commit = conn, commit

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.startswith("BEGIN") and self._commit is not None:
            commit, self._commit = self._commit, None
            commit()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_commit_racing_the_begin_is_not_read_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    with Memory(path, encoder=HashingEncoder(DIM)) as reader, Memory(path, encoder=HashingEncoder(DIM)) as writer:
        rid = reader.add("Courier collects the piano on Friday.", namespace="move")
        assert reader.get(rid, namespace="move").content.startswith("Courier")  # now cached by the reader
        real = reader.store._conn
        reader.store._conn = _CommitBeforeBegin(real, lambda: writer.delete(rid, namespace="move"))
        try:
            with pytest.raises(RecordNotFound):
                reader.get(rid, namespace="move")
        finally:
            reader.store._conn = real


def test_feedback_racing_a_delete_does_not_bring_the_record_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mem.db"
    with Memory(path, encoder=HashingEncoder(DIM)) as a, Memory(path, encoder=HashingEncoder(DIM)) as b:
        rid = a.add("The vault code is 4411.", namespace=NS)
        # the other writer purges it between this call's read and its write
        on_batch(monkeypatch, a, lambda: b.delete(rid, namespace=NS), writes_records)

        with pytest.raises(WriteConflict, match="deleted"):
            a.feedback(rid, namespace=NS, used=True)

        assert a.store.list_records(NS, ALL_RECORDS) == []


def test_feedback_racing_an_update_keeps_the_old_version_superseded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mem.db"
    with Memory(path, encoder=HashingEncoder(DIM)) as a, Memory(path, encoder=HashingEncoder(DIM)) as b:
        rid = a.add("The vault code is 4411.", namespace=NS)
        newer: list[str] = []
        batch = a.store.batch

        def hooked(ops: Any) -> Any:
            if not newer and any(type(o).__name__ == "PutRecords" for o in ops):
                newer.append(b.update(rid, "The vault code is 9922.", namespace=NS))
            return batch(ops)

        monkeypatch.setattr(a.store, "batch", hooked)

        with pytest.raises(WriteConflict, match="superseded"):
            a.feedback(rid, namespace=NS, used=True)

        assert a.get(rid, namespace=NS).superseded_by == newer[0]  # not made current again


def test_delete_follows_every_version_fork(mem64: Memory) -> None:
    rid = mem64.add("my card PIN is 1234", namespace=NS)
    old = mem64.get(rid, namespace=NS)
    forks = [old.evolve(id=f"01FORK{i:020d}", content=f"PIN {i}", supersedes=rid) for i in range(3)]
    mem64.store.put(forks)
    assert mem64.delete(rid, namespace=NS) == 4
    assert mem64.records(namespace=NS, include_superseded=True) == []

"""A small namespace's search never reads a big namespace of the same database: the work one search in
the small namespace does is the same whether the big one holds 100 or 1,000 records.

The work is counted by the database itself: SQLite's virtual-machine instructions (a progress handler),
Postgres's rows (every plan node's actual rows, and rows a filter removed, of each ``SELECT`` the
search ran, replayed under ``EXPLAIN ANALYZE``). FTS5's own C work (BM25's IDF over the whole
table) is invisible to the SQLite count, so the plan's answers are pinned by a test of their own."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from postgres_server import postgres_url
from retain import HashingEncoder, Memory, NewMemory
from retain.store.base import Store
from retain.store.postgres import PostgresStore
from retain.store.sqlite import SQLiteStore
from retain.store.sqlite_ann import AnnConfig

_SMALL = ["the budget for the venue is 4,000 euros", "Maria owns the venue booking", "dinner at eight"]


def _fill(mem: Memory, big: int) -> None:
    mem.add_many([NewMemory(f"note {i} about the venue budget and dinner") for i in range(big)], namespace="big")
    mem.add_many([NewMemory(t) for t in _SMALL], namespace="small")


class _Recording:
    """A psycopg cursor that records the ``SELECT`` statements run through it."""

    def __init__(self, cur: Any, log: list[tuple[str, Any]]) -> None:
        self._cur, self._log = cur, log

    def execute(self, sql: str, params: Any = None, **kwargs: Any) -> Any:
        if sql.lstrip().upper().startswith("SELECT") and "pg_advisory" not in sql:
            self._log.append((sql, params))
        self._cur.execute(sql, params, **kwargs)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)

    def __enter__(self) -> _Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self._cur.close()


class _Connection:
    def __init__(self, conn: Any, log: list[tuple[str, Any]]) -> None:
        self._conn, self._log = conn, log

    def cursor(self, *args: Any, **kwargs: Any) -> _Recording:
        return _Recording(self._conn.cursor(*args, **kwargs), self._log)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _plan_rows(node: dict[str, Any]) -> float:
    own = (node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node.get("Actual Loops", 1)
    return float(own) + sum(_plan_rows(child) for child in node.get("Plans", ()))


def _postgres_work(store: PostgresStore, search: Callable[[], object]) -> float:
    log: list[tuple[str, Any]] = []
    real = store._conn
    store._conn = _Connection(real, log)
    try:
        search()
    finally:
        store._conn = real
    total = 0.0
    with real.transaction(), real.cursor() as cur:
        for sql, params in log:
            plan = cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()[0]
            total += _plan_rows((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"])
    return total


def _sqlite_work(store: SQLiteStore, search: Callable[[], object]) -> float:
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    store._conn.set_progress_handler(tick, 10)
    try:
        search()
    finally:
        store._conn.set_progress_handler(None, 0)
    return float(steps[0])


def _work(make: Callable[[], Store], big: int) -> float:
    store = make()
    mem = Memory(store=store, encoder=HashingEncoder(64))
    _fill(mem, big)

    def search() -> object:
        return mem.search("what is the venue budget", namespace="small", k=3)

    assert [h.record.content for h in mem.search("venue budget", namespace="small", k=5)]  # the small one answers
    search()  # caches (encoder, namespace statistics) warm, as in a running agent
    work = _postgres_work(store, search) if isinstance(store, PostgresStore) else _sqlite_work(store, search)  # type: ignore[arg-type]
    mem.close()
    return work


@pytest.mark.parametrize("backend", ["sqlite-file", "sqlite-ann", "postgres"])
def test_a_small_namespaces_search_does_the_same_work_beside_a_ten_times_bigger_one(
    backend: str, tmp_path: Path
) -> None:
    def make() -> Store:
        if backend == "postgres":
            return PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}")
        ann = AnnConfig(min_records=100) if backend == "sqlite-ann" else None
        return SQLiteStore(tmp_path / f"{uuid.uuid4().hex}.db", **({"ann": ann} if ann else {}))

    small_beside_100 = _work(make, 100)
    small_beside_1000 = _work(make, 1_000)
    assert small_beside_100 > 0
    assert small_beside_1000 <= small_beside_100 * 1.1, (small_beside_100, small_beside_1000)


def test_the_work_meter_sees_a_search_of_the_big_namespace_grow(tmp_path: Path) -> None:
    """The meter itself: a search of the big namespace does more work when it holds more."""

    def big_search(big: int) -> float:
        store = PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}")
        mem = Memory(store=store, encoder=HashingEncoder(64))
        _fill(mem, big)
        mem.search("venue budget", namespace="big", k=3)
        work = _postgres_work(store, lambda: mem.search("venue budget", namespace="big", k=3))
        mem.close()
        return work

    assert big_search(1_000) > 3 * big_search(100)


def test_the_rowid_range_ranks_as_the_whole_table_join_does(tmp_path: Path) -> None:
    """SQLite's lexical plan below the HNSW threshold reads only the rowids the namespace spans; its
    ids, order and scores are those of the join over the whole table, for a namespace written after a
    big one and for two written interleaved, with and without a filter, and none for an empty one."""
    from retain.store.filters import RecordFilter
    from retain.store.ops import LexicalSearch
    from retain.store.sqlite_lexical import lexical_search, match_expression
    from retain.store.sqlite_rows import filter_sql

    store = SQLiteStore(tmp_path / "plans.db")
    mem = Memory(store=store, encoder=HashingEncoder(64))
    words = ["venue", "budget", "dinner", "flight", "hotel", "owner"]

    def notes(start: int, count: int, tag: str) -> list[NewMemory]:
        return [NewMemory(f"{words[i % 6]} {words[(i * 5) % 6]} {tag} {i}") for i in range(start, start + count)]

    mem.add_many(notes(0, 300, "note"), namespace="big")
    mem.add_many(notes(0, 40, "mixed"), namespace="mixed")
    mem.add_many(notes(300, 300, "note"), namespace="big")
    mem.add_many(notes(40, 40, "mixed"), namespace="mixed")
    mem.add_many(notes(0, 30, "item"), namespace="after")
    conn = store._conn
    filters = [RecordFilter(), RecordFilter(tiers=("core", "dynamic", "archive"), include_superseded=True)]
    for ns in ("after", "mixed", "big", "empty"):
        for flt in filters:
            for terms in (["venue"], ["budget", "dinner"], ["hotel", "owner", "item"], ["nothing"]):
                found = lexical_search(conn, LexicalSearch(ns, tuple(terms), flt, 10), flt, False)
                where, params = filter_sql(ns, flt, alias="r.")
                whole = conn.execute(
                    "SELECT r.id, bm25(records_fts) AS s FROM records_fts JOIN records r ON r.rowid = "
                    f"records_fts.rowid WHERE records_fts MATCH ? AND {where} ORDER BY s, r.rowid LIMIT 10",
                    (match_expression(terms), *params),
                ).fetchall()
                assert [(h.id, h.score) for h in found] == [(i, -s) for i, s in whole], (ns, terms)
                assert bool(found) == (ns != "empty" and terms != ["nothing"]), (ns, terms)
    mem.close()

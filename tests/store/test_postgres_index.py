"""When the Postgres backend builds its HNSW index: inside the write that brings a namespace past the
threshold (default), or, for a bulk load (``index_on_write=False``), only when ``build_index()`` is
called; searches are exact until then and agree with the index after. Runs on a real server."""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest

from postgres_server import postgres_url
from retain.record import MemoryRecord
from retain.store.migrate import migrate
from retain.store.postgres import PostgresStore
from retain.store.postgres_index import memory_mb
from retain.store.sqlite import SQLiteStore

_DIM = 16
_N = 120


def _records(namespace: str = "big") -> list[MemoryRecord]:
    vecs = np.random.default_rng(3).standard_normal((_N, _DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [MemoryRecord(id=f"r{i}", namespace=namespace, content=f"note {i}", embedding=v) for i, v in enumerate(vecs)]


def _indexes(schema: str) -> list[str]:
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE 'records_vec_%%'", (schema,)
        ).fetchall()
    return [r[0] for r in rows]


def _store(monkeypatch: pytest.MonkeyPatch, **kwargs: bool) -> PostgresStore:
    monkeypatch.setattr("retain.store.postgres.ANN_MIN_RECORDS", 100)
    store = PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}", **kwargs)
    store.setup()
    return store


def test_by_default_the_write_past_the_threshold_builds_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(monkeypatch)
    recs = _records()
    store.put(recs[:99])
    assert _indexes(store._schema) == []  # below the threshold: exact scans, no index to update
    store.put(recs[99:])
    assert _indexes(store._schema) == [f"records_vec_{_DIM}"]
    assert store.build_index() == []  # nothing left to build
    store.close()


def test_a_bulk_load_searches_exactly_until_build_index_and_the_index_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(monkeypatch, index_on_write=False)
    recs = _records()
    store.put(recs)
    assert _indexes(store._schema) == []
    query = recs[7].embedding
    exact = store.search_vector("big", query, limit=10)
    matrix = np.stack([r.embedding for r in recs])
    assert [h.id for h in exact] == [f"r{i}" for i in np.argsort(-(matrix @ query))[:10]]
    assert store.build_index("big") == [_DIM]
    assert _indexes(store._schema) == [f"records_vec_{_DIM}"]
    indexed = store.search_vector("big", query, limit=10)
    assert indexed[0].id == "r7"
    assert len({h.id for h in indexed} & {h.id for h in exact}) >= 9  # HNSW at 120 vectors: near exact
    assert len(store.search_vector("big", query, limit=600)) == _N  # past pgvector's ef_search cap of 1,000
    more = _records("big")[0]
    store.put([MemoryRecord(id="late", namespace="big", content="late", embedding=more.embedding)])
    assert {h.id for h in store.search_vector("big", more.embedding, limit=2)} == {"r0", "late"}  # index updated
    store.close()


def test_build_index_does_nothing_while_every_namespace_is_small(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(monkeypatch, index_on_write=False)
    store.put(_records()[:50])
    assert store.build_index() == []
    assert _indexes(store._schema) == []
    store.close()


def test_migrate_into_postgres_builds_the_index_once_after_the_copy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    source = SQLiteStore(f"{tmp_path}/src.db")
    source.setup()
    source.put(_records())
    target = _store(monkeypatch, index_on_write=False)
    built: list[list[int]] = []
    real = target.build_index
    monkeypatch.setattr(target, "build_index", lambda ns=None: built.append(real(ns)) or built[-1])
    migrate(source, target)
    assert built == [[_DIM]]
    assert _indexes(target._schema) == [f"records_vec_{_DIM}"]
    source.close()
    target.close()


def test_the_build_memory_holds_the_graph_within_bounds() -> None:
    assert memory_mb(0, 384) == 64
    assert 2_400 <= memory_mb(1_000_000, 384) <= 2_800  # 1M x 384 float32 = 1,465 MB plus the graph
    assert memory_mb(100_000_000, 384) == 8_192

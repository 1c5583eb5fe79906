"""The lexical channel on Postgres: the same BM25 ranking and scores as SQLite's FTS5 over the same records
(the learned fusion reads them as features), and the large-namespace plan that ranks the records of the
rarer query terms only (retain.store.postgres_lexical). Every test runs against a real server."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np
import psycopg
import pytest

from postgres_server import postgres_url
from rare_terms_plan import check_rare_terms_first
from retain.record import MemoryRecord, new_id
from retain.store import SQLiteStore
from retain.store.postgres import PostgresStore
from retain.text.lexical import query_terms

DIM = 8
TEXTS = [
    "The user drinks green tea every morning before the run",
    "Green tea, green tea, always green tea",
    "The user drinks black coffee and runs on Sundays",
    "Melanie painted a sunrise by the lake last summer",
    "Caroline went to the LGBTQ support group; she felt accepted",
    "She is researching adoption agencies and counseling careers",
    "Running a marathon: training plans, running shoes, and a running club",
    "用户喜欢绿茶，也喜欢咖啡",
    "The café served crème brûlée and naïve pastries",
    "Psychology and ecology books, possibly apologies; he trekked and kayaked",
    "A long note about the budget, the venue, the flight and the hotel deadline",
    "The owner sent the report about the museum dinner and the train",
]
QUERIES = [
    "green tea",
    "drinking coffee",
    "running shoes",
    "painted sunrise",
    "support group",
    "adoption counseling",
    "绿茶",
    "creme brulee cafe",
    "psychology ecology apology trekking",
    "budget hotel report",
    "the user",
    "possible trek incredible",
    "tea tea coffee",
]


def _records(namespace: str) -> list[MemoryRecord]:
    rng = np.random.default_rng(3)
    out = []
    for text in TEXTS:
        vec = rng.standard_normal(DIM).astype(np.float32)
        out.append(MemoryRecord(id=new_id(), namespace=namespace, content=text, embedding=vec / np.linalg.norm(vec)))
    return out


def _postgres() -> PostgresStore:
    store = PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}")
    store.setup()
    return store


def test_postgres_ranks_and_scores_every_query_as_sqlite_does(tmp_path: Path) -> None:
    """Same records, same queries: the same ids in the same order with the same BM25 scores (FTS5's
    formula and tokenizer), so the fusion's lexical features do not depend on the backend."""
    recs = _records("ns")
    lite = SQLiteStore(tmp_path / "m.db")
    lite.setup()
    pg = _postgres()
    for store in (lite, pg):
        store.put(recs)
    for query in QUERIES:
        terms = query_terms(query)
        a, b = lite.search_lexical("ns", terms, limit=20), pg.search_lexical("ns", terms, limit=20)
        assert [h.id for h in b] == [h.id for h in a], query
        np.testing.assert_allclose([h.score for h in b], [h.score for h in a], rtol=1e-9, err_msg=query)
        assert a, query
    lite.close()
    pg.close()


def _zebras(monkeypatch: pytest.MonkeyPatch) -> tuple[PostgresStore, list[MemoryRecord]]:
    """A namespace "big" past a lowered HNSW threshold: 350 records holding "common", one in 100 "zebra"
    (the common-term floor lowered so the large-namespace plan prunes at this size)."""
    monkeypatch.setattr("retain.store.sqlite_lexical.COMMON_FLOOR", 0)
    monkeypatch.setattr("retain.store.postgres.ANN_MIN_RECORDS", 300)
    store = _postgres()
    base = _records("big")[0]
    recs = [
        replace(base, id=new_id(), content=f"common words {'zebra' if i % 100 == 0 else 'plain'}") for i in range(350)
    ]
    store.put(recs)
    return store, recs


def test_the_large_namespace_plan_ranks_rare_terms_and_keeps_to_its_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    store, recs = _zebras(monkeypatch)
    small = MemoryRecord(id=new_id(), namespace="small", content="common zebra", embedding=recs[0].embedding)
    check_rare_terms_first(store, recs, small)
    store.close()


def test_the_plan_follows_term_counts_changed_by_another_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    store, recs = _zebras(monkeypatch)
    base = recs[0]
    assert len(store.search_lexical("big", ["common", "zebra"], limit=1000)) == 4  # zebra is rare: it decides
    other = PostgresStore(postgres_url(), schema=store._schema)
    other.setup()
    more = [replace(base, id=new_id(), content="zebra stripes") for _ in range(300)]
    other.put(more)  # zebra is now in half the records: neither term is rarer, both rank
    assert len(store.search_lexical("big", ["common", "zebra"], limit=1000)) == len(recs) + len(more)
    other.delete("big", [r.id for r in more])
    other.close()
    assert len(store.search_lexical("big", ["common", "zebra"], limit=1000)) == 4
    store.close()


def test_setup_indexes_a_version_2_store_again_with_the_fts5_stems() -> None:
    """Migration 3 on an existing database: rows written with snowball's stems ("trekk", "psychologi")
    are indexed again, so queries stemmed by FTS5 ("trek", "psycholog") find them, and the BM25
    statistics are counted again from the rows (scores as on a store written afresh)."""
    store = _postgres()
    recs = _records("ns")
    store.put(recs)
    fresh = {q: store.search_lexical("ns", query_terms(q), limit=20) for q in QUERIES}
    schema = store._schema
    store.close()
    with psycopg.connect(postgres_url(), autocommit=True) as conn:  # as a version 2 store wrote it
        conn.execute(f'SET search_path TO "{schema}", public')
        conn.execute(
            "UPDATE records SET lex = replace(replace(lex::text, 'psycholog''', 'psychologi'''), "
            "'trek''', 'trekk''')::tsvector"
        )
        conn.execute("UPDATE lex_df SET term = term || 'i' WHERE term = 'psycholog'")
        conn.execute("UPDATE lex_df SET term = 'trekk' WHERE term = 'trek'")
        conn.execute("UPDATE lex_stats SET docs = docs + 7")
        conn.execute("UPDATE schema_version SET version = 2")
    old = PostgresStore(postgres_url(), schema=schema)
    old._ready = True
    assert old.search_lexical("ns", query_terms("trek psychology")) == []  # before the migration: missed
    old.close()
    store = PostgresStore(postgres_url(), schema=schema)
    store.setup()
    for query, hits in fresh.items():
        again = store.search_lexical("ns", query_terms(query), limit=20)
        assert [h.id for h in again] == [h.id for h in hits], query
        np.testing.assert_allclose([h.score for h in again], [h.score for h in hits], rtol=1e-9, err_msg=query)
    assert [h.id for h in store.search_lexical("ns", query_terms("trek psychology"))] == [recs[9].id]
    store.close()

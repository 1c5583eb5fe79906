"""The SQLite store's HNSW channel (retain.store.sqlite_ann): used above its threshold only, one graph
per namespace, kept up to date by local writes, persisted beside the file, and rebuilt (with exact
answers meanwhile) when stale, deleted or corrupted."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rare_terms_plan import check_rare_terms_first
from retain.errors import InvalidInput
from retain.record import MemoryRecord, Tier, new_id
from retain.store import SQLiteStore
from retain.store.filters import RecordFilter
from retain.store.sqlite_ann import AnnConfig, exact_scan

DIM = 32
CONFIG = AnnConfig(min_records=300, candidates=50)


def _records(n: int, namespace: str, seed: int) -> list[MemoryRecord]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return [
        MemoryRecord(id=new_id(), namespace=namespace, content=f"note {i} {namespace}", embedding=v, encoder="t")
        for i, v in enumerate(vecs)
    ]


def _exact(records: list[MemoryRecord], query: np.ndarray, k: int) -> list[str]:
    matrix = np.stack([np.asarray(r.embedding) for r in records])
    order = np.argsort(-(matrix @ query), kind="stable")[:k]
    return [records[i].id for i in order]


def _open(path: Path) -> SQLiteStore:
    store = SQLiteStore(path, ann=CONFIG)
    store.setup()
    return store


def _query(seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return q / np.linalg.norm(q)


@pytest.fixture
def built(tmp_path: Path) -> tuple[SQLiteStore, list[MemoryRecord]]:
    store = _open(tmp_path / "m.db")
    recs = _records(1000, "big", 1)
    store.put(recs)
    store.search_vector("big", _query(0), limit=10)  # past the threshold: starts the build
    store.wait_for_index()
    store.search_vector("big", _query(0), limit=10)  # installs it
    assert store._ann is not None and store._ann._graphs.get("big") is not None
    return store, recs


def test_below_the_threshold_no_graph_is_made(tmp_path: Path) -> None:
    store = _open(tmp_path / "m.db")
    recs = _records(CONFIG.min_records - 1, "small", 2)
    store.put(recs)
    q = _query(3)
    assert [h.id for h in store.search_vector("small", q, limit=10)] == _exact(recs, q, 10)
    store.wait_for_index()
    assert store._ann is not None and store._ann.rebuilds == 0
    assert not (tmp_path / "m.db.ann").exists()
    store.close()


def test_the_graph_answers_with_high_recall_and_exact_scores(built: tuple[SQLiteStore, list[MemoryRecord]]) -> None:
    store, recs = built
    by_id = {r.id: r for r in recs}
    recalls = []
    for seed in range(20):
        q = _query(100 + seed)
        hits = store.search_vector("big", q, limit=10)
        recalls.append(len({h.id for h in hits} & set(_exact(recs, q, 10))) / 10)
        for h in hits:  # rescored by the stored float32 vector, not the int8 graph
            assert h.score == pytest.approx(float(np.asarray(by_id[h.id].embedding) @ q), abs=1e-5)
    assert np.mean(recalls) >= 0.95
    store.close()


def test_a_graph_never_crosses_namespaces(built: tuple[SQLiteStore, list[MemoryRecord]]) -> None:
    store, recs = built
    small = _records(5, "small", 4)
    store.put(small)
    q = np.asarray(recs[0].embedding, dtype=np.float32)  # the big namespace's own vector
    assert {h.id for h in store.search_vector("small", q, limit=10)} == {r.id for r in small}
    assert {h.id for h in store.search_vector("big", q, limit=10)} <= {r.id for r in recs}
    assert store.search_vector("empty", q, limit=10) == []
    store.close()


def test_local_writes_update_the_graph_without_a_rebuild(built: tuple[SQLiteStore, list[MemoryRecord]]) -> None:
    store, recs = built
    assert store._ann is not None
    q = _query(7)
    new = MemoryRecord(id=new_id(), namespace="big", content="new", embedding=q, encoder="t")
    store.put([new])
    assert store.search_vector("big", q, limit=3)[0].id == new.id
    top = store.search_vector("big", q, limit=3)[1].id
    store.delete("big", [top])
    assert top not in {h.id for h in store.search_vector("big", q, limit=20)}
    moved = replace(recs[5], embedding=-q)  # updated in place: found where it now is
    store.put([moved])
    assert store.search_vector("big", -q, limit=1)[0].id == moved.id
    hot = store.search_vector("big", q, limit=5, filter=RecordFilter(tiers=(Tier.ARCHIVE,)))
    assert hot == []  # the filter applies to the graph's candidates
    assert store._ann.rebuilds == 1
    store.close()


Built = tuple[SQLiteStore, list[MemoryRecord]]


def test_the_graph_is_persisted_and_mapped_on_open(built: Built, tmp_path: Path) -> None:
    store, _ = built
    q = _query(8)
    new = MemoryRecord(id=new_id(), namespace="big", content="new", embedding=q, encoder="t")
    store.put([new])
    store.search_vector("big", q, limit=1)
    store.close()  # saves the graph with the write applied
    again = _open(tmp_path / "m.db")
    assert again.search_vector("big", q, limit=1)[0].id == new.id
    assert again._ann is not None and again._ann.rebuilds == 0 and again._ann._graphs["big"].view
    again.close()


@pytest.mark.parametrize("damage", ["delete", "corrupt", "truncate"])
def test_a_damaged_graph_file_is_rebuilt_while_searches_stay_exact(
    built: tuple[SQLiteStore, list[MemoryRecord]], tmp_path: Path, damage: str
) -> None:
    store, recs = built
    store.close()
    (graph_file,) = (tmp_path / "m.db.ann").glob("*.usearch")
    if damage == "delete":
        graph_file.unlink()
    elif damage == "corrupt":
        data = bytearray(graph_file.read_bytes())
        data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
        graph_file.write_bytes(bytes(data))
    else:
        graph_file.write_bytes(graph_file.read_bytes()[:100])
    again = _open(tmp_path / "m.db")
    assert again._ann is not None
    for seed in range(5):  # exact while the graph is rebuilt
        q = _query(200 + seed)
        assert [h.id for h in again.search_vector("big", q, limit=10)] == _exact(recs, q, 10)
        assert "big" not in again._cache  # streamed by SQL: the namespace's matrix is never held
    assert again._ann.rebuilds == 1
    again.wait_for_index()
    again.search_vector("big", _query(0), limit=10)
    assert again._ann._graphs.get("big") is not None
    again.close()


def test_another_connections_write_makes_the_graph_stale(built: Built, tmp_path: Path) -> None:
    store, recs = built
    other = _open(tmp_path / "m.db")
    q = _query(9)
    new = MemoryRecord(id=new_id(), namespace="big", content="new", embedding=q, encoder="t")
    other.put([new])
    hits = store.search_vector("big", q, limit=10)
    assert [h.id for h in hits] == _exact([*recs, new], q, 10)  # exact: the graph is stale
    assert store._ann is not None and store._ann.rebuilds == 2
    store.wait_for_index()
    assert store.search_vector("big", q, limit=1)[0].id == new.id
    other.close()
    store.close()


def test_the_in_memory_store_always_scans_exactly() -> None:
    store = SQLiteStore(":memory:", ann=CONFIG)
    store.setup()
    assert not store.supports_ann
    store.close()


def test_the_large_namespace_lexical_plan_ranks_rare_terms_and_keeps_to_its_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("retain.store.sqlite_lexical.COMMON_FLOOR", 0)  # prune at this small size
    store = _open(tmp_path / "m.db")
    recs = _records(CONFIG.min_records + 50, "big", 5)
    recs = [replace(r, content=f"common words {'zebra' if i % 100 == 0 else 'plain'}") for i, r in enumerate(recs)]
    store.put(recs)
    check_rare_terms_first(
        store, recs, MemoryRecord(id=new_id(), namespace="small", content="common zebra", encoder="t")
    )
    store.close()


def test_the_lexical_plan_reads_term_counts_afresh_after_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("retain.store.sqlite_lexical.COMMON_FLOOR", 0)
    store = _open(tmp_path / "m.db")
    recs = _records(CONFIG.min_records + 50, "big", 5)
    recs = [replace(r, content=f"common words {'zebra' if i % 100 == 0 else 'plain'}") for i, r in enumerate(recs)]
    store.put(recs)
    assert len(store.search_lexical("big", ["common", "zebra"], limit=1000)) == 4  # zebra is rare: it decides
    more = [replace(r, id=new_id(), content="zebra stripes") for r in _records(300, "big", 6)]
    store.put(more)  # zebra is now in half the records: neither term is rarer, both rank
    assert len(store.search_lexical("big", ["common", "zebra"], limit=1000)) == len(recs) + len(more)
    other = SQLiteStore(tmp_path / "m.db", ann=CONFIG)
    other.setup()
    other.delete("big", [r.id for r in more])  # another connection's commit: counts read afresh too
    other.close()
    assert len(store.search_lexical("big", ["common", "zebra"], limit=1000)) == 4
    store.close()


def test_dense_hits_read_in_full_are_never_handed_out_stale(built: Built, tmp_path: Path) -> None:
    store, recs = built
    by_id = {r.id: r for r in recs}
    hits = store.search_vector("big", _query(3), limit=5)
    got = store.get("big", [h.id for h in hits])  # decoded from the rows the search read
    assert [g.id for g in got] == [h.id for h in hits]
    assert all(g.content == by_id[g.id].content and np.array_equal(g.embedding, by_id[g.id].embedding) for g in got)
    store.put([replace(got[0], content="changed here")])  # a local write
    assert store.get("big", [got[0].id])[0].content == "changed here"
    hits = store.search_vector("big", _query(3), limit=5)
    other = SQLiteStore(tmp_path / "m.db", ann=CONFIG)
    other.setup()
    other.put([replace(other.get("big", [hits[1].id])[0], content="changed there")])  # another connection
    other.close()
    assert store.get("big", [hits[1].id])[0].content == "changed there"


def test_newest_first_listings_walk_the_namespace_to_their_limit(tmp_path: Path) -> None:
    """A listing with a limit in write order is planned on the namespace index in rowid order (it stops
    at the limit), not on the tier index (which would sort every hot record of the namespace)."""
    store = _open(tmp_path / "m.db")
    store.put(_records(50, "big", 6))
    plans: list[str] = []
    store._conn.set_trace_callback(plans.append)
    ids = store.list_ids("big", RecordFilter(), limit=3, order="recent")
    store._conn.set_trace_callback(None)
    assert len(ids) == 3
    (sql,) = [p for p in plans if p.startswith("SELECT id FROM records")]
    detail = " ".join(str(r[3]) for r in store._conn.execute("EXPLAIN QUERY PLAN " + sql))
    assert "records_ns " in detail + " " and "TEMP B-TREE" not in detail
    store.close()


def test_build_index_builds_once_after_a_bulk_ingest_without_a_search(tmp_path: Path) -> None:
    store = _open(tmp_path / "m.db")
    recs = _records(1000, "big", 1)
    for start in range(0, 1000, 100):  # a bulk ingest in batches: no graph, no build yet
        store.put(recs[start : start + 100])
    store.put(_records(10, "small", 2))
    assert store._ann is not None and store._ann.rebuilds == 0
    store.build_index("small")  # below the threshold: nothing to build
    store.build_index("big")
    store.build_index("big")  # one build running: not started twice
    store.wait_for_index()
    assert store._ann.rebuilds == 1 and not store._ann.active("small")
    q = _query(5)
    hits = store.search_vector("big", q, limit=10)
    assert store._ann._graphs.get("big") is not None and "big" not in store._cache
    assert len({h.id for h in hits} & set(_exact(recs, q, 10))) >= 8
    assert len(list((tmp_path / "m.db.ann").glob("*.usearch"))) == 1  # persisted once built
    store.close()


def test_the_streamed_exact_scan_matches_the_in_memory_one(tmp_path: Path) -> None:
    recs = _records(700, "ns", 3)
    recs[10] = replace(recs[10], embedding=recs[3].embedding)  # a tie: write order decides
    recs[20] = replace(recs[20], tier=Tier.ARCHIVE)
    plain = SQLiteStore(tmp_path / "plain.db", ann=None)  # the in-memory exact scan
    plain.setup()
    plain.put(recs)
    queries = np.stack([np.asarray(recs[3].embedding), _query(1), _query(2), np.zeros(DIM)]).astype(np.float32)
    for flt in (RecordFilter(tiers=None), RecordFilter(tiers=(Tier.DYNAMIC,))):
        want = [[(h.id, round(h.score, 5)) for h in hits] for hits in plain.search_vectors("ns", queries, flt, 12)]
        got = exact_scan(plain._conn, "ns", queries * 3, flt, 12)  # unnormalised queries: normalised there
        assert [[(h.id, round(h.score, 5)) for h in hits] for hits in got] == want
    with pytest.raises(InvalidInput):
        exact_scan(plain._conn, "ns", np.ones((1, DIM + 1), dtype=np.float32), RecordFilter(), 5)
    plain.close()

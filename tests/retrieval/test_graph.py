"""The memory graph (retain.retrieval.graph): edges on write, refusals, expansion, importance propagation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from retain.config import GraphConfig, MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput, RecordNotFound
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.retrieval.graph import graph_importance, personalized_pagerank
from retain.store import EdgeType, Store

StoreFactory = Callable[[Path], Store]

NS = "trip-42"


@pytest.fixture
def mem(make_store: StoreFactory, tmp_path: Path) -> Iterator[Memory]:
    """Supersede-on-add off (so near-identical notes stay separate records), both backends."""
    m = Memory(store=make_store(tmp_path / "g"), encoder=HashingEncoder(64), config=MemoryConfig(supersede=False))
    yield m
    m.close()


def typed(m: Memory, rid: str, kind: EdgeType, direction: str = "out") -> list[str]:
    other = "dst" if direction == "out" else "src"
    return [getattr(e, other) for e in m.edges(rid, namespace=NS, types=[kind], direction=direction)]


def audit_ops(m: Memory, namespace: str = NS) -> list[str]:
    return [e["op"] for e in m.store.audit_log(namespace)]


# --- edges on write ---------------------------------------------------------------------------


def test_next_edges_follow_seq_within_a_segment_and_add_order_without_seq(mem: Memory) -> None:
    s0 = mem.add("we land at noon", namespace=NS, segment="d1", seq=0)
    s2 = mem.add("hotel check-in is at three", namespace=NS, segment="d1", seq=2)
    other = mem.add("unrelated chat on another day", namespace=NS, segment="d2", seq=1)
    s1 = mem.add("then a taxi to the hotel", namespace=NS, segment="d1", seq=1)  # arrives late
    assert typed(mem, s0, EdgeType.NEXT) == [s1]
    assert typed(mem, s1, EdgeType.NEXT) == [s2]
    assert typed(mem, other, EdgeType.NEXT) == [] and typed(mem, other, EdgeType.NEXT, "in") == []

    a = mem.add("first loose note about kayaks", namespace="loose")
    b, c = mem.add_many(
        [NewMemory("second loose note about tents"), NewMemory("third loose note about stoves")], namespace="loose"
    )
    pairs = {(e.src, e.dst) for e in mem.store.edges("loose", types=[EdgeType.NEXT])}
    assert pairs == {(a, b), (b, c)}


def test_supersede_on_add_and_update_write_supersedes_edges(make_store: StoreFactory, tmp_path: Path) -> None:
    m = Memory(store=make_store(tmp_path / "s"), encoder=HashingEncoder(64))
    old = m.add("My preferred name is Sam.", namespace=NS)
    new = m.add("Correction: my preferred name is Alex.", namespace=NS)
    assert m.get(new, namespace=NS).supersedes == old  # the conflict rules linked them
    assert typed(m, new, EdgeType.SUPERSEDES) == [old]
    newer = m.update(new, "My preferred name is Lex.", namespace=NS)
    assert typed(m, newer, EdgeType.SUPERSEDES) == [new]
    assert typed(m, new, EdgeType.SUPERSEDES, "in") == [newer]
    m.close()


def test_same_entity_links_to_the_most_recent_records_naming_it(make_store: StoreFactory, tmp_path: Path) -> None:
    config = MemoryConfig(supersede=False, graph=GraphConfig(same_entity_limit=2))
    m = Memory(store=make_store(tmp_path / "e"), encoder=HashingEncoder(64), config=config)
    older = [m.add(f"Caroline Smith mentioned topic {w}.", namespace=NS) for w in ("alpha", "beta", "gamma")]
    bystander = m.add("The weather in Lisbon was mild.", namespace=NS)
    twin_elsewhere = m.add("Caroline Smith mentioned topic delta.", namespace="elsewhere")
    new = m.add("Ask Caroline Smith about the hotel.", namespace=NS)
    linked = typed(m, new, EdgeType.SAME_ENTITY)
    assert sorted(linked) == sorted(older[1:])  # the two most recent of three
    assert bystander not in linked and twin_elsewhere not in linked
    (edge,) = [e for e in m.edges(new, namespace=NS, types=["same_entity"]) if e.dst == older[2]]
    assert edge.metadata == {"shared": 1}
    m.close()


def test_derived_from_edges_and_refusals_write_nothing(mem: Memory) -> None:
    a = mem.add("The museum closes at six.", namespace=NS)
    b = mem.add("We arrive at five.", namespace=NS)
    plan = mem.add("Plan: go straight to the museum.", namespace=NS, derived_from=[a, b])
    assert sorted(typed(mem, plan, EdgeType.DERIVED_FROM)) == sorted([a, b])

    foreign = mem.add("The museum closes at six.", namespace="other-trip")
    gone = mem.add("A note that will be deleted.", namespace=NS)
    mem.delete(gone, namespace=NS)
    before_count, before_log = len(mem.records(namespace=NS)), mem.store.audit_log()
    for bad in (foreign, gone, "no-such-id"):
        with pytest.raises(InvalidInput, match="not a record of namespace"):
            mem.add("Plan B: skip the museum.", namespace=NS, derived_from=[a, bad])
    with pytest.raises(InvalidInput, match="derived_from"):
        mem.add("Plan C.", namespace=NS, derived_from=a)  # type: ignore[arg-type]  # a bare string
    assert len(mem.records(namespace=NS)) == before_count
    assert mem.store.audit_log() == before_log
    assert typed(mem, a, EdgeType.DERIVED_FROM, "in") == [plan]


def test_derived_from_of_an_already_held_text_links_the_held_record(mem: Memory) -> None:
    a = mem.add("The ferry leaves at seven.", namespace=NS)
    b = mem.add("Breakfast is at six.", namespace=NS)
    assert mem.add_many([NewMemory("Breakfast is at six.", derived_from=(a,))], namespace=NS) == [b]
    assert typed(mem, b, EdgeType.DERIVED_FROM) == [a]


def test_link_is_audited_and_refuses_cross_namespace_deleted_unknown_and_bad_type(mem: Memory) -> None:
    x = mem.add("Flights are booked.", namespace=NS)
    y = mem.add("Visa paperwork is done.", namespace=NS)
    edge = mem.link(x, y, "supports", namespace=NS, weight=2.0, actor="agent")
    assert (edge.src, edge.dst, edge.type, edge.weight) == (x, y, EdgeType.SUPPORTS, 2.0)
    entry = mem.store.audit_log(NS)[-1]
    assert entry["op"] == "link" and entry["record_id"] == x and entry["actor"] == "agent"
    assert entry["details"] == {"dst": y, "type": "supports", "weight": 2.0}

    twin = mem.add("Visa paperwork is done.", namespace="other")
    log = mem.store.audit_log()
    for args, message in [
        ((x, twin, "supports"), "not a record of namespace"),
        ((twin, x, "supports"), "not a record of namespace"),
        ((x, "missing", "elaborates"), "not a record of namespace"),
        ((x, x, "elaborates"), "self-loop"),
        ((x, y, "causes"), "unknown type"),
    ]:
        with pytest.raises(InvalidInput, match=message):
            mem.link(*args, namespace=NS)
    with pytest.raises(InvalidInput, match="weight"):
        mem.link(x, y, "elaborates", namespace=NS, weight=float("nan"))
    assert mem.store.audit_log() == log
    assert [e.type for e in mem.edges(x, namespace=NS, direction="out")] == [EdgeType.NEXT, EdgeType.SUPPORTS]
    assert mem.store.edges("other") == []
    with pytest.raises(RecordNotFound):
        mem.edges(twin, namespace=NS)


def test_delete_purges_every_edge_of_the_record(mem: Memory) -> None:
    a = mem.add("Caroline Smith booked the tickets.", namespace=NS)
    b = mem.add("Caroline Smith prefers the aisle seat.", namespace=NS, derived_from=[a])
    c = mem.add("Pack the chargers.", namespace=NS)
    mem.link(c, a, "elaborates", namespace=NS)
    assert {e.type for e in mem.edges(a, namespace=NS)} == {
        EdgeType.NEXT,
        EdgeType.DERIVED_FROM,
        EdgeType.SAME_ENTITY,
        EdgeType.ELABORATES,
    }
    mem.delete(a, namespace=NS)
    assert all(a not in (e.src, e.dst) for e in mem.store.edges(NS))
    assert [(e.src, e.dst) for e in mem.store.edges(NS)] == [(b, c)]  # the b -> c stream edge stays


# --- expansion --------------------------------------------------------------------------------


def _trip(m: Memory, namespace: str) -> tuple[str, str]:
    x = m.add("The kayak rental opens at nine.", namespace=namespace)
    for i, word in enumerate(("river", "lake", "coast", "bay", "harbour")):
        m.add(f"Kayak rental tip {i}: the {word} is calm.", namespace=namespace)
    y = m.add("Bring sunscreen and water.", namespace=namespace)
    return x, y


def test_expansion_pulls_in_neighbours_with_decayed_scores(mem: Memory) -> None:
    x, y = _trip(mem, NS)
    mem.link(x, y, "elaborates", namespace=NS, weight=3.0)
    plain = mem.search("kayak rental opens at nine", namespace=NS, k=3, config="rrf")
    assert plain[0].record.id == x and y not in [h.record.id for h in plain]
    assert mem.search("kayak rental opens at nine", namespace=NS, k=3, config="rrf", expand=0) == plain

    expanded = mem.search("kayak rental opens at nine", namespace=NS, k=3, config="rrf", expand=1)
    assert len(expanded) == 3 and [h.rank for h in expanded] == [1, 2, 3]
    (pulled,) = [h for h in expanded if h.via_edge is not None]
    assert pulled.record.id == y and pulled.via_edge == "elaborates" and pulled.via == x
    assert pulled.score == pytest.approx(plain[0].score * 0.5 * 3.0)
    assert pulled.scores["expansion"] == pytest.approx(1.5) and pulled.scores["parent"] == plain[0].score
    assert expanded[0].record.id == y  # 1.5 x the parent's score ranks first
    assert pulled.to_dict()["via_edge"] == "elaborates"


def test_expansion_never_crosses_namespaces(mem: Memory) -> None:
    ax, ay = _trip(mem, "alpha")
    bx, by = _trip(mem, "beta")
    mem.link(ax, ay, "elaborates", namespace="alpha", weight=3.0)
    for src, dst, ns in [(bx, ay, "beta"), (ax, by, "alpha"), (bx, ay, "alpha"), (ax, by, "beta")]:
        with pytest.raises(InvalidInput, match="not a record of namespace"):
            mem.link(src, dst, "elaborates", namespace=ns, weight=3.0)
    plain = mem.search("kayak rental opens at nine", namespace="beta", k=3, config="rrf")
    expanded = mem.search("kayak rental opens at nine", namespace="beta", k=3, config="rrf", expand=7)
    assert all(h.record.namespace == "beta" for h in expanded)
    assert ay not in {h.record.id for h in expanded} and by not in {h.record.id for h in expanded}
    assert [h.record.id for h in expanded if h.via_edge is None] == [h.record.id for h in plain][: len(expanded)]
    assert all(h.via_edge == "next" for h in expanded if h.via_edge is not None)  # beta's own stream only


def test_expansion_honours_filters_and_bad_expand(mem: Memory) -> None:
    x, y = _trip(mem, NS)
    mem.link(x, y, "elaborates", namespace=NS, weight=3.0)
    mem.update(y, "Bring sunscreen, hats and water.", namespace=NS)  # y is history now
    hits = mem.search("kayak rental opens at nine", namespace=NS, k=3, config="rrf", expand=1)
    assert y not in {h.record.id for h in hits}
    with pytest.raises(InvalidInput, match="expand"):
        mem.search("kayak", namespace=NS, expand=-1)


# --- importance -------------------------------------------------------------------------------


def _reference_ppr(n: int, edges: list[tuple[int, int, float]], p: np.ndarray, alpha: float) -> np.ndarray:
    """Dense power iteration, written out: dangling mass returns to p."""
    w = np.zeros((n, n))
    for i, j, wt in edges:
        w[i, j] += wt
    p = p / p.sum()
    x = p.copy()
    for _ in range(10_000):
        nxt = np.zeros(n)
        for i in range(n):
            out = w[i].sum()
            nxt += alpha * (w[i] / out * x[i] if out > 0 else x[i] * p)
        nxt += (1 - alpha) * p
        if np.abs(nxt - x).sum() < 1e-14:
            break
        x = nxt
    return nxt


def test_personalized_pagerank_matches_hand_computation_networkx_and_dense_reference() -> None:
    # Two nodes, one undirected edge, all teleport to node 0: x0 = 0.15 + 0.85 x1, x1 = 0.85 x0.
    two = personalized_pagerank(
        2, np.array([0, 1]), np.array([1, 0]), np.array([1.0, 1.0]), np.array([1.0, 0.0]), alpha=0.85
    )
    assert two == pytest.approx([0.15 / (1 - 0.85**2), 0.85 * 0.15 / (1 - 0.85**2)], abs=1e-9)

    edges = [(0, 1, 1.0), (1, 2, 2.0), (2, 0, 0.5), (2, 3, 1.0), (4, 2, 3.0), (1, 4, 1.0)]  # 3 is dangling
    seeds = np.array([0.0, 2.0, 0.0, 0.0, 1.0])
    src, dst, wt = (np.array(c) for c in zip(*edges, strict=True))
    got = personalized_pagerank(5, src.astype(np.intp), dst.astype(np.intp), wt.astype(float), seeds, alpha=0.85)
    assert got == pytest.approx(_reference_ppr(5, edges, seeds, 0.85), abs=1e-8)
    g = nx.DiGraph()
    g.add_nodes_from(range(5))
    g.add_weighted_edges_from(edges)
    ref = nx.pagerank(g, alpha=0.85, personalization=dict(enumerate(seeds)), weight="weight", tol=1e-12, max_iter=1000)
    assert got == pytest.approx([ref[i] for i in range(5)], abs=1e-8)
    assert got.sum() == pytest.approx(1.0)


def test_graph_importance_over_the_store_matches_networkx(mem: Memory) -> None:
    ids = [mem.add(f"note number {w}", namespace=NS) for w in ("one", "two", "three", "four")]  # next: a chain
    mem.link(ids[0], ids[3], "supports", namespace=NS, weight=2.0)
    mem.add("an island in another namespace", namespace="elsewhere")
    scores = graph_importance(mem.store, NS, {ids[0]: 1.0})
    g = nx.Graph()
    for e in mem.store.edges(NS):
        g.add_edge(e.src, e.dst, weight=e.weight)
    ref = nx.pagerank(g, alpha=0.85, personalization={ids[0]: 1.0}, weight="weight", tol=1e-12, max_iter=1000)
    assert set(scores) == set(ids)
    assert scores == pytest.approx(ref, abs=1e-8)
    with pytest.raises(InvalidInput, match="not records of namespace"):
        graph_importance(mem.store, "elsewhere", {ids[0]: 1.0})
    with pytest.raises(InvalidInput, match="positive weight"):
        graph_importance(mem.store, NS, {ids[0]: 0.0})


def test_propagate_importance_uses_feedback_is_bounded_and_audited(mem: Memory) -> None:
    assert mem.propagate_importance(NS) == {}  # nothing used yet: nothing to propagate
    a = mem.add("Caroline Smith booked the tickets.", namespace=NS, importance=0.2)
    b = mem.add("Caroline Smith prefers the aisle seat.", namespace=NS, importance=0.9)
    lone = mem.add("A note on its own.", namespace="solo", importance=0.3)
    c = mem.add("Unconnected thought about soup.", namespace=NS, segment="elsewhere", importance=0.4)
    assert mem.edges(c, namespace=NS) == []
    assert mem.propagate_importance(NS) == {} and "importance" not in audit_ops(mem)

    mem.feedback(a, namespace=NS, used=True)  # reinforcement: access_count 1 -> seed
    changed = mem.propagate_importance(NS, actor="agent")
    assert set(changed) == {a, b}
    assert changed[a] == pytest.approx(0.5 * 0.2 + 0.5 * 1.0)  # a holds the largest PPR score
    assert 0.0 <= changed[b] <= 1.0 and changed[b] != pytest.approx(0.9)
    assert mem.get(c, namespace=NS).importance == 0.4 and mem.get(lone, namespace="solo").importance == 0.3
    entries = [e for e in mem.store.audit_log(NS) if e["op"] == "importance"]
    assert {e["record_id"] for e in entries} == {a, b} and all(e["actor"] == "agent" for e in entries)
    by_id = {e["record_id"]: e["details"] for e in entries}
    assert by_id[a]["before"] == 0.2 and by_id[a]["after"] == pytest.approx(changed[a], abs=1e-6)
    assert mem.get(b, namespace=NS).importance == pytest.approx(changed[b])
    for _ in range(5):  # repeated propagation stays in [0, 1]
        again = mem.propagate_importance(NS, seeds={a: 1.0, b: 3.0})
        assert all(0.0 <= v <= 1.0 for v in again.values())

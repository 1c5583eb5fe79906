"""The memory graph: typed edges between the records of one namespace.

Edges (:class:`~retain.store.Edge`, ``src -> dst``) are stored by the store beside the records
and vanish with them. This module decides which edges a write creates, expands search hits along
edges, and propagates importance over the graph:

* **On write** (:func:`edges_on_add`, called by :meth:`retain.Memory.add_many` inside the add's
  transaction): ``next`` from a record's stream predecessor (same segment, ``seq - 1``; records
  without ``seq``: the previous add of the namespace without ``seq`` in the same segment; the parts
  of a split text in order); ``supersedes`` new -> old when supersede-on-add (or
  :meth:`retain.Memory.update`) links two versions; ``derived_from`` new -> each id the caller
  passed as ``derived_from`` (the records the reasoning step used); ``same_entity`` new -> up to
  ``GraphConfig.same_entity_limit`` most recent current records naming an entity it names
  (:func:`~retain.text.entities.extract_entities`).
* **Expansion** (:func:`expand_hits`): the top ``expand`` hits pull in their one-hop neighbours,
  score = parent score * decay * edge weight.
* **Importance** (:func:`graph_importance`, :func:`propagate_importance`): personalised PageRank.

Every read and write names one namespace; the store only returns edges of that namespace, and
refuses an edge whose endpoints are not both records of it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

import retain.store.ops as store_ops
from retain.config import DEFAULT_GRAPH_CONFIG, GraphConfig
from retain.errors import InvalidInput, RecordNotFound
from retain.record import MemoryRecord, utcnow, validate_namespace
from retain.safety.canary import is_canary
from retain.store import AuditEntry, Edge, EdgeType, RecordFilter, Store, retry_on_conflict
from retain.text.entities import extract_entities
from retain.text.lexical import query_terms

if TYPE_CHECKING:
    from retain.retrieval.fusion import Hit

__all__ = [
    "check_derived",
    "check_expand",
    "edges_on_add",
    "expand_hits",
    "graph_importance",
    "link",
    "matches_filter",
    "neighbours",
    "personalized_pagerank",
    "propagate_importance",
]


# --- entities ---------------------------------------------------------------------------------


def _entity_terms(key: str) -> list[str]:
    return query_terms(key.split(":", 1)[1].replace("#", " "), drop_stopwords=False)


# --- edges on write ---------------------------------------------------------------------------


def edges_on_add(
    store: Store,
    namespace: str,
    fresh: Sequence[MemoryRecord],
    *,
    derived: Mapping[str, Sequence[str]] | None = None,
    config: GraphConfig = DEFAULT_GRAPH_CONFIG,
) -> list[Edge]:
    """The edges an add creates for ``fresh`` (records about to be written, in order, with their
    final ``supersedes`` links), read against the store before the write.

    ``derived`` maps a new (or deduplicated) record id to the ids its reasoning step used; those
    ids are not checked here: the store refuses edges to records outside the namespace and the
    whole add rolls back. See the module docstring for the rules. Returns edges in a stable order.
    """
    now = utcnow()
    edges: list[Edge] = [
        Edge(namespace, rid, dst, EdgeType.DERIVED_FROM, created_at=now)
        for rid, used in (derived or {}).items()
        for dst in dict.fromkeys(used)
    ]
    if not config.edges_on_write or not fresh:
        return edges
    edges += [
        Edge(namespace, r.id, r.supersedes, EdgeType.SUPERSEDES, created_at=now, metadata={"on": "add"})
        for r in fresh
        if r.supersedes
    ]
    edges += [Edge(namespace, a, b, EdgeType.NEXT, created_at=now) for a, b in _next_pairs(store, namespace, fresh)]
    edges += _same_entity(store, namespace, fresh, config, now)
    seen: set[tuple[str, str, EdgeType]] = set()
    out = []
    for e in edges:
        if (e.src, e.dst, e.type) not in seen and e.src != e.dst:
            seen.add((e.src, e.dst, e.type))
            out.append(e)
    return out


def _next_pairs(store: Store, namespace: str, fresh: Sequence[MemoryRecord]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    by_group: dict[str, list[MemoryRecord]] = {}
    for r in fresh:
        group = r.metadata.get("split_group")
        if isinstance(group, str):
            by_group.setdefault(group, []).append(r)
    for parts in by_group.values():
        parts.sort(key=lambda r: int(r.metadata.get("part", 0)))
        pairs += [(a.id, b.id) for a, b in itertools.pairwise(parts)]
    heads = [r for r in fresh if int(r.metadata.get("part", 0)) == 0]
    tails = {str(r.metadata.get("split_group", r.id)): r for r in fresh}  # last part of each text
    sequenced = [r for r in heads if r.seq is not None]
    if sequenced:
        seqs = {s for r in sequenced if r.seq is not None for s in (r.seq - 1, r.seq + 1) if s >= 0}
        stored = store.list_records(namespace, RecordFilter(tiers=None, seqs=tuple(sorted(seqs)))) if seqs else []
        at: dict[tuple[str | None, int], MemoryRecord] = {}
        for r in [*stored, *sequenced]:  # later writes win
            if r.seq is not None:
                at[(r.segment, r.seq)] = r
        for r in sequenced:
            assert r.seq is not None
            before = at.get((r.segment, r.seq - 1))
            after = at.get((r.segment, r.seq + 1))
            if before is not None:
                last = tails.get(str(before.metadata.get("split_group", before.id)), before)
                pairs.append((last.id, r.id))
            if after is not None and after.id not in {x.id for x in sequenced}:
                pairs.append((tails.get(str(r.metadata.get("split_group", r.id)), r).id, after.id))
    loose = [r for r in heads if r.seq is None]
    if loose:
        recent = store.list_records(namespace, RecordFilter(tiers=None), limit=50, order="recent")
        last_in: dict[str | None, MemoryRecord] = {}
        for r in reversed(recent):
            if r.seq is None and not is_canary(r):
                last_in[r.segment] = r
        for r in loose:
            prev = last_in.get(r.segment)
            if prev is not None:
                tail = tails.get(str(prev.metadata.get("split_group", prev.id)), prev)
                pairs.append((tail.id, r.id))
            last_in[r.segment] = tails.get(str(r.metadata.get("split_group", r.id)), r)
    return pairs


def _same_entity(
    store: Store, namespace: str, fresh: Sequence[MemoryRecord], config: GraphConfig, now: datetime
) -> list[Edge]:
    if config.same_entity_limit == 0:
        return []
    edges: list[Edge] = []
    earlier: list[tuple[MemoryRecord, frozenset[str]]] = []  # fresh records of this batch, in order
    memo: dict[str, list[tuple[MemoryRecord, frozenset[str]]]] = {}
    for rec in fresh:
        if is_canary(rec):
            continue
        names = extract_entities(rec.content)
        if not names:
            continue
        shared: dict[str, tuple[MemoryRecord, int]] = {}
        for key in sorted(names):
            if key not in memo:
                terms = _entity_terms(key)
                hits = store.search_lexical(namespace, terms, RecordFilter(tiers=None), config.same_entity_candidates)
                found = [r for r in store.get(namespace, [h.id for h in hits]) if not is_canary(r)]
                memo[key] = [(r, extract_entities(r.content)) for r in found]
            for other, keys in [*memo[key], *earlier]:
                if key in keys and other.id != rec.id:
                    count = shared.get(other.id, (other, 0))[1]
                    shared[other.id] = (other, count + 1)
        ranked = sorted(shared.values(), key=lambda x: (x[0].created_at, x[0].id), reverse=True)
        for other, count in ranked[: config.same_entity_limit]:
            meta = {"shared": count}  # how many entities; never which (no content in edges)
            edges.append(Edge(namespace, rec.id, other.id, EdgeType.SAME_ENTITY, created_at=now, metadata=meta))
        earlier.append((rec, names))
    return edges


# --- explicit edges ---------------------------------------------------------------------------


def link(
    store: Store,
    src: str,
    dst: str,
    type: EdgeType | str,
    *,
    namespace: str,
    weight: float = 1.0,
    actor: str = "user",
    reason: str = "",
) -> Edge:
    """Write the edge ``src -> dst`` of ``type`` in ``namespace`` with an audit entry "link"
    (details: dst, type, weight; no content), in one transaction. Returns the stored edge.

    Raises:
        InvalidInput: bad namespace, unknown type, non-finite or non-positive weight, a self-loop,
            or an endpoint that is not a record of ``namespace`` (in another namespace, deleted,
            unknown); nothing is written.
    """
    from retain.safety.redaction import scrub

    validate_namespace(namespace)
    edge = Edge(namespace, src, dst, type, weight)  # type: ignore[arg-type]  # check_edge coerces
    entry = AuditEntry(
        namespace,
        "link",
        src,
        actor,
        scrub(reason),
        details={"dst": dst, "type": str(getattr(type, "value", type)), "weight": weight},
    )
    store.batch([store_ops.PutEdges((edge,)), store_ops.AppendAudit(entry)])
    stored = [e for e in store.edges(namespace, [src], direction="out") if e.dst == dst]
    return next(e for e in stored if e.type.value == str(getattr(type, "value", type)))


def neighbours(
    store: Store, namespace: str, id: str, *, types: Sequence[EdgeType | str] | None = None, direction: str = "both"
) -> list[Edge]:
    """Edges touching record ``id`` of ``namespace``, oldest first.

    Raises:
        RecordNotFound: no record ``id`` in ``namespace``.
        InvalidInput: unknown type or direction.
    """
    validate_namespace(namespace)
    if not store.get(namespace, [id]):
        raise RecordNotFound(f"no record {id!r} in namespace {namespace!r}")
    kinds = None if types is None else [_edge_type(t) for t in types]
    return store.edges(namespace, [id], types=kinds, direction=direction)


def _edge_type(value: EdgeType | str) -> EdgeType:
    try:
        return EdgeType(value)
    except ValueError:
        raise InvalidInput(
            f"type: unknown edge type {value!r}; one of {', '.join(t.value for t in EdgeType)}"
        ) from None


# --- retrieval expansion ----------------------------------------------------------------------


def matches_filter(record: MemoryRecord, flt: RecordFilter) -> bool:
    """True when ``record`` passes ``flt`` (the same rules the store applies in searches)."""
    if flt.types is not None and record.type not in flt.types:
        return False
    if flt.tiers is not None and record.tier not in flt.tiers:
        return False
    if flt.segments is not None and record.segment not in flt.segments:
        return False
    if flt.seqs is not None and record.seq not in flt.seqs:
        return False
    if not flt.include_superseded and record.superseded_by is not None:
        return False
    if flt.start is not None and (record.event_time is None or record.event_time < flt.start):
        return False
    return not (flt.end is not None and (record.event_time is None or record.event_time >= flt.end))


def check_expand(expand: object) -> int:
    """``expand`` if it is an int >= 0. Raises InvalidInput otherwise."""
    if isinstance(expand, bool) or not isinstance(expand, int) or expand < 0:
        raise InvalidInput(f"expand: must be an int >= 0, got {expand!r}")
    return expand


def check_derived(value: object, index: int = 0) -> tuple[str, ...]:
    """``derived_from`` as a tuple of record ids. Raises InvalidInput for a bare string, a
    non-sequence, or a non-string / empty id (existence is checked by the store on write)."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence | set | frozenset):
        raise InvalidInput(f"item {index}: derived_from must be a list of record ids, got {type(value).__name__}")
    ids = tuple(value)
    if not all(isinstance(x, str) and x for x in ids):
        raise InvalidInput(f"item {index}: derived_from must hold non-empty record id strings")
    return ids


def expand_hits(
    store: Store,
    namespace: str,
    hits: Sequence[Hit],
    *,
    expand: int,
    k: int,
    flt: RecordFilter,
    decay: float = DEFAULT_GRAPH_CONFIG.decay,
    allow_raw: bool = False,
) -> list[Hit]:
    """Pull the one-hop graph neighbours of the top ``expand`` hits into the results.

    A neighbour not already among ``hits`` scores parent score * ``decay`` * edge weight (the best
    over its parents and edges, either direction); it must pass ``flt`` (tiers, types, superseded,
    time range) and is never a canary. Hits and expanded neighbours are re-ranked together by score
    (higher = more relevant) and cut to ``k``. An expanded hit's breakdown holds ``fused`` (its
    score), ``parent`` (the parent's score) and ``expansion`` (decay * weight); ``Hit.via_edge``
    names the edge type and ``Hit.via`` the parent id. Only edges of ``namespace`` are read and
    only records of ``namespace`` are fetched: expansion never crosses namespaces.

    Raises:
        InvalidInput: ``expand`` not an int >= 0.
    """
    from retain.retrieval.fusion import Hit
    from retain.safety.redaction import redact_record

    check_expand(expand)
    if expand == 0 or not hits:
        return list(hits)
    parents = {h.record.id: h for h in hits[:expand]}
    present = {h.record.id for h in hits}
    best: dict[str, tuple[float, Edge, Hit]] = {}
    for edge in store.edges(namespace, list(parents)):
        if edge.namespace != namespace:  # the store filters already; never trust a cross edge
            continue
        for parent_id, other in ((edge.src, edge.dst), (edge.dst, edge.src)):
            parent = parents.get(parent_id)
            if parent is None or other in present:
                continue
            score = parent.score * decay * edge.weight
            if other not in best or score > best[other][0]:
                best[other] = (score, edge, parent)
    if not best:
        return list(hits)
    records = {
        r.id: r
        for r in store.get(namespace, list(best))
        if r.namespace == namespace and not is_canary(r) and matches_filter(r, flt)
    }
    extra = []
    for rid, (score, edge, parent) in best.items():
        record = records.get(rid)
        if record is None:
            continue
        shown = record if allow_raw else redact_record(record).record
        relevance = parent.relevance * decay * edge.weight  # evidence borrowed from the parent, discounted
        breakdown = {"fused": score, "parent": parent.score, "expansion": decay * edge.weight, "relevance": relevance}
        extra.append(
            Hit(
                record=shown,
                score=score,
                rank=0,
                scores=breakdown,
                via_edge=edge.type.value,
                via=parent.record.id,
                relevance=relevance,
            )
        )
    merged = sorted([*hits, *extra], key=lambda h: -h.score)[:k]  # stable: ties keep hits first
    return [replace(h, rank=i) for i, h in enumerate(merged, start=1)]


# --- importance propagation -------------------------------------------------------------------


def personalized_pagerank(
    n: int,
    src: npt.NDArray[np.intp],
    dst: npt.NDArray[np.intp],
    weight: npt.NDArray[np.float64],
    personalization: npt.NDArray[np.float64],
    *,
    alpha: float = 0.85,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> npt.NDArray[np.float64]:
    """Personalised PageRank by power iteration over a sparse weighted directed graph.

    ``x <- alpha * (P^T x + (dangling mass) * p) + (1 - alpha) * p`` with ``P`` the row-normalised
    weight matrix (``W[i, j]`` summed over parallel edges ``i -> j``) and ``p`` = the normalised
    ``personalization``; the mass of nodes without out-edges is sent back to ``p`` (as networkx's
    ``pagerank`` does). Stops when the L1 change is below ``n * tol``.

    Args:
        n: number of nodes; ``src``, ``dst`` (m,) intp indices in [0, n), ``weight`` (m,) float64 > 0.
        personalization: (n,) float64 >= 0 with a positive sum (the seeds, the teleport vector).
        alpha: damping, the probability of following an edge, in (0, 1).

    Returns: (n,) float64, non-negative, sums to 1; higher = more important.

    Sources: Page, Brin, Motwani & Winograd, "The PageRank citation ranking" (1999); Haveliwala,
    "Topic-sensitive PageRank" (WWW 2002) for the personalised teleport vector.

    Raises:
        InvalidInput: bad alpha, shapes, negative or all-zero personalization.
        RuntimeError: no convergence within ``max_iter`` iterations.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise InvalidInput(f"alpha: must be a number in (0, 1), got {alpha!r}")
    p = np.asarray(personalization, dtype=np.float64)
    if p.shape != (n,) or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise InvalidInput("personalization: (n,) finite weights >= 0 with a positive sum")
    p = p / p.sum()
    w = sp.csr_matrix((np.asarray(weight, dtype=np.float64), (src, dst)), shape=(n, n))
    out = np.asarray(w.sum(axis=1)).ravel()
    dangling = out == 0
    inv = np.divide(1.0, out, out=np.zeros(n), where=~dangling)
    transition_t = (sp.diags(inv) @ w).T.tocsr()
    x = p.copy()
    for _ in range(max_iter):
        previous = x
        x = alpha * (transition_t @ x + previous[dangling].sum() * p) + (1.0 - alpha) * p
        if np.abs(x - previous).sum() < n * tol:
            return np.asarray(x / x.sum(), dtype=np.float64)
    raise RuntimeError(f"personalised PageRank did not converge in {max_iter} iterations")


def graph_importance(
    store: Store,
    namespace: str,
    seeds: Mapping[str, float],
    alpha: float = 0.85,
    *,
    types: Sequence[EdgeType | str] | None = None,
    directed: bool = False,
) -> dict[str, float]:
    """Personalised PageRank (:func:`personalized_pagerank`, scipy.sparse power iteration) over the
    edges of ``namespace``, teleporting to ``seeds`` (record id -> weight >= 0).

    Nodes are the endpoints of the namespace's edges (of ``types``, default all) and the seeds;
    each edge is followed in both directions unless ``directed`` (importance flows from a used
    record to what it was derived from, its stream neighbours, its entity peers and back).
    Returns id -> score (non-negative, sums to 1, higher = more important); records off the graph
    and unseeded are absent (score 0).

    Raises:
        InvalidInput: no seed with a positive weight, a negative or non-finite weight, a seed that
            is not a record of ``namespace``, bad alpha or type.
    """
    validate_namespace(namespace)
    if not isinstance(seeds, Mapping):
        raise InvalidInput(f"seeds: a mapping of record id -> weight, got {type(seeds).__name__}")
    clean = {}
    for rid, value in seeds.items():
        if not isinstance(rid, str):
            raise InvalidInput(f"seeds: keys must be record ids (strings), got {type(rid).__name__}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise InvalidInput(f"seeds: weight of {rid!r} must be a finite number >= 0, got {value!r}")
        if value > 0:
            clean[rid] = float(value)
    if not clean:
        raise InvalidInput("seeds: at least one record with a positive weight is needed")
    held = {r.id for r in store.get(namespace, list(clean))}
    missing = sorted(set(clean) - held)
    if missing:
        raise InvalidInput(f"seeds: {missing[:3]} are not records of namespace {namespace!r}")
    kinds = None if types is None else [_edge_type(t) for t in types]
    edges = store.edges(namespace, types=kinds)
    nodes = list(dict.fromkeys([*clean, *(x for e in edges for x in (e.src, e.dst))]))
    index = {rid: i for i, rid in enumerate(nodes)}
    src = np.array([index[e.src] for e in edges], dtype=np.intp)
    dst = np.array([index[e.dst] for e in edges], dtype=np.intp)
    weight = np.array([e.weight for e in edges], dtype=np.float64)
    if not directed:
        src, dst, weight = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([weight, weight])
    p = np.zeros(len(nodes))
    for rid, value in clean.items():
        p[index[rid]] = value
    scores = personalized_pagerank(len(nodes), src, dst, weight, p, alpha=alpha)
    return {rid: float(scores[i]) for i, rid in enumerate(nodes)}


def propagate_importance(
    store: Store,
    namespace: str,
    *,
    seeds: Mapping[str, float] | None = None,
    alpha: float = 0.85,
    mix: float = 0.5,
    actor: str = "system",
) -> dict[str, float]:
    """Spread importance from used records over the graph and write it into the records.

    Seeds default to each record's ``access_count`` (raised by ``Memory.feedback(used=True)``:
    reinforcement). Scores come from :func:`graph_importance`, are scaled by their maximum to
    [0, 1], and each reached current record's importance becomes
    ``(1 - mix) * importance + mix * scaled`` (a convex combination: stays in [0, 1]). Records the
    propagation does not reach, and superseded versions, are left unchanged. Every change is
    written in one transaction with an audit entry "importance" per record (details: before,
    after, ppr). Returns id -> new importance for the records changed (empty when no record has
    been used yet and no seeds are given: nothing to propagate, nothing written).

    Each record is written back only if still as read (:class:`~retain.store.RequireUnchanged`):
    when another writer deletes, supersedes or moves one in between, nothing is written and the
    propagation runs again on the store as it is now (up to :data:`~retain.store.WRITE_ATTEMPTS`).

    Raises:
        InvalidInput: bad seeds (see :func:`graph_importance`), ``mix`` outside [0, 1].
        WriteConflict: other writers changed the records on every attempt; nothing written.
    """
    validate_namespace(namespace)
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < alpha < 1.0:
        raise InvalidInput(f"alpha: must be a number in (0, 1), got {alpha!r}")
    if isinstance(mix, bool) or not isinstance(mix, int | float) or not 0.0 <= mix <= 1.0:
        raise InvalidInput(f"mix: must be in [0, 1], got {mix!r}")

    def once() -> dict[str, float]:  # a WriteConflict: the next pass propagates over the graph as it is now
        weights = seeds
        if weights is None:
            used = store.list_records(namespace, RecordFilter(tiers=None))
            weights = {r.id: float(r.access_count) for r in used if r.access_count > 0}
            if not weights:
                return {}
        scores = graph_importance(store, namespace, weights, alpha)
        top = max(scores.values())
        reached = [rid for rid, s in scores.items() if s > 0]
        records = store.get(namespace, reached)
        changed: list[MemoryRecord] = []
        guards: list[store_ops.RequireUnchanged] = []
        audit: list[AuditEntry] = []
        for rec in records:
            if rec.superseded_by is not None:
                continue
            scaled = scores[rec.id] / top
            after = min(1.0, max(0.0, (1.0 - mix) * rec.importance + mix * scaled))
            if abs(after - rec.importance) < 1e-9:
                continue
            changed.append(rec.evolve(importance=after))
            # written back whole: a record deleted, superseded or moved by another writer since it was
            # read must not come back (or be made current again) from this copy
            guards.append(store_ops.RequireUnchanged(namespace, rec.id, rec.tier))
            details = {"before": round(rec.importance, 6), "after": round(after, 6), "ppr": round(scores[rec.id], 9)}
            audit.append(
                AuditEntry(
                    namespace, "importance", rec.id, actor, "graph propagation (personalised PageRank)", details=details
                )
            )
        if not changed:
            return {}
        store.put(changed, audit, require=guards)
        return {r.id: r.importance for r in changed}

    return retry_on_conflict(once)

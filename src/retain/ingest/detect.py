"""Supersede detection over a store: which new records update, or conflict with, stored ones.

:func:`find_updates` pools each new record's candidates (dense and BM25 neighbours in the store, the
records before it in the same call, :class:`~retain.ingest.candidates.Earlier`) and applies the
decision of :mod:`retain.ingest.conflict` (the learned model's :func:`~retain.ingest.conflict.decide_all`,
or the rules' :func:`~retain.ingest.conflict.decide`). ``Memory.add`` runs it through
:func:`retain.ingest.supersession.supersede`.
"""

from __future__ import annotations

from collections.abc import Sequence

from retain.ingest.candidates import Earlier, cosine
from retain.ingest.conflict import (
    DEFAULT_POLICY,
    ConflictDecision,
    ConflictJudge,
    ConflictPolicy,
    Relation,
    decide,
    decide_all,
)
from retain.ingest.conflict_model import ConflictModel
from retain.ingest.signals import may_update
from retain.record import MemoryRecord
from retain.store import RecordFilter, Store
from retain.text.lexical import query_terms

__all__ = ["find_updates"]


def find_updates(
    store: Store,
    namespace: str,
    records: Sequence[MemoryRecord],
    *,
    policy: ConflictPolicy = DEFAULT_POLICY,
    judge: ConflictJudge | None = None,
    window: int = 10,
    model: ConflictModel | None = None,
) -> list[tuple[MemoryRecord, ConflictDecision]]:
    """The updates among ``records`` (new, embedded, not yet stored; in arrival order).

    Each record is compared (:func:`decide`) with the current records of ``namespace`` (any tier)
    that are among its ``window`` dense neighbours or its ``window`` best BM25 matches, and with the
    records before it in ``records``: all of them while they are at most ``4 * window``, else, the same
    way as the stored ones, its ``window`` nearest by cosine and its ``window`` best term matches among
    them (:class:`~retain.ingest.candidates.Earlier`), so the evaluations of a batch grow linearly
    with its size, not with its square. A record is superseded at most once per call. With a ``model``
    the learned decision applies (:func:`decide_all`): a new record may supersede several records (each
    current statement of its slot) and may open conflicts with hard constraints.

    Returns:
        (new record, decision) pairs with ``decision.relation == Relation.UPDATE``; the superseded
        record is ``decision.target``; with a model, also the pairs of ``Relation.CONFLICT`` (both
        records stay current; the caller records the open conflict). Also, in the same order, the
        pairs whose decision holds a refused update of a hard constraint (``decision.held``, any
        relation): the caller audits them; their hard constraint stays current. Split parts
        (``metadata["split_group"]``) never take part.
    """
    out: list[tuple[MemoryRecord, ConflictDecision]] = []
    earlier = Earlier(window)
    retired: set[str] = set()
    everywhere = RecordFilter(tiers=None)
    for rec in records:
        if rec.embedding is None or "split_group" in rec.metadata:
            continue
        if model is None and not may_update(rec.content):  # no cue, number or negation: no rule can fire
            earlier.append(rec)
            continue
        terms = query_terms(rec.content)
        ids = [h.id for h in store.search_vector(namespace, rec.embedding, everywhere, limit=window)]
        if store.supports_lexical:
            ids += [h.id for h in store.search_lexical(namespace, terms, everywhere, limit=window)]
        pool = store.get(namespace, list(dict.fromkeys(ids))) + earlier.candidates(rec, terms)
        candidates = [(r, cosine(rec, r)) for r in pool if r.id not in retired and r.embedding is not None]
        if model is not None:
            batch = {r.id for r in records}
            for d in decide_all(rec, candidates, model=model, policy=policy, judge=judge, batch=batch):
                if d.target is not None and d.target.id not in retired:
                    retired.update([d.target.id] if d.relation is Relation.UPDATE else [])
                    out.append((rec, d))
            earlier.append(rec)
            continue
        decision = decide(rec, candidates, policy=policy, judge=judge)
        if decision.relation is Relation.UPDATE and decision.target is not None:
            retired.add(decision.target.id)
            out.append((rec, decision))
        elif decision.held is not None:
            out.append((rec, decision))
        earlier.append(rec)
    return out

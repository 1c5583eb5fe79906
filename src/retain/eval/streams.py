"""Budgeted replays (EMBER): stream a conversation into a memory with a hard capacity, then ask its
questions against the hot memory only.

Shared by ``retain eval locomo --budget`` and ``retain eval beam``. A conversation is reduced to a
:class:`Stream`: turns in order (as :class:`~retain.memory.NewMemory`, each with an ``evidence_id``
in its metadata) and questions with their evidence ids and a category.

Figures per (policy, budget) run:

* ``hit_rate`` — share of evidence turns still in hot memory at question time;
* ``recall@5``, ``recall@10``, ``hit@5``, ``hit@10``, ``mrr`` — retrieval restricted to hot memory;
* ``utility_density`` — mean predicted utility of the hot records, under one common scorer (the
  learned utility model of that fold), so policies are compared on the same scale;
* ``evictions`` and the retention decision latency p50/p95 (ms, one decision per arriving record).

Learned utility models are evaluated leave-one-conversation-out: the model used for a conversation
was trained on the other conversations only (``utility_for(held_out_id)``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from retain.config import DEFAULT_MEMORY_CONFIG, MemoryConfig
from retain.encoders.basis import Encoder
from retain.errors import InvalidInput
from retain.eval.metrics import hit_at_k, latency_summary, mean_or_none, recall_at_k, reciprocal_rank
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.record import MemoryRecord, Tier
from retain.retention.budget import Budget
from retain.sequence.episodes import asks_order

__all__ = ["CachingEncoder", "OracleUtility", "Stream", "StreamQuestion", "run_budget_grid"]

EVIDENCE_KEY = "evidence_id"
ORDER_K = 10
"""Retrieved messages an ordering question is scored on (the same top 10 as recall@10). A question
asked with ``order="time"`` is asked for exactly this many hits, so its retrieved set is the 10 the
memory returns, in event order."""


def _ordering(ranked: list[str], timeline: dict[str, int], order: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """Kendall tau figures of one ordering question (empty for other questions)."""
    if len(order) < 2:
        return {}
    from retain.eval.ordering import ordering_tau, retrieved_tau

    return {
        "kendall_tau": ordering_tau(ranked, timeline, order),
        "tau_retrieved": retrieved_tau(ranked, timeline, order),
    }


@dataclass(frozen=True, slots=True)
class StreamQuestion:
    """A question with its category label and evidence ids (``metadata["evidence_id"]`` of turns).

    ``order``: for ordering questions, the items in gold order (one group of evidence ids each);
    the replay then scores Kendall tau (:mod:`retain.eval.ordering`); () otherwise.
    """

    text: str
    category: str
    evidence: tuple[str, ...]
    order: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class Stream:
    """One conversation as a stream of turns (grouped in batches, e.g. sessions) and its questions."""

    stream_id: str
    batches: tuple[tuple[NewMemory, ...], ...]
    questions: tuple[StreamQuestion, ...]

    @property
    def turns(self) -> int:
        """Number of turns in the stream."""
        return sum(len(b) for b in self.batches)


class CachingEncoder:
    """Wraps an encoder and memoises vectors and token counts by text, so repeated replays of the
    same conversation embed each text once. Same name and dimension as the wrapped encoder."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._tokens: dict[str, int] = {}

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """See :meth:`retain.encoders.basis.Encoder.encode`; (n, dim) float32, L2-normalised."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vec in zip(missing, self.inner.encode(missing), strict=True):
                self._vectors[text] = vec
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """See :meth:`retain.encoders.basis.Encoder.count_tokens`."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._tokens))
        if missing:
            self._tokens.update(zip(missing, self.inner.count_tokens(missing), strict=True))
        return [self._tokens[t] for t in texts]


class OracleUtility:
    """The upper bound: utility 1.0 for turns that some question uses as evidence, else 0.0."""

    name = "oracle"

    def __init__(self, needed: set[str]) -> None:
        self.needed = needed

    def score(self, records: Sequence[MemoryRecord], contexts: Sequence[Any]) -> npt.NDArray[np.float64]:
        """(n,) float64 in {0, 1}."""
        return np.array([1.0 if r.metadata.get(EVIDENCE_KEY) in self.needed else 0.0 for r in records])

    def feedback(self, record: MemoryRecord, context: Any, used: bool) -> None:
        """The oracle already knows."""


def _replay(
    stream: Stream,
    encoder: Encoder,
    budget: Budget | None,
    utility: Any,
    density_scorer: Callable[[list[MemoryRecord]], npt.NDArray[np.float64]] | None,
    k_max: int,
    config: MemoryConfig,
    order: str = "rank",
) -> dict[str, Any]:
    namespace = f"stream-{stream.stream_id}"
    mem = Memory(":memory:", encoder=encoder, budget=budget, utility=utility, config=config)
    try:
        decisions: list[float] = []
        for batch in stream.batches:
            for item in batch:  # one add per turn: each is one retention decision
                t0 = time.perf_counter()
                mem.add_many([item], namespace=namespace, actor="eval")
                decisions.append((time.perf_counter() - t0) * 1000)
        records = mem.records(namespace=namespace)
        hot = [r for r in records if r.tier is not Tier.ARCHIVE]
        hot_ids = {str(r.metadata.get(EVIDENCE_KEY)) for r in hot}
        timeline = {str(r.metadata.get(EVIDENCE_KEY)): r.seq for r in records if r.seq is not None}
        per_q = []
        for q in stream.questions:
            if not q.evidence:
                continue
            by_time = order == "time" or (order == "auto" and asks_order(q.text))
            if by_time:  # the memory's ordering retrieval: ORDER_K episodes in event order
                hits = mem.search(q.text, namespace=namespace, k=ORDER_K, allow_raw=True, order="time")
            else:
                hits = mem.search(q.text, namespace=namespace, k=k_max, allow_raw=True)
            ranked = [str(h.record.metadata.get(EVIDENCE_KEY)) for h in hits]
            per_q.append(
                {
                    "category": q.category,
                    "by_time": by_time,
                    "held": sum(e in hot_ids for e in q.evidence) / len(q.evidence),
                    "recall@5": recall_at_k(ranked, q.evidence, 5),
                    "recall@10": recall_at_k(ranked, q.evidence, 10),
                    "hit@5": hit_at_k(ranked, q.evidence, 5),
                    "hit@10": hit_at_k(ranked, q.evidence, 10),
                    "mrr": reciprocal_rank(ranked, q.evidence),
                }
                | _ordering(ranked[:ORDER_K], timeline, q.order)
            )
        needed = {e for q in stream.questions for e in q.evidence}
        density = None
        if density_scorer is not None and hot:
            density = float(np.mean(density_scorer(hot)))
        evictions = sum(1 for e in mem.store.audit_log(namespace) if e["op"] == "evict")
        return {
            "questions": per_q,
            "evidence_turns": len(needed),
            "evidence_held": len(needed & hot_ids),
            "hot": len(hot),
            "turns": len(records),
            "evictions": evictions,
            "decisions_ms": decisions,
            "utility_density": density,
        }
    finally:
        mem.close()


def _summarise(policy: str, share: float, parts: list[dict[str, Any]], headline: Sequence[str]) -> dict[str, Any]:
    questions = [q for p in parts for q in p["questions"]]
    metrics = ("recall@5", "recall@10", "hit@5", "hit@10", "mrr")
    head = [q for q in questions if q["category"] in headline]
    by_category: dict[str, dict[str, Any]] = {}
    for cat in sorted({q["category"] for q in questions}):
        group = [q for q in questions if q["category"] == cat]
        by_category[cat] = {
            "questions": len(group),
            "time_ordered": sum(bool(q.get("by_time")) for q in group),
            "held": mean_or_none([q["held"] for q in group]),
        } | {m: mean_or_none([q[m] for q in group]) for m in metrics}
        taus = [q["kendall_tau"] for q in group if q.get("kendall_tau") is not None]
        if taus:  # ordering questions: tau with missing items tied last, and over retrieved items only
            found = [q["tau_retrieved"] for q in group if q.get("tau_retrieved") is not None]
            by_category[cat] |= {
                "kendall_tau": mean_or_none(taus),
                "tau_retrieved": mean_or_none(found),
                "tau_retrieved_questions": len(found),
            }
    latency = latency_summary([d for p in parts for d in p["decisions_ms"]])
    evidence = sum(p["evidence_turns"] for p in parts)
    densities = [p["utility_density"] for p in parts if p["utility_density"] is not None]
    return {
        "policy": policy,
        "budget": share,
        "hit_rate": round(sum(p["evidence_held"] for p in parts) / evidence, 4) if evidence else None,
        **{m: mean_or_none([q[m] for q in head]) for m in metrics},
        "questions": len(head),
        "utility_density": mean_or_none(densities),
        "evictions": sum(p["evictions"] for p in parts),
        "hot_records": sum(p["hot"] for p in parts),
        "decision_ms_p50": latency["p50"],
        "decision_ms_p95": latency["p95"],
        "by_category": by_category,
    }


def run_budget_grid(
    streams: Sequence[Stream],
    encoder: Encoder,
    *,
    shares: Sequence[float],
    policies: Sequence[str],
    utility_for: Callable[[str], Any],
    headline: Sequence[str],
    k_max: int = 50,
    config: MemoryConfig = DEFAULT_MEMORY_CONFIG,
    progress: bool = True,
    order: str = "rank",
) -> list[dict[str, Any]]:
    """Replay every stream under every (policy, share of its turns) and summarise each run.

    Args:
        streams: conversations to replay.
        encoder: shared encoder (wrap it in :class:`CachingEncoder` for speed).
        shares: budgets as a share of each stream's turns (0..1), in records; 1.0 = no budget.
        policies: budget policies, plus "oracle" (the utility policy with :class:`OracleUtility`).
        utility_for: stream id -> utility model trained without that stream (leave-one-out).
        headline: categories whose questions make the headline recall figures.
        order: how questions are asked (``Memory.search(order=...)``): "rank" (every question,
            top ``k_max``); "auto": a question :func:`retain.sequence.episodes.asks_order` reads as asking
            for an order is asked with ``order="time"`` for :data:`ORDER_K` hits (recall@5, recall@10
            and MRR are then over those hits in event order), every other one as with "rank";
            "time": every question that way. Per category, ``time_ordered`` counts the questions
            asked in time order.
    """
    if order not in ("rank", "auto", "time"):
        raise InvalidInput(f"order: one of rank, auto, time; got {order!r}")
    runs = []
    total = len(shares) * len(policies) * len(streams)
    bar = tqdm(total=total, disable=not progress, desc="budgeted replays", unit="replay", mininterval=5.0)
    for share in shares:
        for policy in policies:
            parts = []
            for stream in streams:
                capacity = round(share * stream.turns)
                model = utility_for(stream.stream_id)
                scorer = _density_scorer(model)
                utility: Any
                budget: Budget | None
                if share >= 1.0:  # the full memory: no capacity at all (split texts never count)
                    budget, utility = None, None
                elif policy == "oracle":
                    needed = {e for q in stream.questions for e in q.evidence}
                    budget, utility = Budget(capacity, policy="utility"), OracleUtility(needed)
                else:
                    budget = Budget(capacity, policy=policy)
                    utility = model if budget.needs_utility else None
                parts.append(_replay(stream, encoder, budget, utility, scorer, k_max, config, order))
                bar.update(1)
            runs.append(_summarise(policy, share, parts, headline))
    bar.close()
    return runs


def _density_scorer(model: Any) -> Callable[[list[MemoryRecord]], npt.NDArray[np.float64]] | None:
    """Score hot records with the fold's utility model, context-free (common scale across policies)."""
    if model is None:
        return None
    from retain.retention.utility import UtilityContext

    def score(records: list[MemoryRecord]) -> npt.NDArray[np.float64]:
        dim = records[0].embedding.shape[0] if records and records[0].embedding is not None else 0
        empty = UtilityContext(held=np.zeros((0, dim), dtype=np.float32), previous=None, mean_length=None)
        return np.asarray(model.score(records, [empty] * len(records)), dtype=np.float64)

    return score

"""The main job: replay LoCoMo conversations into memory and score turn-level evidence retrieval.

Each conversation is streamed session by session, in turn order, into a fresh in-memory store
(one namespace per conversation; session dates as event times; image captions kept). Then every
question is asked, as of the last session's date (``now`` for time ranges in the question, e.g. "last
year"), and the ranked turns are compared with the question's evidence turns.

Runs reported (all on the full memory):

* ``learned`` — the default search (learned fusion shipped with the package). The shipped model was
  fitted on the LoCoMo dev conversations, so on those it is an in-sample figure.
* ``learned-loco`` — the same features, the fusion refitted for each conversation on the *other*
  conversations only (leave-one-conversation-out): the honest out-of-sample figure.
* ``rrf`` — plain reciprocal rank fusion of BM25 and MiniLM, the baseline.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from retain.encoders.basis import Encoder
from retain.errors import DatasetUnavailable, InvalidInput
from retain.eval.datasets import LocomoConversation
from retain.eval.metrics import hit_at_k, latency_summary, mean_or_none, recall_at_k, reciprocal_rank
from retain.eval.streams import Stream, StreamQuestion
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.retrieval.fusion import PRESETS, LinearFusion, train_fusion
from retain.retrieval.pool import candidates
from retain.store import ALL_RECORDS, RecordFilter

__all__ = [
    "CATEGORY_NAMES",
    "HEADLINE_CATEGORIES",
    "QuestionPool",
    "collect_pools",
    "ingest",
    "run_locomo",
    "window_recall",
]

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
HEADLINE_CATEGORIES = (1, 2, 3, 4)
RANK_DEPTH = 50
WINDOW = 1
"""Context window of :func:`window_recall`: each hit with the turns up to this far before and after."""


@dataclass
class QuestionPool:
    """The candidate pool of one question: dia ids, fusion features and baseline scores."""

    sample_id: str
    category: int
    evidence: tuple[str, ...]
    dia_ids: list[str]
    features: npt.NDArray[np.float64]
    rrf: npt.NDArray[np.float64]
    ranked_default: list[str] = field(default_factory=list)
    search_ms: float = 0.0


def session_items(conv: LocomoConversation) -> dict[int, list[NewMemory]]:
    """The turns of ``conv`` as :class:`NewMemory` items grouped by session, in order.

    Each keeps its speaker, image caption, dia id (also as ``evidence_id``), session date as
    event time, position (``seq``) and session (``segment``).
    """
    by_session: dict[int, list[NewMemory]] = {}
    for seq, turn in enumerate(conv.turns):
        meta: dict[str, Any] = {"speaker": turn.speaker, "dia_id": turn.dia_id, "evidence_id": turn.dia_id}
        if turn.caption:
            meta["caption"] = turn.caption
        by_session.setdefault(turn.session, []).append(
            NewMemory(
                content=turn.text,
                type="observation",
                role=turn.speaker,
                source=f"locomo:{conv.sample_id}:{turn.dia_id}",
                event_time=turn.session_time,
                seq=seq,
                segment=f"session_{turn.session}",
                metadata=meta,
            )
        )
    return by_session


def locomo_stream(conv: LocomoConversation) -> Stream:
    """``conv`` as a :class:`~retain.eval.streams.Stream` for budgeted replays."""
    by_session = session_items(conv)
    questions = tuple(StreamQuestion(q.question, str(q.category), q.evidence) for q in conv.questions)
    return Stream(conv.sample_id, tuple(tuple(by_session[s]) for s in sorted(by_session)), questions)


def ingest(mem: Memory, conv: LocomoConversation, namespace: str) -> dict[str, str]:
    """Stream ``conv`` into ``mem`` session by session; returns record id -> dia id."""
    by_session = session_items(conv)
    id_to_dia: dict[str, str] = {}
    for session in sorted(by_session):
        items = by_session[session]
        ids = mem.add_many(items, namespace=namespace, actor="eval")
        for rid, item in zip(ids, items, strict=True):
            id_to_dia.setdefault(rid, str(item.metadata["dia_id"]))
    return id_to_dia


def collect_pools(
    conversations: Sequence[LocomoConversation],
    encoder_factory: Callable[[], Encoder],
    *,
    fusion: LinearFusion | None = None,
    progress: bool = True,
    on_ingest: Callable[[int, float], None] | None = None,
    search: bool = True,
    location: str | Callable[[str], str] = ":memory:",
) -> list[QuestionPool]:
    """Ingest each conversation into a fresh memory, then build every question's candidate pool and,
    when ``search``, run the default search on it (timed). ``on_ingest(turns, seconds)`` receives
    ingest timings. ``location`` is the store (``:memory:``, a file path or a ``postgresql://`` URL):
    each conversation gets its own namespace ``locomo-<sample_id>`` there; or a function of the
    conversation's sample id giving each conversation a store of its own (as ``:memory:`` does: BM25's
    document counts are then the conversation's alone on every backend).

    Raises:
        InvalidInput: a conversation's namespace already holds records at ``location`` (an earlier
            run's records would be scored with this one's).
    """
    pools: list[QuestionPool] = []
    encoder = encoder_factory()
    bar = tqdm(
        total=sum(len(c.questions) for c in conversations),
        disable=not progress,
        desc="questions",
        unit="q",
        mininterval=0.5 if sys.stderr.isatty() else 15.0,
    )
    for conv in conversations:
        bar.set_postfix_str(conv.sample_id)
        namespace = f"locomo-{conv.sample_id}"
        where = location if isinstance(location, str) else location(conv.sample_id)
        mem = Memory(where, encoder=encoder, fusion=fusion)
        try:
            if mem.store.count(namespace, ALL_RECORDS):
                raise InvalidInput(f"namespace {namespace!r} already holds records in this store; use an empty one")
            started = time.perf_counter()
            id_to_dia = ingest(mem, conv, namespace)
            if on_ingest is not None:
                on_ingest(len(conv.turns), time.perf_counter() - started)
            cfg = PRESETS["default"]
            asked = max((t.session_time for t in conv.turns if t.session_time is not None), default=None)
            for q in conv.questions:
                t0 = time.perf_counter()
                hits = []
                if search:
                    hits = mem.search(q.question, namespace=namespace, k=RANK_DEPTH, allow_raw=True, now=asked)
                elapsed = (time.perf_counter() - t0) * 1000
                pool = candidates(mem.store, mem.encoder, q.question, namespace, RecordFilter(), cfg)
                pools.append(
                    QuestionPool(
                        sample_id=conv.sample_id,
                        category=q.category,
                        evidence=q.evidence,
                        dia_ids=[id_to_dia.get(r.id, "") for r in pool.records],
                        features=pool.features(),
                        rrf=pool.rrf,
                        ranked_default=[id_to_dia.get(h.record.id, "") for h in hits],
                        search_ms=elapsed,
                    )
                )
                bar.update(1)
        finally:
            mem.close()
    bar.close()
    return pools


def _rank(dia_ids: list[str], scores: npt.NDArray[np.float64]) -> list[str]:
    order = np.argsort(-scores, kind="stable")[:RANK_DEPTH]
    return [dia_ids[i] for i in order]


def _labels(pool: QuestionPool) -> npt.NDArray[np.bool_]:
    wanted = set(pool.evidence)
    return np.array([d in wanted for d in pool.dia_ids], dtype=bool)


def loco_rankings(pools: Sequence[QuestionPool]) -> list[list[str]]:
    """Rankings from a fusion refitted per conversation on the other conversations only."""
    conversations = sorted({p.sample_id for p in pools})
    trainable = [p for p in pools if p.category in HEADLINE_CATEGORIES and p.evidence]
    models: dict[str, LinearFusion] = {}
    for held_out in conversations:
        train = [p for p in trainable if p.sample_id != held_out]
        models[held_out] = train_fusion(
            [p.features for p in train], [_labels(p) for p in train], trained_on=f"loco:-{held_out}"
        )
    return [_rank(p.dia_ids, models[p.sample_id].score(p.features)) for p in pools]


def score_run(pools: Sequence[QuestionPool], rankings: Sequence[list[str]]) -> dict[str, Any]:
    """recall@5/10, hit@5/10 and MRR per category and over the headline categories 1-4.

    Questions without resolvable evidence are skipped (counted in ``skipped``)."""
    per_cat: dict[int, dict[str, list[float]]] = {}
    skipped = 0
    for pool, ranked in zip(pools, rankings, strict=True):
        if not pool.evidence:
            skipped += 1
            continue
        bucket = per_cat.setdefault(pool.category, {m: [] for m in ("recall@5", "recall@10", "hit@5", "hit@10", "mrr")})
        bucket["recall@5"].append(recall_at_k(ranked, pool.evidence, 5))
        bucket["recall@10"].append(recall_at_k(ranked, pool.evidence, 10))
        bucket["hit@5"].append(hit_at_k(ranked, pool.evidence, 5))
        bucket["hit@10"].append(hit_at_k(ranked, pool.evidence, 10))
        bucket["mrr"].append(reciprocal_rank(ranked, pool.evidence))
    by_category = {
        str(cat): {"name": CATEGORY_NAMES.get(cat, str(cat)), "questions": len(vals["mrr"])}
        | {m: mean_or_none(v) for m, v in vals.items()}
        for cat, vals in sorted(per_cat.items())
    }
    headline: dict[str, Any] = {}
    for metric in ("recall@5", "recall@10", "hit@5", "hit@10", "mrr"):
        values = [v for cat in HEADLINE_CATEGORIES for v in per_cat.get(cat, {}).get(metric, [])]
        headline[metric] = mean_or_none(values)
    headline["questions"] = sum(len(per_cat.get(c, {}).get("mrr", [])) for c in HEADLINE_CATEGORIES)
    headline["skipped_no_evidence"] = skipped
    headline["by_category"] = by_category
    return headline


def _window_ids(dia_id: str, window: int) -> list[str]:
    session, _, turn = dia_id.partition(":")
    if not turn.isdigit():
        return [dia_id]
    return [f"{session}:{t}" for t in range(int(turn) - window, int(turn) + window + 1) if t >= 1]


def window_recall(
    pools: Sequence[QuestionPool], rankings: Sequence[list[str]], *, window: int = WINDOW, k: int = 10
) -> dict[str, Any]:
    """Evidence recall when each of the top ``k`` hits is a context unit: the hit with its neighbouring
    turns of the same session (turn number within ``window``), as ``Memory.search(window=...)`` returns
    it. Share of evidence turns inside the union of the top-k units (0..1, higher = better), mean per
    category and over the headline categories. Units hold up to 2 * window + 1 turns, so this is not
    comparable to turn-level recall@k; it measures how often the answer's context comes with the hit.
    """
    per_cat: dict[int, list[float]] = {}
    for pool, ranked in zip(pools, rankings, strict=True):
        if not pool.evidence:
            continue
        covered = {t for d in ranked[:k] if d for t in _window_ids(d, window)}
        per_cat.setdefault(pool.category, []).append(sum(e in covered for e in pool.evidence) / len(pool.evidence))
    head = [v for c in HEADLINE_CATEGORIES for v in per_cat.get(c, [])]
    return {
        "window": window,
        "k": k,
        f"recall@{k}_units": mean_or_none(head),
        "by_category": {str(c): mean_or_none(v) for c, v in sorted(per_cat.items())},
    }


def run_locomo(
    conversations: Sequence[LocomoConversation],
    encoder_factory: Callable[[], Encoder],
    *,
    loco: bool = True,
    progress: bool = True,
    dataset: str = "locomo",
    location: str | Callable[[str], str] = ":memory:",
) -> dict[str, Any]:
    """Run the main job and return the report dict (see the CLI's ``--json``); ``location`` as in
    :func:`collect_pools`."""
    ingest_turns, ingest_seconds = 0, 0.0

    def on_ingest(turns: int, seconds: float) -> None:
        nonlocal ingest_turns, ingest_seconds
        ingest_turns += turns
        ingest_seconds += seconds

    if not any(q.evidence for c in conversations for q in c.questions):
        raise DatasetUnavailable("LoCoMo data has no question with resolvable evidence: nothing to score")
    pools = collect_pools(conversations, encoder_factory, progress=progress, on_ingest=on_ingest, location=location)
    latency = latency_summary([p.search_ms for p in pools])
    timing = {
        "ingest_turns_per_s": round(ingest_turns / ingest_seconds, 1) if ingest_seconds else None,
        "search_ms_p50": latency["p50"],
        "search_ms_p95": latency["p95"],
    }
    runs = [
        {"policy": "full", "budget": 1.0, "retriever": "learned"}
        | score_run(pools, [p.ranked_default for p in pools])
        | timing
    ]
    if loco:
        runs.append(
            {"policy": "full", "budget": 1.0, "retriever": "learned-loco"} | score_run(pools, loco_rankings(pools))
        )
    runs.append(
        {"policy": "full", "budget": 1.0, "retriever": "rrf"}
        | score_run(pools, [_rank(p.dia_ids, p.rrf) for p in pools])
    )
    return {
        "dataset": dataset,
        "conversations": len(conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "turns": ingest_turns,
        "runs": runs,
        "window_units": window_recall(pools, [p.ranked_default for p in pools]),
    }


def fusion_training_pools(
    conversations: Sequence[LocomoConversation], encoder_factory: Callable[[], Encoder], *, progress: bool = True
) -> tuple[list[npt.NDArray[np.float64]], list[npt.NDArray[np.bool_]]]:
    """Features and labels of every headline question with evidence, for :func:`train_fusion`."""
    pools = collect_pools(conversations, encoder_factory, progress=progress, search=False)
    kept = [p for p in pools if p.category in HEADLINE_CATEGORIES and p.evidence]
    return [p.features for p in kept], [_labels(p) for p in kept]


def loco_utility_models(conversations: Sequence[LocomoConversation], encoder: Encoder) -> dict[str, Any]:
    """One learned utility model per conversation, trained on the other conversations only."""
    from retain.eval.utility_traces import locomo_traces
    from retain.retention.utility import train_utility

    traces = locomo_traces(conversations, encoder)
    return {
        conv.sample_id: train_utility([t for j, t in enumerate(traces) if j != i])
        for i, conv in enumerate(conversations)
    }


def run_locomo_budgets(
    conversations: Sequence[LocomoConversation],
    encoder: Encoder,
    *,
    shares: Sequence[float],
    policies: Sequence[str],
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Budgeted runs: each conversation streamed with capacity = share x its turns (records),
    questions asked against the hot memory; learned utility evaluated leave-one-conversation-out."""
    from retain.eval.streams import CachingEncoder, run_budget_grid

    cached = CachingEncoder(encoder)
    models = loco_utility_models(conversations, cached)
    return run_budget_grid(
        [locomo_stream(c) for c in conversations],
        cached,
        shares=shares,
        policies=policies,
        utility_for=models.__getitem__,
        headline=[str(c) for c in HEADLINE_CATEGORIES],
        k_max=RANK_DEPTH,
        progress=progress,
    )

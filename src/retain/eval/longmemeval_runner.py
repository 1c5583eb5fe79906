"""LongMemEval retrieval (Wu et al., ICLR 2025, arXiv:2410.10813): per question, its haystack into a
fresh namespace, the question asked, the ranked turns scored against the gold sessions and turns.

Each turn becomes a record: ``segment`` = session id, ``event_time`` = the session date (UTC; None
when the date is missing or does not parse), ``seq`` = position in the haystack (sessions in file
order, which need not be chronological; :meth:`retain.Memory.timeline` orders by date), role as given.
Time expressions in the turns are resolved against the session date on add. The question is asked
with :meth:`retain.Memory.search` (default preset), ``now`` = the question date.

Figures, per question type and overall. Abstention questions (``_abs``) are left out of the overall
means, as in the paper's retrieval evaluation; they are scored on their own under
"<type> (abstention)", against the sessions that make them look answerable:

* ``session_recall@k`` — share of the answer sessions that hold at least one of the top-k turns;
* ``session_hit@k`` — 1 when any of the top-k turns is from an answer session;
* ``turn_recall@k`` — share of the evidence turns (``has_answer``) among the top-k turns, over the
  questions that have evidence turns (``turn_questions``).

Turns longer than the record limit are stored as split parts; a part counts as its turn, and the
ranking keeps each turn once (its best part).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm

from retain.encoders.basis import Encoder
from retain.eval.longmemeval import LmeQuestion
from retain.eval.metrics import hit_at_k, latency_summary, mean_or_none, recall_at_k
from retain.ingest.draft import NewMemory
from retain.memory import Memory

__all__ = ["KS", "haystack_items", "rank_turns", "run_longmemeval"]

KS = (5, 10)
SEARCH_DEPTH = 50


def haystack_items(question: LmeQuestion) -> list[NewMemory]:
    """The haystack of ``question`` as :class:`NewMemory` items, sessions in file order; each turn
    keeps its evidence id ``"<session id>:<index in session>"`` and ``has_answer`` in metadata."""
    items: list[NewMemory] = []
    for turns in question.sessions:
        for turn in turns:
            if not turn.content.strip():
                continue
            items.append(
                NewMemory(
                    content=turn.content,
                    type="observation",
                    role=turn.role,
                    source=f"longmemeval:{question.question_id}:{turn.session_id}:{turn.index_in_session}",
                    event_time=turn.session_date,
                    seq=len(items),
                    segment=turn.session_id,
                    metadata={
                        "evidence_id": f"{turn.session_id}:{turn.index_in_session}",
                        "has_answer": turn.has_answer,
                    },
                )
            )
    return items


def rank_turns(mem: Memory, question: LmeQuestion, namespace: str, *, time_aware: bool = True) -> list[str]:
    """Evidence ids of the turns ``mem.search`` ranks for ``question``, best first, each turn once."""
    hits = mem.search(
        question.question, namespace=namespace, k=SEARCH_DEPTH, now=question.question_date if time_aware else None
    )
    return list(dict.fromkeys(str(h.record.metadata.get("evidence_id", "")) for h in hits))


def run_longmemeval(
    questions: Sequence[LmeQuestion], encoder: Encoder, *, progress: bool = True, dataset: str = "longmemeval"
) -> dict[str, Any]:
    """Run every question (see the module docstring) and return the report dict (the CLI's ``--json``).

    Shape: ``{"dataset", "questions", "abstention_skipped", "turns", "ingest_turns_per_s",
    "search_ms_p50", "search_ms_p95", "overall": {metric: value}, "by_type": {type: {...}}}``;
    metric values are means in [0, 1] (higher = better) or None when no question qualifies.
    """
    per_type: dict[str, dict[str, list[float]]] = {}
    skipped = 0
    turns_total, ingest_s = 0, 0.0
    search_ms: list[float] = []
    encoder.encode(["warm-up"])  # load the model before the clock starts
    for question in tqdm(questions, disable=not progress, desc="questions", unit="q"):
        skipped += question.abstention
        items = haystack_items(question)
        namespace = "lme"
        with Memory(":memory:", encoder=encoder) as mem:
            started = time.perf_counter()
            if items:
                mem.add_many(items, namespace=namespace, actor="eval")
            ingest_s += time.perf_counter() - started
            turns_total += len(items)
            t0 = time.perf_counter()
            ranked = rank_turns(mem, question, namespace)
            search_ms.append((time.perf_counter() - t0) * 1000)
        kind = f"{question.question_type} (abstention)" if question.abstention else question.question_type
        bucket = per_type.setdefault(kind, {})
        for name, value in _score(question, ranked).items():
            bucket.setdefault(name, []).append(value)
    by_type = {t: _means(v) for t, v in sorted(per_type.items())}
    everything: dict[str, list[float]] = {}
    for kind, values in per_type.items():
        if kind.endswith("(abstention)"):
            continue
        for name, vals in values.items():
            everything.setdefault(name, []).extend(vals)
    latency = latency_summary(search_ms)
    return {
        "dataset": dataset,
        "questions": len(questions),
        "abstention_skipped": skipped,
        "turns": turns_total,
        "ingest_turns_per_s": round(turns_total / ingest_s, 1) if ingest_s else None,
        "search_ms_p50": latency["p50"],
        "search_ms_p95": latency["p95"],
        "overall": _means(everything),
        "by_type": by_type,
    }


def _score(question: LmeQuestion, ranked: list[str]) -> dict[str, float]:
    sessions = [turn_id.rsplit(":", 1)[0] for turn_id in ranked]
    gold_sessions = set(question.answer_session_ids)
    gold_turns = {f"{t.session_id}:{t.index_in_session}" for turns in question.sessions for t in turns if t.has_answer}
    out: dict[str, float] = {}
    for k in KS:
        if gold_sessions:
            out[f"session_recall@{k}"] = recall_at_k(sessions[:k], gold_sessions, k)
            out[f"session_hit@{k}"] = hit_at_k(sessions, gold_sessions, k)
        if gold_turns:
            out[f"turn_recall@{k}"] = recall_at_k(ranked, gold_turns, k)
    return out


def _means(values: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(values.get("session_hit@5", []))}
    out["turn_questions"] = len(values.get("turn_recall@5", []))
    for k in KS:
        for name in (f"session_recall@{k}", f"session_hit@{k}", f"turn_recall@{k}"):
            out[name] = mean_or_none(values.get(name, []))
    return out

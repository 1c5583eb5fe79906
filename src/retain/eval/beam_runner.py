"""``retain eval beam``: replay BEAM chats into memory and score evidence retrieval per BEAM category.

Each chat is streamed message by message (batches as segments, anchor dates as event times) into a
fresh memory; every probing question with evidence is asked, and the ranked messages are compared
with its ``source_chat_ids``. The full-memory run is reported per category; with budgets, each chat
is also replayed under every policy at a capacity equal to a share of its messages, and the figures
of :mod:`retain.eval.streams` are reported per category (learned utility trained without the chat).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retain.config import MemoryConfig
from retain.encoders.basis import Encoder
from retain.eval.beam import BEAM_CATEGORIES, BeamChat
from retain.eval.streams import CachingEncoder, Stream, StreamQuestion, run_budget_grid
from retain.ingest.draft import NewMemory

__all__ = ["BEAM_CONFIG", "CONTEXT_CATEGORIES", "beam_stream", "run_beam", "run_beam_context"]

# BEAM assistant replies run to several thousand characters; one message stays one record so that a
# budget share of messages is a share of records.
BEAM_CONFIG = MemoryConfig(max_record_chars=100_000)
SCORED_CATEGORIES = tuple(c for c in BEAM_CATEGORIES if c != "abstention")
ORDERED_CATEGORY = "event_ordering"
"""Its questions are also scored by Kendall tau against the gold order (:mod:`retain.eval.ordering`)."""


def beam_stream(chat: BeamChat) -> Stream:
    """``chat`` as a :class:`~retain.eval.streams.Stream`: one batch per BEAM batch (session)."""
    batches: dict[str, list[NewMemory]] = {}
    for msg in chat.messages:
        batches.setdefault(str(msg.session), []).append(
            NewMemory(
                content=msg.content if msg.content.strip() else "(empty message)",
                type="observation",
                role=msg.role,
                source=f"beam:{chat.chat_id}:{msg.id}",
                event_time=msg.time,
                seq=msg.index,
                segment=f"batch_{msg.session}",
                metadata={"evidence_id": str(msg.id), "speaker": msg.role},
            )
        )
    questions = tuple(
        StreamQuestion(
            q.question,
            q.category,
            tuple(str(e) for e in q.evidence),
            tuple(tuple(str(e) for e in g) for g in q.evidence_order) if q.category == ORDERED_CATEGORY else (),
        )
        for q in chat.questions
    )
    return Stream(chat.chat_id, tuple(tuple(b) for b in batches.values()), questions)


def run_beam(
    chats: Sequence[BeamChat],
    folders: Sequence[Path],
    encoder: Encoder,
    *,
    shares: Sequence[float] = (),
    policies: Sequence[str] = (),
    utility_traces_extra: Sequence[Any] = (),
    progress: bool = True,
    dataset: str = "beam",
    order: str = "auto",
) -> dict[str, Any]:
    """Full-memory run (budget 1.0) plus the budget grid; figures per BEAM category.

    ``folders``: the chat folders ``chats`` were loaded from (same order), for utility traces.

    ``utility_traces_extra``: additional oracle traces (e.g. LoCoMo dev) added to every fold's
    utility training set; a chat's own trace is never in its fold.

    ``order``: how questions are asked (:func:`retain.eval.streams.run_budget_grid`); "auto"
    (default) asks a question that reads as an ordering question ("the order in which I brought up
    ...") for the 10 episodes the memory returns in event order, the others best first. The rule
    reads the question only, never its BEAM category.
    """
    cached = CachingEncoder(encoder)
    streams = [beam_stream(c) for c in chats]
    models: dict[str, Any] = {}
    if shares and any(p in ("utility", "knapsack", "lookahead") for p in policies):
        from retain.eval.utility_traces import beam_traces
        from retain.retention.utility import train_utility

        traces = beam_traces(list(folders), cached)
        for i, chat in enumerate(chats):
            fold = [t for j, t in enumerate(traces) if j != i] + list(utility_traces_extra)
            models[chat.chat_id] = train_utility(fold)
    full = run_budget_grid(
        streams,
        cached,
        shares=[1.0],
        policies=["fifo"],
        utility_for=lambda _: None,
        headline=SCORED_CATEGORIES,
        config=BEAM_CONFIG,
        progress=progress,
        order=order,
    )
    full[0]["policy"] = "full"
    runs = full
    if shares:
        runs += run_budget_grid(
            streams,
            cached,
            shares=shares,
            policies=policies,
            utility_for=lambda chat_id: models.get(chat_id),
            headline=SCORED_CATEGORIES,
            config=BEAM_CONFIG,
            progress=progress,
            order=order,
        )
    return {
        "dataset": dataset,
        "chats": len(chats),
        "questions": sum(len(c.questions) for c in chats),
        "messages": sum(len(c.messages) for c in chats),
        "order": order,
        "runs": runs,
    }


CONTEXT_CATEGORIES = ("instruction_following", "preference_following")
"""The categories whose evidence must shape an answer without being asked about: scored in context."""
CONTEXT_K = 10


def run_beam_context(
    chats: Sequence[BeamChat],
    encoder: Encoder,
    *,
    categories: Sequence[str] = CONTEXT_CATEGORIES,
    budget_tokens: int = 100_000,
    progress: bool = True,
) -> dict[str, Any]:
    """Score BEAM questions through the context an agent would get (:meth:`Memory.context
    <retain.memory.Memory.context>` with ``k`` = 10 search hits and no working tier), not the search.

    Each chat is streamed into a fresh memory as :func:`beam_stream` stores it; each question of
    ``categories`` with evidence is asked once after the whole chat. ``recall@10``: mean over
    questions of the share of evidence messages among the context's first 10 items, in the order the
    context packs them (hard constraints, the standing instructions and preferences in force, then the
    hits); ``in_context``: the same over every packed item. The BEAM category is read only to pick
    and group the questions, never by the memory.

    Returns ``{"dataset", "chats", "k", "by_category": {category: {"questions", "recall@10",
    "in_context", "context_items"}}, "questions": [per-question rows]}``; figures in [0, 1], higher = better.
    """
    from tqdm import tqdm

    from retain.eval.metrics import mean_or_none
    from retain.memory import Memory

    cached = CachingEncoder(encoder)
    rows: list[dict[str, Any]] = []
    for chat in tqdm(chats, disable=not progress, desc="beam chats", unit="chat"):
        stream, ns = beam_stream(chat), f"beam-{chat.chat_id}"
        with Memory(encoder=cached, config=BEAM_CONFIG) as mem:
            for batch in stream.batches:
                mem.add_many(list(batch), namespace=ns)
            for q in chat.questions:
                if q.category not in categories or not q.evidence:
                    continue
                ctx = mem.context(q.question, namespace=ns, budget_tokens=budget_tokens, k=CONTEXT_K, working=0)
                by_id = {r.id: r for r in mem.store.get(ns, [i.record_id for i in ctx.items])}
                packed = [by_id[i.record_id].metadata.get("evidence_id") for i in ctx.items if i.record_id in by_id]
                evidence = {str(e) for e in q.evidence}
                rows.append(
                    {
                        "chat": chat.chat_id,
                        "category": q.category,
                        "recall@10": len(evidence & set(packed[:CONTEXT_K])) / len(evidence),
                        "in_context": len(evidence & set(packed)) / len(evidence),
                        "items": len(packed),
                        "standing": sum(i.why == "standing" for i in ctx.items),
                    }
                )
    by_category = {
        cat: {
            "questions": len(mine),
            "recall@10": mean_or_none([r["recall@10"] for r in mine]),
            "in_context": mean_or_none([r["in_context"] for r in mine]),
            "context_items": mean_or_none([float(r["items"]) for r in mine]),
        }
        for cat in categories
        if (mine := [r for r in rows if r["category"] == cat])
    }
    return {"dataset": "beam", "chats": len(chats), "k": CONTEXT_K, "by_category": by_category, "questions": rows}


def write_beam_report(report: dict[str, Any], directory: str | Path) -> Path:
    """Write ``report.md`` (per-category tables) and the budget curves into ``directory``."""
    from retain.eval.report import finish_report, markdown_table

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    parts = [
        f"# {report['dataset']} evaluation",
        "",
        f"{report['chats']} chats, {report['messages']} messages, {report['questions']} probing questions "
        "(abstention has no evidence and is not scored).",
        "",
    ]
    metrics = ("time_ordered", "held", "recall@5", "recall@10", "hit@10", "mrr", "kendall_tau", "tau_retrieved")
    for run in report["runs"]:
        parts.append(f"## {run['policy']} at budget {run['budget']}: hit rate {run['hit_rate']}")
        parts.append("")
        rows = [[cat, v["questions"], *(v.get(m) for m in metrics)] for cat, v in run["by_category"].items()]
        parts.append(markdown_table(["category", "questions", *metrics], rows))
        parts.append("")
    budget_runs = [r for r in report["runs"] if r["policy"] != "full"]
    return finish_report(out, parts, budget_runs, str(report["dataset"]))

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

__all__ = ["BEAM_CONFIG", "beam_stream", "run_beam"]

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

"""Benchmark commands of the ``eval`` group: ``eval locomo``, ``eval beam`` and ``eval longmemeval``
(the runners live in :mod:`retain.eval`; ``eval scenarios`` is in :mod:`retain.cli.scenarios`).

Added to the ``eval`` group by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from retain.cli.common import Commands, cell, console, err_console, fail, make_encoder
from retain.cli.options import EncoderOption
from retain.errors import RetainError

__all__ = ["ALL_POLICIES", "eval_beam", "eval_locomo", "eval_longmemeval", "register"]

commands = Commands()
register = commands.register
"""Adds ``locomo``, ``beam`` and ``longmemeval`` to the ``eval`` group ``eval_app``."""

ALL_POLICIES = "fifo,lru,random,utility,knapsack,lookahead,oracle"
"""Every budget policy ``--policy`` accepts, the default of ``eval locomo`` and ``eval beam``."""

JsonOutOption = Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON here.")]
PolicyOption = Annotated[str, typer.Option(help="Budget policies to compare (with --budget).")]


@commands("locomo")
def eval_locomo(
    data: Annotated[
        Path | None,
        typer.Option(
            help="locomo10.json-format file; default $RETAIN_LOCOMO, "
            "../shared/data/locomo/locomo_dev.json, then a checked download."
        ),
    ] = None,
    json_out: JsonOutOption = None,
    report: Annotated[Path, typer.Option(help="Folder for report.md and its chart.")] = Path("reports/locomo"),
    loco: Annotated[bool, typer.Option(help="Also report the leave-one-conversation-out fusion.")] = True,
    encoder: EncoderOption = "minilm",
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations (smoke runs).")] = None,
    budget: Annotated[
        str | None,
        typer.Option(help="Also run budgeted memory at these shares of each conversation's turns, e.g. 0.1,0.25,0.5."),
    ] = None,
    policy: PolicyOption = ALL_POLICIES,
    db: Annotated[
        str,
        typer.Option(
            help="Store to replay into: ':memory:' (default), a file path or a postgresql:// URL; "
            "each conversation's namespace must be empty there."
        ),
    ] = ":memory:",
) -> None:
    """The main job: replay LoCoMo into memory and score turn-level evidence retrieval.

    With --budget, each conversation is also streamed into a memory of limited capacity under each
    --policy, and the questions are asked against what is still hot (EMBER figures and curves)."""
    from retain.eval.datasets import load_locomo, resolve_locomo
    from retain.eval.locomo import run_locomo, run_locomo_budgets
    from retain.eval.report import write_json, write_locomo_report

    shares, policies = parse_grid(budget, policy)
    try:
        path = resolve_locomo(data)
        conversations = load_locomo(path)[:limit]
    except RetainError as exc:
        fail(exc)
    enc = make_encoder(encoder)
    err_console.print(f"LoCoMo: {path} ({len(conversations)} conversations), encoder {enc.name}")
    try:
        result = run_locomo(
            conversations, lambda: enc, loco=loco and len(conversations) > 1, dataset=f"locomo:{path.name}", location=db
        )
    except RetainError as exc:
        fail(exc)
    _print_locomo(result)
    if shares:
        budget_runs = run_locomo_budgets(conversations, enc, shares=shares, policies=policies)
        result["runs"].extend(budget_runs)
        print_budget_table(budget_runs, "LoCoMo budgeted memory (headline categories 1-4)")
    md = write_locomo_report(result, report)
    console.print(f"report: {md}")
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


def _print_locomo(result: dict[str, Any]) -> None:
    """The full-memory figures of :func:`retain.eval.locomo.run_locomo`: one row per retriever, then
    the timings and the context-unit recall."""
    from retain.eval.report import METRICS

    scored = result["runs"][0]["questions"]
    table = Table(
        title=f"LoCoMo turn-level retrieval: headline over categories 1-4 ({scored} questions with evidence; "
        f"{result['questions']} questions in all)"
    )
    for col in ("retriever", *METRICS, "cat1 r@10", "cat2 r@10", "cat3 r@10", "cat4 r@10"):
        table.add_column(col, no_wrap=True)
    for run in result["runs"]:
        cats = run["by_category"]
        table.add_row(
            run["retriever"],
            *(f"{run[m]:.3f}" if run[m] is not None else "–" for m in METRICS),
            *(f"{cats[c]['recall@10']:.3f}" if c in cats else "–" for c in ("1", "2", "3", "4")),
        )
    console.print(table)
    first = result["runs"][0]
    console.print(
        f"ingest {first['ingest_turns_per_s']} turns/s (embedding included) · search p50 "
        f"{first['search_ms_p50']} ms, p95 {first['search_ms_p95']} ms (query embedding included)"
    )
    units = result.get("window_units")
    if units:
        cats, k_units = units["by_category"], units["k"]
        console.print(
            f"context units (each hit with turns +-{units['window']}): evidence recall@{k_units} "
            f"{cell(units[f'recall@{k_units}_units'])} · "
            + " ".join(f"cat{c} {cell(cats.get(c))}" for c in ("1", "2", "3", "4"))
        )


def _beam_context(loaded: list[Any], enc: Any, json_out: Path | None) -> None:
    """``eval beam --context``: the in-context recall table (:func:`retain.eval.beam_runner.run_beam_context`)."""
    from retain.eval.beam_runner import run_beam_context
    from retain.eval.report import write_json

    result = run_beam_context(loaded, enc)
    table = Table(title="BEAM evidence in the agent's context (Memory.context, k=10, no working tier)")
    for col in ("category", "questions", "recall@10", "in context", "items"):
        table.add_column(col, no_wrap=True)
    for cat, v in result["by_category"].items():
        table.add_row(cat, str(v["questions"]), cell(v["recall@10"]), cell(v["in_context"]), cell(v["context_items"]))
    console.print(table)
    if json_out is not None:
        write_json(result, json_out)


@commands("beam")
def eval_beam(
    data: Annotated[
        Path, typer.Option(help="BEAM tier folder holding chat folders 1, 2, ... (e.g. ../shared/data/beam/100K).")
    ],
    json_out: JsonOutOption = None,
    report: Annotated[Path, typer.Option(help="Folder for report.md and its charts.")] = Path("reports/beam"),
    chats: Annotated[str | None, typer.Option(help="Only these chats, e.g. 1,2,3.")] = None,
    budget: Annotated[
        str | None, typer.Option(help="Budgets as shares of each chat's messages, e.g. 0.1,0.25,0.5.")
    ] = None,
    policy: PolicyOption = ALL_POLICIES,
    encoder: EncoderOption = "minilm",
    order: Annotated[
        str,
        typer.Option(
            help="How questions are asked: 'auto' (ordering questions get 10 episodes in event order, "
            "Memory.search(order='time')), 'rank' (every question best first), 'time'."
        ),
    ] = "auto",
    context: Annotated[
        bool,
        typer.Option(
            "--context",
            help="Score instruction_following and preference_following through Memory.context "
            "(what an agent's prompt holds: standing instructions and preferences, then 10 hits).",
        ),
    ] = False,
) -> None:
    """Replay BEAM chats into memory; evidence retrieval and budgeted hit rates per BEAM category."""
    from retain.eval.beam import load_beam
    from retain.eval.beam_runner import run_beam, write_beam_report
    from retain.eval.report import write_json
    from retain.eval.streams import ORDER_K

    shares, policies = parse_grid(budget, policy)
    if order not in ("rank", "auto", "time"):
        raise typer.BadParameter(f"--order {order!r}: use rank, auto or time")
    wanted = [c.strip() for c in chats.split(",")] if chats else None
    try:
        loaded = load_beam(data, wanted)
    except RetainError as exc:
        fail(exc)
    enc = make_encoder(encoder)
    err_console.print(f"BEAM: {data} ({len(loaded)} chats), encoder {enc.name}")
    if context:
        _beam_context(loaded, enc, json_out)
        return
    started = time.perf_counter()
    result = run_beam(
        loaded,
        [data / c.chat_id for c in loaded],
        enc,
        shares=shares,
        policies=policies,
        dataset=f"beam:{data.name}",
        order=order,
    )
    result["seconds"] = round(time.perf_counter() - started, 1)
    print_budget_table(result["runs"], "BEAM (all scored categories)")
    cats = Table(title="BEAM full memory by category")
    beam_metrics = ("recall@5", "recall@10", "hit@10", "mrr", "kendall_tau", "tau_retrieved")
    for col in ("category", "questions", "time-ordered", *beam_metrics):
        cats.add_column(col, no_wrap=True)
    for cat, v in result["runs"][0]["by_category"].items():
        row = (str(v["questions"]), str(v.get("time_ordered", 0)))
        cats.add_row(cat, *row, *(cell(v.get(m)) for m in beam_metrics))
    console.print(cats)
    console.print(f"order={order}; ordering questions scored on the k={ORDER_K} hits returned; {result['seconds']} s")
    console.print(f"report: {write_beam_report(result, report)}")
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


@commands("longmemeval")
def eval_longmemeval(
    data: Annotated[Path, typer.Option(help="LongMemEval-format JSON file (e.g. ../shared/data/longmemeval/*.json).")],
    json_out: JsonOutOption = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N questions (smoke runs).")] = None,
    encoder: EncoderOption = "minilm",
) -> None:
    """Replay each LongMemEval question's haystack into a fresh namespace and score session-level
    recall@5/@10 and turn-level recall (has_answer), per question type and overall."""
    from retain.eval.longmemeval import load_longmemeval
    from retain.eval.longmemeval_runner import run_longmemeval
    from retain.eval.report import write_json

    try:
        questions = load_longmemeval(data)[:limit]
    except RetainError as exc:
        fail(exc)
    enc = make_encoder(encoder)
    err_console.print(f"LongMemEval: {data} ({len(questions)} questions), encoder {enc.name}")
    result = run_longmemeval(questions, enc, dataset=f"longmemeval:{data.name}")
    columns = ("session_recall@5", "session_recall@10", "turn_recall@5", "turn_recall@10")
    table = Table(title=f"LongMemEval retrieval ({result['abstention_skipped']} abstention questions scored apart)")
    for col in ("question type", "questions", *columns):
        table.add_column(col, no_wrap=True)
    for name, row in [*result["by_type"].items(), ("overall", result["overall"])]:
        table.add_row(name, str(row["questions"]), *(cell(row.get(c)) for c in columns))
    console.print(table)
    console.print(
        f"ingest {result['ingest_turns_per_s']} turns/s · search p50 {result['search_ms_p50']} ms, "
        f"p95 {result['search_ms_p95']} ms"
    )
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


def parse_grid(budget: str | None, policy: str) -> tuple[list[float], list[str]]:
    """``--budget`` shares (each in [0, 1]) and ``--policy`` names; both empty without ``--budget``.

    Raises:
        typer.BadParameter: a share that is not a number or outside [0, 1], or an unknown policy.
    """
    from retain.retention.budget import BUDGET_POLICIES

    if budget is None:
        return [], []
    try:
        shares = [float(x) for x in budget.split(",") if x.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"--budget: {budget!r} is not a comma-separated list of numbers") from exc
    if not shares or any(not 0.0 <= x <= 1.0 for x in shares):
        raise typer.BadParameter("--budget: shares must be numbers in [0, 1]")
    policies = [p.strip() for p in policy.split(",") if p.strip()]
    unknown = [p for p in policies if p not in BUDGET_POLICIES | {"oracle"}]
    if unknown or not policies:
        raise typer.BadParameter(f"--policy: unknown {unknown}; choose from {ALL_POLICIES}")
    return shares, policies


def print_budget_table(runs: list[dict[str, object]], title: str) -> None:
    """One row per (policy, budget) run with the budgeted-memory figures (``BUDGET_COLUMNS``)."""
    from retain.eval.report import BUDGET_COLUMNS

    table = Table(title=title)
    for col in ("policy", "budget", *BUDGET_COLUMNS):
        table.add_column(col, no_wrap=True)
    for run in runs:
        table.add_row(*(str(run["policy"]), str(run["budget"])), *(cell(run.get(c)) for c in BUDGET_COLUMNS))
    console.print(table)

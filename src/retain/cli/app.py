"""The ``retain`` command line (typer). Every command has help text (``retain COMMAND --help``)."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from retain.cli.audit import register as register_audit
from retain.cli.observe import register as register_observe
from retain.cli.observe import setup_logging
from retain.cli.options import (
    PANEL_INSPECT,
    PANEL_MEMORY,
    PANEL_MODELS,
    DbOption,
    NamespaceOption,
    RawOption,
    StateOption,
    parse_state,
)
from retain.cli.records import register as register_records
from retain.cli.scenarios import register as register_scenarios
from retain.cli.segments import register as register_segments
from retain.cli.utility import register as register_utility
from retain.config import Settings
from retain.encoders.basis import DEFAULT_ENCODER, Encoder, HashingEncoder, MiniLMEncoder
from retain.errors import RetainError

SAM_COLUMNS = ("alpha", "content", "state", "prior")
"""Score parts of a state-adaptive hit that `retain search` shows as columns (all are in --json)."""

app = typer.Typer(
    help="retain: a memory layer for long-horizon LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
eval_app = typer.Typer(
    help="Benchmarks: replay a data set into memory and print retrieval figures.", no_args_is_help=True
)

ALL_POLICIES = "fifo,lru,random,utility,knapsack,lookahead,oracle"


@app.callback()
def _global_options(
    ctx: typer.Context,
    log: Annotated[
        str | None,
        typer.Option(
            "--log",
            help="Structured log to standard error: 'json' (JSON lines) or 'console'; "
            "default $RETAIN_LOG, else off. Never logs content.",
        ),
    ] = None,
) -> None:
    setup_logging(ctx, log)


console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)

EncoderOption = Annotated[
    str, typer.Option("--encoder", help=f"Encoder: 'minilm' ({DEFAULT_ENCODER}, default) or 'hashing-<dim>' (tests).")
]


def make_encoder(name: str) -> Encoder:
    """Encoder by CLI name: "minilm" / "all-MiniLM-L6-v2", or "hashing-<dim>" / "hashing"."""
    if name in ("minilm", DEFAULT_ENCODER):
        return MiniLMEncoder()
    if name.startswith("hashing"):
        _, _, dim = name.partition("-")
        if dim and not dim.isdigit():
            raise typer.BadParameter(f"encoder {name!r}: the dimension after 'hashing-' must be a number")
        try:
            return HashingEncoder(int(dim) if dim else 256)
        except RetainError as exc:
            raise typer.BadParameter(f"encoder {name!r}: {exc}") from exc
    raise typer.BadParameter(f"unknown encoder {name!r}: use 'minilm' or 'hashing-<dim>'")


def _open(db: Path | None, encoder: str | None = None, *, create: bool = False):  # type: ignore[no-untyped-def]
    from retain.memory import Memory
    from retain.store.sqlite import SQLiteStore

    settings = Settings.from_env()
    path = db if db is not None else settings.db_path
    if Path(path).is_dir():
        err_console.print(f"[red]error:[/red] {path} is a directory, not a store file", soft_wrap=True)
        raise typer.Exit(code=2)
    folder = Path(path).parent
    if not folder.is_dir():  # Memory(path) refuses it too; the CLI's hint is mkdir, not create_dirs=True
        problem = "is a file, not a folder" if folder.exists() else "does not exist (create it first)"
        err_console.print(f"[red]error:[/red] no store at {path}: the folder {folder} {problem}", soft_wrap=True)
        raise typer.Exit(code=2)
    if not create and not Path(path).is_file():
        err_console.print(
            f"[red]error:[/red] no store at {path} (add a memory first, or pass --db PATH)", soft_wrap=True
        )
        raise typer.Exit(code=2)
    try:
        if encoder is None:
            probe = SQLiteStore(path)
            try:
                probe.setup()
                encoder = probe.get_meta("encoder_name") or settings.encoder
            finally:
                probe.close()
        return Memory(path, encoder=make_encoder(encoder))
    except sqlite3.Error as exc:  # not an SQLite file, unreadable, locked beyond the busy timeout
        err_console.print(f"[red]error:[/red] cannot open the store {path}: {exc}", soft_wrap=True)
        raise typer.Exit(code=2) from exc


def _fail(exc: Exception) -> None:
    err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
    raise typer.Exit(code=2)


@app.command(rich_help_panel=PANEL_MEMORY)
def add(
    text: Annotated[str, typer.Argument(help="The memory text; '-' reads standard input.")],
    namespace: NamespaceOption,
    type: Annotated[str | None, typer.Option("--type", "-t", help="Memory type; inferred when omitted.")] = None,
    role: Annotated[str, typer.Option(help="Who said it.")] = "user",
    source: Annotated[str | None, typer.Option(help="Provenance, e.g. 'chat:42'.")] = None,
    event_time: Annotated[
        str | None, typer.Option("--event-time", help="When it happened: ISO 8601 with an offset (UTC 'Z' preferred).")
    ] = None,
    segment: Annotated[
        str | None, typer.Option(help="Session / segment id (for summarize, compress, timeline).")
    ] = None,
    seq: Annotated[int | None, typer.Option(help="Position in its stream (>= 0).")] = None,
    importance: Annotated[float | None, typer.Option(help="0..1; default: the utility model's prediction.")] = None,
    pinned: Annotated[bool, typer.Option("--pinned", help="Core tier, never evicted (trusted actors only).")] = False,
    actor: Annotated[str, typer.Option(help="Who writes it (audit log; trust).")] = "user",
    state: StateOption = None,
    db: DbOption = None,
) -> None:
    """Add one memory and print its id."""
    if text == "-":
        text = sys.stdin.read().rstrip("\r\n")
    try:
        agent_state = parse_state(state)
        with _open(db, create=True) as mem:
            rid = mem.add(
                text,
                namespace=namespace,
                type=type,
                role=role,
                source=source,
                event_time=event_time,
                segment=segment,
                seq=seq,
                importance=importance,
                pinned=pinned,
                actor=actor,
                state=agent_state,
            )
    except RetainError as exc:
        _fail(exc)
        return
    console.print(rid)


@app.command(rich_help_panel=PANEL_MEMORY)
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    namespace: NamespaceOption,
    k: Annotated[int, typer.Option("-k", help="Number of hits.")] = 10,
    preset: Annotated[str, typer.Option(help="default, rrf, lexical, dense or diverse.")] = "default",
    archive: Annotated[bool, typer.Option(help="Also search the archive tier.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
    raw: RawOption = False,
    window: Annotated[int, typer.Option(help="Also show each hit's neighbouring turns (seq +- window).")] = 0,
    state: StateOption = None,
    db: DbOption = None,
) -> None:
    """Search one namespace; prints hits with their score breakdown (higher = more relevant).

    With --state, the agent's task state drives the ranking (state-adaptive search; a terse query
    such as "ok, continue" leans on it). Secrets and personal data in the hits are shown as typed
    placeholders ([EMAIL]) unless --raw."""
    try:
        agent_state = parse_state(state)
        with _open(db) as mem:
            tiers = ["core", "dynamic", "archive"] if archive else None
            hits = mem.search(
                query,
                namespace=namespace,
                k=k,
                config=preset,
                tiers=tiers,
                allow_raw=raw,
                window=window,
                state=agent_state,
            )
            known = [] if hits else mem.store.namespaces()  # read only when a hint may be needed
    except RetainError as exc:
        _fail(exc)
        return
    if not hits:
        _hint_namespace(namespace, known)  # says nothing when the namespace holds records
    if as_json:
        console.print_json(json.dumps([h.to_dict() for h in hits], ensure_ascii=False))
        return
    sam = [name for name in SAM_COLUMNS if hits and name in hits[0].scores]  # a state-adaptive search's breakdown
    table = Table("rank", "score", "bm25", "dense", *sam, "type", "content", "id")
    for h in hits:
        table.add_row(
            str(h.rank),
            f"{h.score:.4g}",
            f"{h.scores['bm25']:.3g}",
            f"{h.scores['dense']:.3f}",
            *(f"{h.scores[name]:.3f}" for name in sam),
            h.record.type.value,
            "\n".join(r.content[:80] for r in h.window) if h.window else h.record.content[:80],
            h.record.id,
        )
    console.print(table)


@app.command(rich_help_panel=PANEL_INSPECT)
def export(
    namespace: NamespaceOption,
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of standard output.")] = None,
    raw: RawOption = False,
    db: DbOption = None,
) -> None:
    """Export a namespace as JSON (UTF-8, literal characters, no embeddings).

    Secrets and personal data are replaced by typed placeholders ([EMAIL], [API_KEY]) unless --raw."""
    try:
        with _open(db) as mem:
            text = mem.export(namespace=namespace, allow_raw=raw)
            known = mem.store.namespaces()
    except RetainError as exc:
        _fail(exc)
        return
    _hint_namespace(namespace, known)
    _emit(text, out)


def _hint_namespace(namespace: str, known: list[str]) -> None:
    """On standard error, say so when ``namespace`` holds nothing (a typo is the usual cause)."""
    if namespace in known:
        return
    listed = ", ".join(sorted(known)[:20]) or "none"
    typer.echo(f"note: namespace {namespace!r} holds no records; namespaces in this store: {listed}", err=True)


@app.command(rich_help_panel=PANEL_INSPECT)
def handoff(
    namespace: Annotated[str, typer.Argument(help="Namespace to summarise.")],
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of standard output.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON (retain-handoff/1) instead of Markdown.")] = False,
    recent: Annotated[int, typer.Option(help="Latest observations and results to show.", min=1)] = 10,
    db: DbOption = None,
) -> None:
    """Write a redacted case summary of a namespace for another agent or a person.

    Hard constraints, preferences, goals, plan steps, facts and recent results, by type in event
    order; superseded records excluded; secrets replaced by placeholders; a Withheld list says what
    was withheld and why (records typed sensitive are withheld entirely)."""
    try:
        with _open(db) as mem:
            text = mem.handoff(namespace, fmt="json" if as_json else "markdown", recent=recent).text
    except RetainError as exc:
        _fail(exc)
        return
    _emit(text.rstrip("\n"), out)


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        out.write_text(text, encoding="utf-8")
        console.print(f"wrote {out}")


@app.command(rich_help_panel=PANEL_INSPECT)
def info(db: DbOption = None) -> None:
    """Show the store's location, encoder and record counts per namespace and tier."""
    try:
        with _open(db) as mem:
            console.print_json(json.dumps(mem.info(), ensure_ascii=False))
    except RetainError as exc:
        _fail(exc)


@app.command(rich_help_panel=PANEL_MODELS)
def reembed(
    db: Annotated[Path, typer.Argument(help="Store file to re-embed.")],
    encoder: EncoderOption = "minilm",
) -> None:
    """Re-embed every record of a store with another encoder (after an EncoderMismatch)."""
    from retain.memory import Memory

    if not db.is_file():
        _fail(RetainError(f"no store at {db}"))
    count = Memory.reembed(db, make_encoder(encoder))
    console.print(f"re-embedded {count} records with {encoder}")


@app.command("train-fusion", rich_help_panel=PANEL_MODELS)
def train_fusion_cmd(
    out: Annotated[Path, typer.Option(help="Where to write the fusion model JSON.")],
    data: Annotated[Path | None, typer.Option(help="LoCoMo-format file (default: see 'retain eval locomo').")] = None,
    encoder: EncoderOption = "minilm",
) -> None:
    """Fit the learned fusion on LoCoMo-format conversations (dev data only) and write it as JSON.

    The model shipped in retain/models/fusion.json was built with:
    retain train-fusion --data ../shared/data/locomo/locomo_dev.json --out src/retain/models/fusion.json
    """
    from retain.eval.datasets import load_locomo, resolve_locomo
    from retain.eval.locomo import fusion_training_pools
    from retain.retrieval.fusion import train_fusion

    try:
        path = resolve_locomo(data)
        conversations = load_locomo(path)
    except RetainError as exc:
        _fail(exc)
        return
    enc = make_encoder(encoder)
    features, labels = fusion_training_pools(conversations, lambda: enc)
    ids = ", ".join(c.sample_id for c in conversations)
    model = train_fusion(
        features,
        labels,
        trained_on=f"{path.name} ({len(conversations)} conversations: {ids}), categories 1-4, encoder {enc.name}",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.to_json() + "\n", encoding="utf-8")
    console.print(f"wrote {out} (trained on {len(features)} questions)")


@eval_app.command("locomo")
def eval_locomo(
    data: Annotated[
        Path | None,
        typer.Option(
            help="locomo10.json-format file; default $RETAIN_LOCOMO, "
            "../shared/data/locomo/locomo_dev.json, then a checked download."
        ),
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON here.")] = None,
    report: Annotated[Path, typer.Option(help="Folder for report.md and its chart.")] = Path("reports/locomo"),
    loco: Annotated[bool, typer.Option(help="Also report the leave-one-conversation-out fusion.")] = True,
    encoder: EncoderOption = "minilm",
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations (smoke runs).")] = None,
    budget: Annotated[
        str | None,
        typer.Option(help="Also run budgeted memory at these shares of each conversation's turns, e.g. 0.1,0.25,0.5."),
    ] = None,
    policy: Annotated[str, typer.Option(help="Budget policies to compare (with --budget).")] = ALL_POLICIES,
) -> None:
    """The main job: replay LoCoMo into memory and score turn-level evidence retrieval.

    With --budget, each conversation is also streamed into a memory of limited capacity under each
    --policy, and the questions are asked against what is still hot (EMBER figures and curves)."""
    from retain.eval.datasets import load_locomo, resolve_locomo
    from retain.eval.locomo import run_locomo, run_locomo_budgets
    from retain.eval.report import METRICS, write_json, write_locomo_report

    shares, policies = _parse_grid(budget, policy)
    try:
        path = resolve_locomo(data)
        conversations = load_locomo(path)[:limit]
    except RetainError as exc:
        _fail(exc)
        return
    enc = make_encoder(encoder)
    err_console.print(f"LoCoMo: {path} ({len(conversations)} conversations), encoder {enc.name}")
    result = run_locomo(conversations, lambda: enc, loco=loco and len(conversations) > 1, dataset=f"locomo:{path.name}")
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
            f"{_cell(units[f'recall@{k_units}_units'])} · "
            + " ".join(f"cat{c} {_cell(cats.get(c))}" for c in ("1", "2", "3", "4"))
        )
    if shares:
        budget_runs = run_locomo_budgets(conversations, enc, shares=shares, policies=policies)
        result["runs"].extend(budget_runs)
        _print_budget_table(budget_runs, "LoCoMo budgeted memory (headline categories 1-4)")
    md = write_locomo_report(result, report)
    console.print(f"report: {md}")
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


@eval_app.command("beam")
def eval_beam(
    data: Annotated[
        Path, typer.Option(help="BEAM tier folder holding chat folders 1, 2, ... (e.g. ../shared/data/beam/100K).")
    ],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON here.")] = None,
    report: Annotated[Path, typer.Option(help="Folder for report.md and its charts.")] = Path("reports/beam"),
    chats: Annotated[str | None, typer.Option(help="Only these chats, e.g. 1,2,3.")] = None,
    budget: Annotated[
        str | None, typer.Option(help="Budgets as shares of each chat's messages, e.g. 0.1,0.25,0.5.")
    ] = None,
    policy: Annotated[str, typer.Option(help="Budget policies to compare (with --budget).")] = ALL_POLICIES,
    encoder: EncoderOption = "minilm",
    order: Annotated[
        str,
        typer.Option(
            help="How questions are asked: 'auto' (ordering questions get 10 episodes in event order, "
            "Memory.search(order='time')), 'rank' (every question best first), 'time'."
        ),
    ] = "auto",
) -> None:
    """Replay BEAM chats into memory; evidence retrieval and budgeted hit rates per BEAM category."""
    from retain.eval.beam import load_beam
    from retain.eval.beam_runner import run_beam, write_beam_report
    from retain.eval.report import write_json
    from retain.eval.streams import ORDER_K

    shares, policies = _parse_grid(budget, policy)
    if order not in ("rank", "auto", "time"):
        raise typer.BadParameter(f"--order {order!r}: use rank, auto or time")
    wanted = [c.strip() for c in chats.split(",")] if chats else None
    try:
        loaded = load_beam(data, wanted)
    except RetainError as exc:
        _fail(exc)
        return
    enc = make_encoder(encoder)
    err_console.print(f"BEAM: {data} ({len(loaded)} chats), encoder {enc.name}")
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
    _print_budget_table(result["runs"], "BEAM (all scored categories)")
    cats = Table(title="BEAM full memory by category")
    beam_metrics = ("recall@5", "recall@10", "hit@10", "mrr", "kendall_tau", "tau_retrieved")
    for col in ("category", "questions", "time-ordered", *beam_metrics):
        cats.add_column(col, no_wrap=True)
    for cat, v in result["runs"][0]["by_category"].items():
        row = (str(v["questions"]), str(v.get("time_ordered", 0)))
        cats.add_row(cat, *row, *(_cell(v.get(m)) for m in beam_metrics))
    console.print(cats)
    console.print(f"order={order}; ordering questions scored on the k={ORDER_K} hits returned; {result['seconds']} s")
    console.print(f"report: {write_beam_report(result, report)}")
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


@eval_app.command("longmemeval")
def eval_longmemeval(
    data: Annotated[Path, typer.Option(help="LongMemEval-format JSON file (e.g. ../shared/data/longmemeval/*.json).")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON here.")] = None,
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
        _fail(exc)
        return
    enc = make_encoder(encoder)
    err_console.print(f"LongMemEval: {data} ({len(questions)} questions), encoder {enc.name}")
    result = run_longmemeval(questions, enc, dataset=f"longmemeval:{data.name}")
    columns = ("session_recall@5", "session_recall@10", "turn_recall@5", "turn_recall@10")
    table = Table(title=f"LongMemEval retrieval ({result['abstention_skipped']} abstention questions scored apart)")
    for col in ("question type", "questions", *columns):
        table.add_column(col, no_wrap=True)
    for name, row in [*result["by_type"].items(), ("overall", result["overall"])]:
        table.add_row(name, str(row["questions"]), *(_cell(row.get(c)) for c in columns))
    console.print(table)
    console.print(
        f"ingest {result['ingest_turns_per_s']} turns/s · search p50 {result['search_ms_p50']} ms, "
        f"p95 {result['search_ms_p95']} ms"
    )
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


def _parse_grid(budget: str | None, policy: str) -> tuple[list[float], list[str]]:
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


def _print_budget_table(runs: list[dict[str, object]], title: str) -> None:
    from retain.eval.report import BUDGET_COLUMNS

    table = Table(title=title)
    for col in ("policy", "budget", *BUDGET_COLUMNS):
        table.add_column(col, no_wrap=True)
    for run in runs:
        table.add_row(*(str(run["policy"]), str(run["budget"])), *(_cell(run.get(c)) for c in BUDGET_COLUMNS))
    console.print(table)


def _cell(value: object) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


# Registered after this module's commands: ``retain --help`` lists the panels and commands in this order.
register_observe(app)
register_records(app)
register_audit(app)
register_segments(app)
register_utility(app)
register_scenarios(eval_app, app)
app.add_typer(eval_app, name="eval", rich_help_panel=PANEL_MODELS)


def main() -> None:  # pragma: no cover - console entry
    app()

"""Scenario commands: ``retain eval scenarios`` (:mod:`retain.eval.scenario_runner`), ``retain trace``
(one scenario's probes, hit by hit) and ``retain train-sam`` (fit the state-adaptive scorer).

Added to the root app by :func:`register` and to the ``eval`` group by :func:`register_eval` (both
called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from retain.cli.common import Commands, cell, fail, make_encoder
from retain.cli.options import PANEL_MODELS
from retain.config import Settings
from retain.errors import RetainError

if TYPE_CHECKING:
    from retain.eval.sam_train import TrainTypes

__all__ = ["eval_agent", "eval_scenarios", "register", "register_eval", "trace", "train_sam"]

commands = Commands()
register = commands.register
"""Adds ``trace`` and ``train-sam`` to ``app``."""

eval_commands = Commands()
register_eval = eval_commands.register
"""Adds ``scenarios`` and ``agent`` to the ``eval`` group ``eval_app``."""

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

FIGURES = ("recall@5", "recall@10", "mrr", "forbidden_rate", "integrity", "integrity_min")
HEADERS = ("r@5", "r@10", "MRR", "forb.", "integ.", "int. min")


def _parse_budgets(budget: str | None) -> list[int]:
    if not budget:
        return []
    try:
        values = [int(x) for x in budget.split(",") if x.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"--budget: {budget!r} is not a comma-separated list of whole numbers") from exc
    if any(v < 0 for v in values) or len(set(values)) != len(values):
        raise typer.BadParameter("--budget: capacities must be distinct whole numbers >= 0 (records)")
    return values


@eval_commands("scenarios")
def eval_scenarios(
    data: Annotated[
        list[Path] | None,
        typer.Option(
            help="A retain-scenario/1 JSON file or a folder of them (repeat for several); default $RETAIN_SCENARIOS."
        ),
    ] = None,
    budget: Annotated[
        str | None, typer.Option(help="Also run with these hot-memory capacities, in records, e.g. 10,20,40.")
    ] = None,
    retriever: Annotated[str, typer.Option(help="Retrievers to compare, comma-separated (e.g. content).")] = "content",
    policy: Annotated[str, typer.Option(help="Budget policy (with --budget): utility, fifo, lru, ...")] = "utility",
    json_out: Annotated[Path | None, typer.Option("--json", help="Write figures and per-probe rankings here.")] = None,
    per_scenario: Annotated[bool, typer.Option(help="Also print one row per scenario.")] = True,
    encoder: Annotated[str, typer.Option(help="'minilm' (default) or 'hashing-<dim>' (smoke runs).")] = "minilm",
) -> None:
    """Replay scenario files (retain-scenario/1) and score every probe: recall@5/10, MRR, forbidden
    rate, constraint integrity and type accuracy, overall and for terse probes, for the full memory
    and each --budget."""
    from retain.eval.report import write_json
    from retain.eval.scenario_runner import run_scenarios
    from retain.eval.scenarios import load_scenarios
    from retain.retention.budget import BUDGET_POLICIES

    budgets = _parse_budgets(budget)
    names = [r.strip() for r in retriever.split(",") if r.strip()]
    if policy not in BUDGET_POLICIES:
        raise typer.BadParameter(f"--policy: {policy!r} is not one of {sorted(BUDGET_POLICIES)}")
    default = Settings.from_env().scenarios_path
    paths = data or ([default] if default is not None else [])
    if not paths:
        raise typer.BadParameter("--data: give a scenario file or folder (or set $RETAIN_SCENARIOS)")
    where = ", ".join(map(str, paths))
    try:
        scenarios = load_scenarios(paths)
        enc = make_encoder(encoder)
        err_console.print(f"scenarios: {where} ({len(scenarios)} files), encoder {enc.name}")
        result = run_scenarios(scenarios, enc, budgets=budgets, retrievers=names, policy=policy, dataset=where)
    except RetainError as exc:
        fail(exc)
    _print_overall(result)
    if per_scenario:
        _print_per_scenario(result)
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


def _print_overall(result: dict[str, Any]) -> None:
    """One row per (budget, retriever) run of :func:`retain.eval.scenario_runner.run_scenarios`, then
    the scenarios a budget could not hold."""
    from retain.eval.scenario_runner import K

    table = Table(
        title=f"Scenarios: {result['scenarios']} files, {result['events']} events, {result['probes']} probes "
        f"({result['terse_probes']} terse); top-{K}"
    )
    for col in ("budget", "retriever", "feasible", *HEADERS, "type acc", "terse r@5", "terse r@10", "terse MRR",
                "terse forb."):  # fmt: skip
        table.add_column(col, no_wrap=True)
    for run in result["runs"]:
        all_, terse = run["overall"]["all"], run["overall"]["terse"]
        table.add_row(
            "full" if run["budget"] is None else f"{run['budget']:g}",
            run["retriever"],
            run["feasible"],
            *(cell(all_[m]) for m in FIGURES),
            cell(run["overall"]["type_accuracy"]),
            *(cell(terse[m]) for m in ("recall@5", "recall@10", "mrr", "forbidden_rate")),
        )
    console.print(table)
    for run in result["runs"]:
        for item in run["infeasible"]:
            console.print(
                f"budget {run['budget']:g}: {item['scenario']} infeasible at event {item['event']} "
                "(predicted hard constraints exceed the capacity; excluded from that budget's overall row)"
            )


def _print_per_scenario(result: dict[str, Any]) -> None:
    """One row per (budget, retriever, scenario); an infeasible scenario's row says where it failed."""
    detail = Table(title="Per scenario")
    for col in ("budget", "retriever", "scenario", "probes", *HEADERS, "type acc", "t. r@10"):
        detail.add_column(col, no_wrap=True)
    for run in result["runs"]:
        for sc in run["scenarios"]:
            head = ["full" if run["budget"] is None else f"{run['budget']:g}", run["retriever"], sc["id"]]
            if sc["figures"] is None:
                detail.add_row(*head, "–", f"infeasible at {sc['infeasible_at']}", *("–" for _ in range(7)))
                continue
            fig = sc["figures"]
            detail.add_row(
                *head,
                str(fig["all"]["probes"]),
                *(cell(fig["all"][m]) for m in FIGURES),
                cell(fig["type_accuracy"]),
                cell(fig["terse"]["recall@10"]),
            )
    console.print(detail)


def _parse_ints(value: str | None, option: str, low: int) -> list[int]:
    if not value:
        return []
    try:
        values = [int(x) for x in value.split(",") if x.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"{option}: {value!r} is not a comma-separated list of whole numbers") from exc
    if any(v < low for v in values) or len(set(values)) != len(values):
        raise typer.BadParameter(f"{option}: distinct whole numbers >= {low}")
    return values


@eval_commands("agent")
def eval_agent(
    data: Annotated[
        list[Path], typer.Option(help="A retain-scenario/1 JSON file or a folder of them (repeat for several).")
    ],
    tokens: Annotated[
        str, typer.Option(help="budget_tokens of each context() call, e.g. 500,1000,2000.")
    ] = "1000,2000,4000",
    capacity: Annotated[
        str | None, typer.Option(help="Also run with these hot-memory capacities, in records, e.g. 20,40.")
    ] = None,
    policy: Annotated[str, typer.Option(help="Budget policy (with --capacity): utility, fifo, lru, ...")] = "utility",
    archive: Annotated[
        bool | None, typer.Option("--archive/--no-archive", help="context(archive=...); default: context's default.")
    ] = None,
    oracle_supersedes: Annotated[
        bool, typer.Option(help="Apply the gold supersede links (an oracle, labelled so in the output).")
    ] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write figures and per-probe rows here.")] = None,
    encoder: Annotated[str, typer.Option(help="'minilm' (default) or 'hashing-<dim>' (smoke runs).")] = "minilm",
) -> None:
    """Replay scenario files as an agent loop (every event remembered as it arrives, context(query,
    state, budget_tokens) at each probe) and score the packed context: needed recall in context,
    forbidden presented as current, hard-constraint coverage of the final context, tokens used."""
    from retain.eval.agent_loop import run_agent_eval
    from retain.eval.report import write_json
    from retain.eval.scenarios import load_scenarios

    budgets = _parse_ints(tokens, "--tokens", 1)
    if not budgets:
        raise typer.BadParameter("--tokens: give at least one token budget")
    capacities = _parse_ints(capacity, "--capacity", 0)
    from retain.retention.budget import BUDGET_POLICIES

    if policy not in BUDGET_POLICIES:
        raise typer.BadParameter(f"--policy: {policy!r} is not one of {sorted(BUDGET_POLICIES)}")
    try:
        scenarios = load_scenarios(data)
        enc = make_encoder(encoder)
        err_console.print(f"agent loop: {', '.join(map(str, data))} ({len(scenarios)} files), encoder {enc.name}")
        result = run_agent_eval(
            scenarios,
            enc,
            tokens=budgets,
            capacities=capacities,
            policy=policy,
            archive=archive,
            oracle_supersedes=oracle_supersedes,
            dataset=", ".join(map(str, data)),
        )
    except RetainError as exc:
        fail(exc)
    oracle = " — ORACLE: gold supersede links applied" if oracle_supersedes else ""
    table = Table(title=f"Agent loop: {result['scenarios']} files, {result['probes']} probes{oracle}")
    for col in ("capacity", "tokens", "feasible", "needed in ctx", "forbidden", "final HC cov.", "final all HC",
                "tokens mean", "infeasible", "ms p95"):  # fmt: skip
        table.add_column(col, no_wrap=True)
    for run in result["runs"]:
        o = run["overall"]
        table.add_row(
            "full" if run["capacity"] is None else str(run["capacity"]),
            str(run["tokens"]),
            run["feasible"],
            *(cell(o[m]) for m in ("needed_recall", "forbidden_rate", "final_coverage", "final_all")),
            str(o["tokens_mean"]),
            str(o["infeasible_probes"]),
            cell(run["context_ms"]["p95"]),
        )
    console.print(table)
    if json_out is not None:
        write_json(result, json_out)
        console.print(f"json: {json_out}")


@commands("trace", PANEL_MODELS)
def trace(
    scenario: Annotated[Path, typer.Argument(help="One retain-scenario/1 JSON file.")],
    k: Annotated[int, typer.Option("-k", help="Hits shown per probe.", min=1)] = 10,
    retriever: Annotated[str, typer.Option(help="Retriever to trace: state (default) or content.")] = "state",
    encoder: Annotated[str, typer.Option(help="'minilm' (default) or 'hashing-<dim>'.")] = "minilm",
) -> None:
    """Replay one scenario and print, for each probe, the state, the top-k with score breakdowns
    (content, state, prior, alpha) and which needed events were missed."""
    from retain import Memory
    from retain.eval.scenario_runner import add_event, get_retriever, source_prefix
    from retain.eval.scenarios import load_scenario
    from retain.eval.streams import CachingEncoder

    try:
        sc = load_scenario(scenario)
        rank = get_retriever(retriever)
        if not sc.probes:
            console.print(f"{scenario}: scenario {sc.id} has no probes, nothing to trace ({len(sc.events)} events)")
            return
        # as the runner does: a text seen before (a repeated probe query, state part or event) is embedded once
        mem = Memory(encoder=CachingEncoder(make_encoder(encoder)))
    except RetainError as exc:
        fail(exc)
    prefix = source_prefix(sc.id)
    order = {e.id: e.index for e in sc.events}
    done = -1
    with mem:
        for probe in sorted(sc.probes, key=lambda p: order[p.after]):
            for event in sc.events[done + 1 : order[probe.after] + 1]:
                add_event(mem, sc.id, event)
            done = max(done, order[probe.after])
            hits = rank(mem, sc.id, probe.query, probe.state, k)
            ranked = [(h.record.source or "").removeprefix(prefix) for h in hits]
            missed = [n for n in probe.needed if n not in ranked]
            console.print(f"\n[bold]{probe.id}[/bold] after {probe.after}: {probe.query!r}")
            console.print(f"  state: {probe.state}", soft_wrap=True)
            table = Table(show_edge=False)
            for col in ("rank", "event", "mark", "type", "score", "content", "state", "prior", "alpha", "text"):
                table.add_column(col, no_wrap=col != "text")
            for h, eid in zip(hits, ranked, strict=True):
                mark = "needed" if eid in probe.needed else "FORBIDDEN" if eid in probe.forbidden else ""
                s = h.scores
                table.add_row(
                    str(h.rank),
                    eid,
                    mark,
                    h.record.type.value,
                    f"{h.score:.4g}",
                    *(f"{s[c]:.3f}" if c in s else "–" for c in ("content", "state", "prior", "alpha")),
                    h.record.content[:70].replace("\n", " "),
                )
            console.print(table)
            console.print(f"  missed needed: {', '.join(missed) or 'none'}")


@commands("train-sam", PANEL_MODELS)
def train_sam(
    data: Annotated[list[Path], typer.Option(help="Training scenario files or folders (repeatable).")],
    out: Annotated[Path, typer.Option(help="Where to write the fitted model (JSON).")],
    evaluate: Annotated[
        Path | None, typer.Option("--eval", help="Held-out scenario files or folder to score the fitted model on.")
    ] = None,
    epochs: Annotated[int, typer.Option(help="Adam steps (full batch).", min=1)] = 300,
    l2: Annotated[float, typer.Option(help="L2 penalty on the weights.", min=0.0)] = 3e-2,
    cv: Annotated[bool, typer.Option(help="Also report 5-fold grouped (by scenario) cross-validated figures.")] = True,
    encoder: Annotated[str, typer.Option(help="'minilm' (default) or 'hashing-<dim>'.")] = "minilm",
    train_types: Annotated[
        str,
        typer.Option(
            help="Candidate types to fit on: 'predicted' (the classifier's, default) or 'gold' (the training "
            "files' gold.type). Figures always score the classifier's types, as a search does."
        ),
    ] = "predicted",
) -> None:
    """Fit the state-adaptive scorer (retain.state.scorer) on scenario probes; report cross-validated (5 folds
    by scenario) and held-out recall@5/10 and MRR against content-only ranking on the same pools."""
    from retain.eval.sam_train import (
        TRAIN_TYPES,
        cross_validate,
        probe_examples,
        rank_metrics,
        scenario_files,
        training_examples,
    )
    from retain.eval.streams import CachingEncoder
    from retain.state.training import train_state_scorer

    if train_types not in TRAIN_TYPES:
        raise typer.BadParameter(f"{train_types!r}: use one of {', '.join(TRAIN_TYPES)}", param_hint="--train-types")
    types: TrainTypes = train_types
    try:
        enc = CachingEncoder(make_encoder(encoder))
        files = scenario_files(data)
        train = probe_examples(files, enc)
        held = probe_examples(scenario_files([evaluate]), enc) if evaluate is not None else []
        kwargs: dict[str, Any] = {"epochs": epochs, "l2": l2}
        rows: list[tuple[str, dict[str, Any]]] = [("train, content only", rank_metrics(train, None))]
        if cv:
            rows.append(("train, 5-fold by scenario", cross_validate(train, train_types=types, **kwargs)))
        command = "retain train-sam " + " ".join(f"--data {p}" for p in data) + f" --out {out} --train-types {types}"
        meta = {"trained_on": [f.name for f in files], "probes": len(train), "command": command, "train_types": types}
        model = train_state_scorer(training_examples(train, types), meta=meta, **kwargs)
        rows.append(("train, in-sample", rank_metrics(train, model)))
        if held:
            rows.append(("held-out, content only", rank_metrics(held, None)))
            rows.append(("held-out, state", rank_metrics(held, model)))
        model.meta["figures"] = dict(rows)
        model.save(out)
    except RetainError as exc:
        fail(exc)
    table = Table(title=f"State-adaptive scorer: {len(files)} training scenarios, {len(train)} probes")
    for col in ("set", "probes", "r@5", "r@10", "MRR", "terse probes", "terse r@5", "terse r@10", "terse MRR"):
        table.add_column(col, no_wrap=True)
    for name, fig in rows:
        a, t = fig["all"], fig["terse"]
        table.add_row(
            name,
            str(a["probes"]),
            *(cell(a.get(m)) for m in ("recall@5", "recall@10", "mrr")),
            str(t["probes"]),
            *(cell(t.get(m)) for m in ("recall@5", "recall@10", "mrr")),
        )
    console.print(table)
    console.print(f"model: {out}")

"""The ``retain train-utility`` command: fit EMBER's utility predictor (:mod:`retain.retention.utility`).

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`); :func:`loco_table` and
:func:`beam_chat_dirs` are shared with the utility benchmarks (benchmarks/utility_*.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from retain.cli.common import Commands, console, fail, make_encoder
from retain.cli.options import PANEL_MODELS
from retain.errors import RetainError

__all__ = [
    "SHARES",
    "beam_chat_dirs",
    "loco_table",
    "register",
    "train_agent_utility_cmd",
    "train_phases_cmd",
    "train_utility_cmd",
]

commands = Commands()
register = commands.register
"""Adds the ``train-utility`` command to ``app``."""

SHARES = (0.10, 0.25, 0.50)


def loco_table(title: str, result: dict[str, Any]) -> Table:
    """A rich table of :func:`retain.eval.utility_traces.loco_auc` or ``evaluate`` output: one row
    per conversation (ROC-AUC, hit rates of keeping the top 10 / 25 / 50 %), then the mean per data set
    (LoCoMo conversations vs BEAM chats, told apart by the ``beam-`` namespace prefix)."""
    table = Table(title=title)
    keys = [f"hit@{s:.0%}" for s in SHARES]
    for col in ("conversation", "turns", "positives", "ROC-AUC", *keys):
        table.add_column(col, justify="left" if col == "conversation" else "right", no_wrap=True)
    rows = result["per_trace"]
    for row in rows:
        table.add_row(
            row["name"], str(row["n"]), str(row["positives"]), f"{row['auc']:.3f}", *(f"{row[k]:.3f}" for k in keys)
        )
    groups = {"mean LoCoMo": [r for r in rows if not r["name"].startswith("beam-")]}
    groups["mean BEAM"] = [r for r in rows if r["name"].startswith("beam-")]
    for label, members in groups.items():
        if members:
            means = [sum(r[k] for r in members) / len(members) for k in ("auc", *keys)]
            table.add_row(f"[bold]{label}[/bold]", str(sum(r["n"] for r in members)), "", *(f"{m:.3f}" for m in means))
    return table


def beam_chat_dirs(path: Path) -> list[Path]:
    """``path`` itself when it is one BEAM chat folder, else its sub-folders that are, in numeric order."""
    if (path / "probing_questions").is_dir():
        return [path]
    chats = [p for p in path.iterdir() if (p / "probing_questions").is_dir()] if path.is_dir() else []
    return sorted(chats, key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name))


@commands("train-utility", PANEL_MODELS)
def train_utility_cmd(
    out: Annotated[Path, typer.Option(help="Where to write the utility model JSON.")],
    data: Annotated[
        Path | None, typer.Option(help="LoCoMo-format file (default: see 'retain eval locomo'). Dev data only.")
    ] = None,
    beam: Annotated[
        Path | None, typer.Option(help="A BEAM chat folder, or a folder of them (e.g. .../beam/100K). Dev only.")
    ] = None,
    encoder: Annotated[str, typer.Option(help="Encoder: 'minilm' (default) or 'hashing-<dim>' (tests).")] = "minilm",
    loco: Annotated[bool, typer.Option(help="Print the leave-one-conversation-out figures first.")] = True,
) -> None:
    """Fit the utility predictor (P(a record is needed later)) on oracle traces and write it as JSON.

    Each LoCoMo conversation (and BEAM chat) is replayed in order; a turn is positive when some
    question's evidence points at it. Prints leave-one-conversation-out ROC-AUC and the hit rates of
    keeping the top 10 / 25 / 50 % by score, then fits on everything. The model shipped in
    retain/models/utility.json was built with:
    retain train-utility --data ../shared/data/locomo/locomo_dev.json --beam ../shared/data/beam/100K
    --out src/retain/models/utility.json
    """
    from retain.eval.datasets import load_locomo, resolve_locomo
    from retain.eval.utility_traces import beam_traces, loco_auc, locomo_traces
    from retain.retention.utility import train_utility

    try:
        path = resolve_locomo(data)
        conversations = load_locomo(path)
        chats = beam_chat_dirs(beam) if beam is not None else []
        if beam is not None and not chats:
            raise typer.BadParameter(f"--beam {beam}: no BEAM chat folder (with probing_questions/) found")
        enc = make_encoder(encoder)
        traces = locomo_traces(conversations, enc) + beam_traces(chats, enc)
    except RetainError as exc:
        fail(exc)
    if loco and len(traces) > 1:
        console.print(loco_table("Utility predictor, leave-one-conversation-out", loco_auc(traces, shares=SHARES)))
    command = f"retain train-utility --data {data if data is not None else path}"
    command += f" --beam {beam}" if beam is not None else ""
    command += f" --out {out}" + (f" --encoder {encoder}" if encoder != "minilm" else "")
    ids = ", ".join(c.sample_id for c in conversations)
    described = f"{path.name} ({len(conversations)} conversations: {ids})"
    if chats:
        described += f" + BEAM {beam.name if beam else ''} chats {', '.join(c.name for c in chats)}"
    model = train_utility(traces, trained_on=f"{described}; encoder {enc.name}; rebuild: {command}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.to_json() + "\n", encoding="utf-8")
    size = out.stat().st_size
    console.print(f"wrote {out} ({size / 1024:.1f} KB; trained on {sum(len(t[2]) for t in traces)} records)")


@commands("train-agent-utility", PANEL_MODELS)
def train_agent_utility_cmd(
    out: Annotated[Path, typer.Option(help="Where to write the agent utility model JSON.")],
    data: Annotated[list[Path], typer.Option(help="Scenario files or folders (training split only); repeatable.")],
    c: Annotated[float, typer.Option(help="Inverse L2 regularisation strength.")] = 0.1,
) -> None:
    """Fit the agent-stream utility model (tool results, actions, plans, chatter) on scenario traces.

    An event is positive when a later probe's 'needed' names it. Records of other streams keep the
    shipped LoCoMo/BEAM model. The model shipped in retain/models/agent_utility.json was built with:
    retain train-agent-utility --data scenarios/train --out src/retain/models/agent_utility.json
    """
    from retain.eval.scenarios import load_scenarios
    from retain.eval.utility_traces import evaluate, scenario_traces
    from retain.retention.agent_utility import train_agent_utility
    from retain.retention.utility import RulePrior

    try:
        scenarios = load_scenarios(list(data))
        traces = scenario_traces(scenarios)
        model = train_agent_utility(traces, RulePrior(), c=c)
    except RetainError as exc:
        fail(exc)
    command = "retain train-agent-utility " + " ".join(f"--data {d}" for d in data) + f" --out {out}"
    command += f" --c {c}" if c != 0.1 else ""
    model.trained_on = f"{len(scenarios)} scenarios ({', '.join(str(d) for d in data)}); rebuild: {command}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.to_json() + "\n", encoding="utf-8")
    fit = evaluate(model, traces)
    console.print(f"wrote {out}; in-sample ROC-AUC {fit['mean_auc']:.3f} over {len(traces)} scenarios")


@commands("train-phases", PANEL_MODELS)
def train_phases_cmd(
    out: Annotated[Path, typer.Option(help="Where to write the phase-transition model JSON.")],
    data: Annotated[list[Path], typer.Option(help="Scenario files or folders (training split only); repeatable.")],
) -> None:
    """Fit the phase-transition model of predictive prefetch (Memory.prefetch) on scenario traces.

    Counts, for each task phase, the phase of the next event. The model shipped in
    retain/models/phases.json was built with:
    retain train-phases --data scenarios/train --out src/retain/models/phases.json
    """
    from retain.eval.scenarios import load_scenarios
    from retain.state.prefetch import PhaseModel

    try:
        scenarios = load_scenarios(list(data))
    except RetainError as exc:
        fail(exc)
    command = "retain train-phases " + " ".join(f"--data {d}" for d in data) + f" --out {out}"
    sequences = [[str(e.state.get("phase") or "") for e in s.events] for s in scenarios]
    model = PhaseModel.fit(sequences, trained_on=f"{len(scenarios)} scenarios; rebuild: {command}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.to_json() + "\n", encoding="utf-8")
    console.print(f"wrote {out}: {len(model.transitions)} phases")

"""CLI commands for context provenance and canaries: ``retain context``, ``retain explain``,
``retain add-canary``, ``retain check``.

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`). ``explain`` and ``check``
open the store file directly (no encoder is loaded).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from retain.cli.common import Commands, fail_plain, open_memory, open_store
from retain.cli.options import PANEL_INSPECT, PANEL_MEMORY, DbOption, NamespaceOption, StateOption, parse_state
from retain.errors import RetainError
from retain.safety.canary import check
from retain.safety.context import Provenance, explain
from retain.safety.redaction import redact_record

__all__ = ["add_canary_command", "check_command", "context_command", "explain_command", "register"]

commands = Commands()
register = commands.register
"""Adds ``context``, ``explain``, ``add-canary`` and ``check`` to ``app``."""


@commands("context", PANEL_MEMORY)
def context_command(
    query: Annotated[str, typer.Argument(help="What the agent is working on.")],
    namespace: NamespaceOption,
    budget: Annotated[int, typer.Option("--budget", help="Token budget of the context (encoder tokens).")],
    k: Annotated[int, typer.Option("-k", help="Search candidates considered.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print text and provenance as JSON.")] = False,
    state: StateOption = None,
    db: DbOption = None,
) -> None:
    """Pack a prompt context within a token budget; prints it and its provenance id.

    With --state, the working tier takes the current phase's records and the long-term hits are
    ranked by state-adaptive search."""
    try:
        agent_state = parse_state(state)
        with open_memory(db) as mem:
            ctx = mem.context(query, namespace=namespace, budget_tokens=budget, k=k, state=agent_state)
    except RetainError as exc:
        fail_plain(str(exc))
    if as_json:
        typer.echo(json.dumps({"text": ctx.text, **ctx.provenance.to_dict()}, ensure_ascii=False, indent=2))
        return
    typer.echo(ctx.text)
    typer.echo(
        f"provenance: {ctx.provenance_id} ({len(ctx.items)} records, {ctx.used_tokens}/{budget} tokens, "
        f"{len(ctx.left_out)} left out)",
        err=True,
    )


@commands("explain", PANEL_INSPECT)
def explain_command(
    provenance_id: Annotated[
        str, typer.Argument(help="Provenance id printed by 'retain context' (or Memory.context).")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the provenance as JSON.")] = False,
    db: DbOption = None,
) -> None:
    """Show how a context was packed: records in (scores, sources), candidates left out and why."""
    store = open_store(db)
    try:
        prov = explain(store, provenance_id)
        ids = [i.record_id for i in prov.items] + [x.record_id for x in prov.left_out]
        present = {r.id: redact_record(r).record.content for r in store.get(prov.namespace, ids)}  # as search shows it
    except RetainError as exc:
        fail_plain(str(exc))
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps(prov.to_dict(), ensure_ascii=False, indent=2))
        return
    _print_provenance(prov, present)


@commands("add-canary", PANEL_INSPECT)
def add_canary_command(
    text: Annotated[str, typer.Argument(help="The canary text (unique in the namespace).")],
    namespace: NamespaceOption,
    db: DbOption = None,
) -> None:
    """Plant a canary record (pinned, hidden from search) and print its id; 'retain check' watches it."""
    try:
        with open_memory(db, create=True) as mem:
            typer.echo(mem.add_canary(text, namespace=namespace))
    except RetainError as exc:
        fail_plain(str(exc))


@commands("check", PANEL_INSPECT)
def check_command(
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Only this namespace (default: all).")
    ] = None,
    db: DbOption = None,
) -> None:
    """Check that every canary is still held unchanged. Exit 0 when all are, 1 listing the others."""
    store = open_store(db)
    try:
        report = check(store, namespace)
    except RetainError as exc:
        fail_plain(str(exc))
    finally:
        store.close()
    counts = report.counts()
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    for c in report.canaries:
        typer.echo(f"{c.status:<8} {c.namespace}  {c.record_id}" + (f"  ({c.detail})" if c.detail else ""))
    if report.ok:
        typer.echo(f"ok: {len(report.canaries)} canaries, all held unchanged")
        return
    typer.echo(f"FAILED: {summary}")
    raise typer.Exit(code=1)


def _print_provenance(prov: Provenance, present: dict[str, str]) -> None:
    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(
        f"context {prov.id}  namespace {prov.namespace}  {prov.created_at:%Y-%m-%d %H:%M:%S} UTC\n"
        f"query: {prov.query}\n"
        f"tokens: {prov.used_tokens} of {prov.budget_tokens} ({prov.encoder})  k={prov.k}",
        markup=False,
        soft_wrap=True,
    )
    if prov.state is not None:
        console.print(f"state: {json.dumps(prov.state, ensure_ascii=False)}", markup=False, soft_wrap=True)
    included = Table("#", "why", "score", "bm25", "dense", "tokens", "source", "record", "content", title="included")
    for n, item in enumerate(prov.items, start=1):
        included.add_row(
            str(n),
            item.why,
            _num(item.score),
            _num(item.scores.get("bm25")),
            _num(item.scores.get("dense")),
            str(item.tokens),
            escape(item.source or "–"),
            item.record_id,
            _preview(present.get(item.record_id)),
        )
    console.print(included)
    left = Table("reason", "detail", "rank", "score", "tokens", "record", "content", title="left out")
    for x in prov.left_out:
        left.add_row(
            x.reason,
            escape(x.detail),
            "–" if x.rank is None else str(x.rank),
            _num(x.score),
            "–" if x.tokens is None else str(x.tokens),
            x.record_id,
            _preview(present.get(x.record_id)),
        )
    console.print(left)


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _preview(content: str | None) -> str:
    if content is None:
        return "(deleted)"
    return escape(content if len(content) <= 60 else content[:59] + "…")

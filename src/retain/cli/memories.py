"""The everyday commands over one store: ``add``, ``search``, ``export``, ``handoff`` and ``info``.

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from retain.cli.common import Commands, console, emit, fail, hint_namespace, open_memory
from retain.cli.options import (
    PANEL_INSPECT,
    PANEL_MEMORY,
    DbOption,
    NamespaceOption,
    RawOption,
    StateOption,
    parse_state,
)
from retain.errors import RetainError

__all__ = ["SAM_COLUMNS", "add", "export", "handoff", "info", "register", "search"]

commands = Commands()
register = commands.register
"""Adds ``add``, ``search``, ``export``, ``handoff`` and ``info`` to ``app``."""

SAM_COLUMNS = ("alpha", "content", "state", "prior")
"""Score parts of a state-adaptive hit that `retain search` shows as columns (all are in --json)."""

OutOption = Annotated[Path | None, typer.Option(help="Write to this file instead of standard output.")]


@commands("add", PANEL_MEMORY)
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
        with open_memory(db, create=True) as mem:
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
        fail(exc)
    console.print(rid)


@commands("search", PANEL_MEMORY)
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
        with open_memory(db) as mem:
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
        fail(exc)
    if not hits:
        hint_namespace(namespace, known)  # says nothing when the namespace holds records
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


@commands("export", PANEL_INSPECT)
def export(
    namespace: NamespaceOption,
    out: OutOption = None,
    raw: RawOption = False,
    db: DbOption = None,
) -> None:
    """Export a namespace as JSON (UTF-8, literal characters, no embeddings).

    Secrets and personal data are replaced by typed placeholders ([EMAIL], [API_KEY]) unless --raw."""
    try:
        with open_memory(db) as mem:
            text = mem.export(namespace=namespace, allow_raw=raw)
            known = mem.store.namespaces()
    except RetainError as exc:
        fail(exc)
    hint_namespace(namespace, known)
    emit(text, out)


@commands("handoff", PANEL_INSPECT)
def handoff(
    namespace: Annotated[str, typer.Argument(help="Namespace to summarise.")],
    out: OutOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON (retain-handoff/1) instead of Markdown.")] = False,
    recent: Annotated[int, typer.Option(help="Latest observations and results to show.", min=1)] = 10,
    db: DbOption = None,
) -> None:
    """Write a redacted case summary of a namespace for another agent or a person.

    Hard constraints, preferences, goals, plan steps, facts and recent results, by type in event
    order; superseded records excluded; secrets replaced by placeholders; a Withheld list says what
    was withheld and why (records typed sensitive are withheld entirely)."""
    try:
        with open_memory(db) as mem:
            text = mem.handoff(namespace, fmt="json" if as_json else "markdown", recent=recent).text
    except RetainError as exc:
        fail(exc)
    emit(text.rstrip("\n"), out)


@commands("info", PANEL_INSPECT)
def info(db: DbOption = None) -> None:
    """Show the store's location, encoder and record counts per namespace and tier."""
    try:
        with open_memory(db) as mem:
            console.print_json(json.dumps(mem.info(), ensure_ascii=False))
    except RetainError as exc:
        fail(exc)

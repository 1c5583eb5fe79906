"""Record commands of the ``retain`` command line: ``import`` (JSON Lines), ``timeline``, ``history``,
``pin`` / ``unpin``, ``delete`` and ``forget``.

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from retain.cli.common import Commands, console, fail, hint_namespace, open_memory
from retain.cli.options import PANEL_MEMORY, DbOption, NamespaceOption, RawOption
from retain.errors import InvalidInput, RetainError
from retain.record import MemoryRecord

__all__ = [
    "IMPORT_FILE_LIMIT",
    "delete_cmd",
    "forget_cmd",
    "history_cmd",
    "import_cmd",
    "pin_cmd",
    "read_jsonl",
    "register",
    "timeline_cmd",
    "unpin_cmd",
]

commands = Commands()
register = commands.register
"""Adds ``import``, ``timeline``, ``history``, ``pin``, ``unpin``, ``delete`` and ``forget`` to ``app``."""

IMPORT_FILE_LIMIT = 256 << 20
"""Largest file ``retain import`` reads: 256 MiB (bytes)."""

_ITEM = re.compile(r"^item (\d+): ")

ActorOption = Annotated[
    str,
    typer.Option(
        "--actor", help="Who asks (written to the audit log; untrusted actors may not touch protected records)."
    ),
]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why (written to the audit log, secrets scrubbed).")]
IdArgument = Annotated[str, typer.Argument(help="Record id (as printed by add, search or timeline).")]


def read_jsonl(source: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The objects of a JSON Lines file (``-`` = standard input), and each one's 1-based line number.

    Blank lines are skipped. Every object has the fields of :meth:`retain.Memory.add` (``content``
    required; ``type``, ``role``, ``source``, ``event_time``, ``seq``, ``segment``, ``importance``,
    ``pinned``, ``metadata``, ``state``, ...).

    Raises:
        InvalidInput: unreadable file, over :data:`IMPORT_FILE_LIMIT` bytes, not UTF-8, a line that is
            not JSON or not an object (the message gives its line number), or no object at all.
    """
    try:
        if source == "-":
            raw = sys.stdin.buffer.read(IMPORT_FILE_LIMIT + 1)
        else:
            with Path(source).open("rb") as handle:
                raw = handle.read(IMPORT_FILE_LIMIT + 1)
    except OSError as exc:
        raise InvalidInput(f"cannot read {source!r} ({exc.strerror or exc})") from exc
    if len(raw) > IMPORT_FILE_LIMIT:
        raise InvalidInput(f"{source!r} is larger than {IMPORT_FILE_LIMIT} bytes; split it")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{source!r} is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    items: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InvalidInput(f"line {number}: not JSON ({exc})") from exc
        if not isinstance(obj, dict):
            raise InvalidInput(f"line {number}: expected a JSON object, got {type(obj).__name__}")
        items.append(obj)
        lines.append(number)
    if not items:
        raise InvalidInput(f"{source!r} holds no JSON object (one memory per line)")
    return items, lines


def _by_line(exc: RetainError, lines: list[int]) -> RetainError:
    """``exc`` with add_many's "item i:" prefix replaced by the item's line number."""
    message = str(exc)
    match = _ITEM.match(message)
    if match is None or int(match.group(1)) >= len(lines):
        return exc
    return type(exc)(f"line {lines[int(match.group(1))]}: {message[match.end() :]}")


def _time(record: MemoryRecord) -> str:
    return record.event_time.isoformat().replace("+00:00", "Z") if record.event_time is not None else "unknown"


@commands("import", PANEL_MEMORY)
def import_cmd(
    file: Annotated[str, typer.Argument(help="JSON Lines file, one memory object per line; '-' reads standard input.")],
    namespace: NamespaceOption,
    actor: ActorOption = "user",
    db: DbOption = None,
) -> None:
    """Add many memories from a JSON Lines file in one transaction.

    Each line is an object with the fields of add ("content" required; "type", "role", "source",
    "event_time" (ISO 8601 with offset), "seq", "segment", "importance", "pinned", "metadata",
    "state"). Every line is checked before anything is written: one bad line stores none and the
    error names its line number."""
    try:
        items, lines = read_jsonl(file)
    except RetainError as exc:
        fail(exc)
    try:
        with open_memory(db, create=True) as mem:
            ids = mem.add_many(items, namespace=namespace, actor=actor)
    except RetainError as exc:
        fail(_by_line(exc, lines))
    distinct = len(dict.fromkeys(ids))
    console.print(
        f"imported {len(items)} lines into {namespace!r}: {distinct} records ({len(items) - distinct} already held)"
    )


@commands("timeline", PANEL_MEMORY)
def timeline_cmd(
    namespace: NamespaceOption,
    query: Annotated[
        str | None,
        typer.Option("--query", "-q", help="Only the episodes of this topic, one per session per round."),
    ] = None,
    start: Annotated[str | None, typer.Option(help="Keep event times >= START (ISO 8601 with offset, UTC).")] = None,
    end: Annotated[str | None, typer.Option(help="Keep event times < END (ISO 8601 with offset, UTC).")] = None,
    limit: Annotated[int | None, typer.Option(help="Most records to show (default: all; 10 with --query).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the records as JSON.")] = False,
    raw: RawOption = False,
    db: DbOption = None,
) -> None:
    """Current records of a namespace in event order.

    By event time (UTC), then session, then seq; unknown times last. Secrets and personal data
    are shown as placeholders unless --raw."""
    try:
        with open_memory(db) as mem:
            records = mem.timeline(namespace, query=query, start=start, end=end, limit=limit, allow_raw=raw)
            known = [] if records else mem.store.namespaces()
    except RetainError as exc:
        fail(exc)
    if not records:
        hint_namespace(namespace, known)
    shown = records  # redacted by Memory.timeline unless --raw
    if as_json:
        console.print_json(json.dumps([_brief(r) for r in shown], ensure_ascii=False))
        return
    table = Table("event time", "segment", "seq", "type", "content", "id")
    for r in shown:
        table.add_row(
            _time(r), r.segment or "", "" if r.seq is None else str(r.seq), r.type.value, r.content[:80], r.id
        )
    console.print(table)


@commands("history", PANEL_MEMORY)
def history_cmd(
    record_id: IdArgument,
    namespace: NamespaceOption,
    raw: RawOption = False,
    db: DbOption = None,
) -> None:
    """Every version of a memory, oldest first (what superseded what, and when)."""
    from retain.safety.redaction import redact_record

    try:
        with open_memory(db) as mem:
            chain = mem.history(record_id, namespace=namespace)
    except RetainError as exc:
        fail(exc)
    table = Table("version", "created (UTC)", "type", "tier", "content", "id")
    for i, r in enumerate(chain, start=1):
        shown = r if raw else redact_record(r).record
        created = shown.created_at.isoformat().replace("+00:00", "Z")
        table.add_row(str(i), created, shown.type.value, shown.tier.value, shown.content[:80], shown.id)
    console.print(table)


def _set_pin(record_id: str, namespace: str, actor: str, reason: str, db: str | None, *, pinned: bool) -> None:
    try:
        with open_memory(db) as mem:
            change = mem.pin if pinned else mem.unpin
            record = change(record_id, namespace=namespace, actor=actor, reason=reason)
    except RetainError as exc:
        fail(exc)
    console.print(f"{'pinned' if pinned else 'unpinned'} {record.id} ({record.tier.value})")


@commands("pin", PANEL_MEMORY)
def pin_cmd(
    record_id: IdArgument,
    namespace: NamespaceOption,
    actor: ActorOption = "user",
    reason: ReasonOption = "",
    db: DbOption = None,
) -> None:
    """Pin a current record: core tier, never evicted by the budget (audited)."""
    _set_pin(record_id, namespace, actor, reason, db, pinned=True)


@commands("unpin", PANEL_MEMORY)
def unpin_cmd(
    record_id: IdArgument,
    namespace: NamespaceOption,
    actor: ActorOption = "user",
    reason: ReasonOption = "",
    db: DbOption = None,
) -> None:
    """Unpin a record: back to the dynamic tier, subject to the budget (audited)."""
    _set_pin(record_id, namespace, actor, reason, db, pinned=False)


@commands("delete", PANEL_MEMORY)
def delete_cmd(
    record_id: IdArgument,
    namespace: NamespaceOption,
    actor: ActorOption = "user",
    reason: ReasonOption = "",
    db: DbOption = None,
) -> None:
    """Purge a memory with every version and split part of it.

    The audit log keeps only the fact of the deletion (ids, no content). Prints how many records
    were purged."""
    try:
        with open_memory(db) as mem:
            purged = mem.delete(record_id, namespace=namespace, actor=actor, reason=reason)
    except RetainError as exc:
        fail(exc)
    console.print(f"deleted {purged} record{'s' if purged != 1 else ''}")


@commands("forget", PANEL_MEMORY)
def forget_cmd(
    query_or_id: Annotated[
        str, typer.Argument(help="A record id, or a query (its best K hits sharing a term with it).")
    ],
    namespace: NamespaceOption,
    k: Annotated[int, typer.Option("-k", help="Hits of a query to forget.", min=1)] = 1,
    actor: ActorOption = "user",
    reason: ReasonOption = "",
    db: DbOption = None,
) -> None:
    """Forget a record by id or the K best hits of a query (every tier), with all their versions.

    Protected records (hard constraints, pinned) are kept and listed when the actor is untrusted.
    Exit 1 when something was refused."""
    try:
        with open_memory(db) as mem:
            report = mem.forget(query_or_id, namespace=namespace, actor=actor, reason=reason, k=k)
    except RetainError as exc:
        fail(exc)
    console.print(f"deleted {len(report.deleted)}: {', '.join(report.deleted) or '-'}")
    if report.refused:
        typer.echo(f"refused (protected, actor {report.actor!r} is untrusted): {', '.join(report.refused)}", err=True)
        raise typer.Exit(code=1)


def _brief(record: MemoryRecord) -> dict[str, Any]:
    """What ``retain timeline --json`` prints of a record."""
    return {
        "id": record.id,
        "event_time": None if record.event_time is None else _time(record),
        "segment": record.segment,
        "seq": record.seq,
        "type": record.type.value,
        "role": record.role,
        "content": record.content,
    }

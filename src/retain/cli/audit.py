"""CLI commands for :mod:`retain.safety.audit`: ``retain audit verify``, ``retain snapshot``, ``retain diff``.

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`). The commands open the
store file directly (no encoder is loaded) and print plain text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from retain.cli.common import Commands, fail_plain, open_store
from retain.cli.options import PANEL_INSPECT, DbOption
from retain.errors import RetainError
from retain.safety.audit import Snapshot, SnapshotDiff, diff, snapshot, verify_store
from retain.safety.audit_key import read_key_file, write_key_file

__all__ = [
    "audit_app",
    "diff_command",
    "format_diff",
    "keygen_command",
    "register",
    "snapshot_command",
    "verify_command",
]

audit_app = typer.Typer(help="The audit log: check that it is intact.", no_args_is_help=True)
commands = Commands()


def register(app: typer.Typer) -> None:
    """Add ``audit verify``, ``snapshot`` and ``diff`` to ``app``."""
    app.add_typer(audit_app, name="audit", rich_help_panel=PANEL_INSPECT)
    commands.register(app)


@audit_app.command("verify")
def verify_command(
    db: DbOption = None,
    checkpoint: Annotated[
        list[str] | None,
        typer.Option(
            "--checkpoint",
            help="SEQ:HASH printed by an earlier verify and kept outside the store (repeatable); "
            "catches a rewrite that re-hashed the rest of the log.",
        ),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            help="File holding the audit key the store was written with (MemoryConfig(audit_key=...); "
            "made by `retain audit keygen`): checks every keyed entry's HMAC, catches forged appends.",
        ),
    ] = None,
) -> None:
    """Recompute the audit log's hash chain. Exit 0 when intact, 1 listing the problems, 2 on error."""
    checkpoints = _parse_checkpoints(checkpoint or [])
    try:
        key = None if key_file is None else read_key_file(key_file)
        store = open_store(db)
        try:
            report = verify_store(store, checkpoints=checkpoints, key=key)
        finally:
            store.close()
    except RetainError as exc:
        fail_plain(str(exc))
    if report.ok:
        keyed = f"; {report.keyed} keyed entries, HMAC checked with the key" if key is not None else ""
        typer.echo(f"ok: {report.entries} audit entries, hash chain intact{keyed}")
        if report.head_seq is not None:
            typer.echo(f"head: {report.head_seq}:{report.head_hash}  (keep it; pass it back with --checkpoint)")
        return
    typer.echo(
        f"FAILED: {len(report.problems)} problem(s) in {report.entries} audit entries; "
        f"first untrusted entry: {report.first_bad_seq}"
    )
    for problem in report.problems:
        typer.echo(f"  {problem}")
    raise typer.Exit(code=1)


@audit_app.command("keygen")
def keygen_command(
    path: Annotated[
        Path, typer.Argument(help="Where to write the new key (never overwritten); keep it off the store.")
    ],
) -> None:
    """Make a random 256-bit audit key (64 hex characters, file mode 0600) for the keyed audit chain."""
    try:
        write_key_file(path)
    except RetainError as exc:
        fail_plain(str(exc))
    typer.echo(f"wrote a new audit key to {path}: pass its bytes as MemoryConfig(audit_key=...) (read_key_file)")


@commands("snapshot", PANEL_INSPECT)
def snapshot_command(
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Namespace (tenant / user / agent).")],
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of standard output.")] = None,
    db: DbOption = None,
) -> None:
    """Snapshot a namespace's records (ids, content hashes, tiers, priorities; no content) as JSON."""
    try:
        store = open_store(db)
        try:
            snap = snapshot(store, namespace)
        finally:
            store.close()
    except RetainError as exc:
        fail_plain(str(exc))
    if not snap.records:
        typer.echo(f"warning: namespace {namespace!r} holds no records", err=True)
    text = snap.to_json()
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"wrote {out} ({len(snap.records)} records)")


@commands("diff", PANEL_INSPECT)
def diff_command(
    before: Annotated[Path, typer.Argument(help="Earlier snapshot (JSON from 'retain snapshot').")],
    after: Annotated[Path, typer.Argument(help="Later snapshot.")],
) -> None:
    """Compare two snapshots: records added, removed, archived, restored, priority changed, changed."""
    try:
        a, b = (Snapshot.from_json(_read(path)) for path in (before, after))
    except RetainError as exc:
        fail_plain(str(exc))
    typer.echo(
        f"{before} ({a.namespace}, {a.taken_at:%Y-%m-%d %H:%M:%S} UTC) -> "
        f"{after} ({b.namespace}, {b.taken_at:%Y-%m-%d %H:%M:%S} UTC)"
    )
    for line in format_diff(diff(a, b)):
        typer.echo(line)


def format_diff(delta: SnapshotDiff) -> list[str]:
    """The lines ``retain diff`` prints: one section per kind of change, ids indented."""
    lines = []
    for title, ids in (
        ("added", delta.added),
        ("removed", delta.removed),
        ("archived", delta.archived),
        ("restored", delta.restored),
    ):
        lines.append(f"{title} ({len(ids)})")
        lines.extend(f"  {rid}" for rid in ids)
    lines.append(f"priority changed ({len(delta.priority_changed)})")
    lines.extend(f"  {rid}  {_show(x)} -> {_show(y)}" for rid, (x, y) in delta.priority_changed.items())
    lines.append(f"changed ({len(delta.changed)})")
    for rid, fields in delta.changed.items():
        lines.append(f"  {rid}  " + "; ".join(f"{f}: {_show(x)} -> {_show(y)}" for f, (x, y) in fields.items()))
    return lines


def _show(value: Any) -> str:
    return "None" if value is None else str(value)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        fail_plain(f"cannot read {path}: {exc.strerror or exc}")


def _parse_checkpoints(values: list[str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for value in values:
        seq, sep, digest = value.partition(":")
        if not sep or not seq.strip().isdigit() or len(digest.strip()) != 64:
            raise typer.BadParameter(f"--checkpoint: {value!r} is not SEQ:HASH (a 64-character sha256 hex)")
        out[int(seq)] = digest.strip().lower()
    return out

"""CLI command ``retain migrate``: copy a store into another (:mod:`retain.store.migrate`), for example
a SQLite file into Postgres when one agent's memory becomes a service's.

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`). Opens both stores
directly (no encoder is loaded) and prints plain text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from retain.cli.common import Commands, fail_plain, open_store
from retain.cli.options import PANEL_INSPECT
from retain.errors import RetainError
from retain.safety.audit import verify_store
from retain.safety.audit_key import read_key_file
from retain.store.base import Store
from retain.store.locate import is_url, open_location
from retain.store.migrate import migrate

__all__ = ["migrate_command", "register"]

commands = Commands()
register = commands.register


@commands("migrate", PANEL_INSPECT)
def migrate_command(
    source: Annotated[
        str, typer.Option("--from", help="The store to copy: a SQLite file or a postgresql:// URL (read only).")
    ],
    target: Annotated[
        str,
        typer.Option("--to", help="Where to copy it: a SQLite file (made when missing) or a postgresql:// URL."),
    ],
    key_file: Annotated[
        Path | None,
        typer.Option("--key-file", help="The audit key file of a keyed chain (source or target)."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Carry on a copy that was cut off (skips what is there).")
    ] = False,
) -> None:
    """Copy every namespace's records, edges, context provenance and the audit chain into another
    store, then verify the target's chain. Refuses (nothing written) a target namespace that holds
    records, another encoder, or a source chain that does not verify. Exit 0 when copied and
    verified, 1 when the target does not verify, 2 on error."""
    if source == target:
        fail_plain("--from and --to name the same store")
    try:
        key = None if key_file is None else read_key_file(key_file)
    except RetainError as exc:
        fail_plain(str(exc))
    src = open_store(source)
    try:
        dst = _open_target(target)
        try:
            report = migrate(src, dst, key=key, resume=resume, progress=typer.echo)
            check = verify_store(dst, key=key)
        finally:
            dst.close()
    except RetainError as exc:
        fail_plain(str(exc))
    finally:
        src.close()
    kept = "source hashes kept" if report.verbatim else "re-chained after the target's entries"
    typer.echo(
        f"copied {sum(report.records.values())} records in {len(report.records)} namespaces, {report.edges} edges, "
        f"{report.provenance} provenances, {report.audit_entries} audit entries ({kept})"
    )
    if not check.ok:
        typer.echo(f"FAILED: the target's audit log does not verify: {'; '.join(check.problems[:5])}")
        raise typer.Exit(code=1)
    typer.echo(f"ok: target verified, {check.entries} audit entries, head {check.head_seq}:{check.head_hash}")


def _open_target(location: str) -> Store:
    """The set-up store at ``location`` (a new SQLite file is made; its folder must exist)."""
    if not is_url(location) and not Path(location).parent.exists():
        fail_plain(f"no folder {Path(location).parent} for the target store")
    store = open_location(location, bulk=True)  # the copy first, the HNSW index after (migrate)
    try:
        store.setup()
    except BaseException:
        store.close()
        raise
    return store

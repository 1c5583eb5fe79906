"""Helpers every ``retain`` command shares: the command registry (:class:`Commands`), the output
consoles, opening a store from ``--db``, the encoder named by ``--encoder``, the global ``--log``
option, and the error exits.

Imports no other module of :mod:`retain.cli`: the command modules import this one, and
:mod:`retain.cli.app` imports the command modules.

Exit codes: 0 success, 1 a check that found problems (``check``, ``audit verify``, ``forget``
refusing a protected record), 2 bad input or an unusable store (the ``fail`` helpers below).
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from retain.config import Settings
from retain.encoders.basis import DEFAULT_ENCODER, Encoder, HashingEncoder, MiniLMEncoder
from retain.errors import RetainError
from retain.safety.observe import configure_logging, disable_logging
from retain.store.base import Store
from retain.store.locate import is_url, open_location
from retain.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from retain.memory import Memory

__all__ = [
    "LOG_FORMATS",
    "Commands",
    "cell",
    "console",
    "emit",
    "err_console",
    "fail",
    "fail_plain",
    "hint_namespace",
    "make_encoder",
    "open_memory",
    "open_store",
    "setup_logging",
]

_Command = TypeVar("_Command", bound=Callable[..., Any])


class Commands:
    """The commands of one CLI module, in the order they are defined: decorate each command function
    with ``@commands("name", PANEL)`` (``commands = Commands()``); ``register = commands.register``
    then adds them to an app in that order, which is their order in ``retain --help``."""

    def __init__(self) -> None:
        self._commands: list[tuple[str, str | None, Callable[..., Any]]] = []

    def __call__(self, name: str, panel: str | None = None) -> Callable[[_Command], _Command]:
        """A decorator listing its function as the command ``name`` (in the help panel ``panel``)."""

        def add(func: _Command) -> _Command:
            self._commands.append((name, panel, func))
            return func

        return add

    def register(self, app: typer.Typer) -> None:
        """Add the listed commands to ``app``, in the order they were listed."""
        for name, panel, func in self._commands:
            if panel is None:
                app.command(name)(func)
            else:
                app.command(name, rich_help_panel=panel)(func)


LOG_FORMATS = ("json", "console")
"""Values of ``--log`` / ``$RETAIN_LOG``."""

console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)
"""Standard output and standard error; 140 columns when not a terminal (pipes, tests)."""


def setup_logging(ctx: typer.Context, log: str | None) -> None:
    """Turn the structured log on for one CLI run (``--log``, else ``$RETAIN_LOG``); lines go to
    standard error, and logging is turned off again when the command ends.

    Raises:
        typer.BadParameter: a format other than those in :data:`LOG_FORMATS`.
    """
    fmt = log if log is not None else Settings.from_env().log
    if fmt is None:
        return
    if fmt not in LOG_FORMATS:
        raise typer.BadParameter(f"--log / RETAIN_LOG: {fmt!r} is not one of {', '.join(LOG_FORMATS)}")
    configure_logging(json=fmt == "json", stream=sys.stderr)
    ctx.call_on_close(disable_logging)


def make_encoder(name: str) -> Encoder:
    """Encoder by CLI name: "minilm" / "all-MiniLM-L6-v2", or "hashing-<dim>" / "hashing" (256 dimensions).

    Raises:
        typer.BadParameter: an unknown name, or a dimension that is not a number or that
            :class:`~retain.encoders.basis.HashingEncoder` refuses.
    """
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


def fail(exc: Exception) -> NoReturn:
    """Print ``error: <exc>`` on standard error (rich markup) and exit with code 2."""
    err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
    raise typer.Exit(code=2)


def fail_plain(message: str) -> NoReturn:
    """Print ``error: <message>`` on standard error as plain text and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=2)


def _open_url(url: str, encoder: str | None) -> Memory:
    """The Memory over the Postgres server at ``url`` (exits with code 2 when it cannot connect)."""
    from retain.memory import Memory

    try:
        if encoder is None:
            probe = open_location(url)
            try:
                probe.setup()
                encoder = probe.get_meta("encoder_name") or Settings.from_env().encoder
            finally:
                probe.close()
        return Memory(url, encoder=make_encoder(encoder))
    except RetainError as exc:  # StoreUnavailable names host and database
        err_console.print(f"[red]error:[/red] cannot open the store: {exc}", soft_wrap=True)
        raise typer.Exit(code=2) from exc


def open_memory(db: str | Path | None, encoder: str | None = None, *, create: bool = False) -> Memory:
    """The :class:`~retain.Memory` over the store file ``db`` (default ``$RETAIN_DB`` or ./retain.db).

    Args:
        db: store file (its folder must exist) or a ``postgresql://`` URL.
        encoder: CLI encoder name (:func:`make_encoder`); default the one the store was written with,
            else ``$RETAIN_ENCODER`` / the default encoder.
        create: allow a file that does not exist yet (commands that write).

    Exits with code 2 (message on standard error) when ``db`` is a folder, its folder is missing,
    the file is missing and ``create`` is false, or SQLite cannot open it.
    """
    from retain.memory import Memory  # loaded only by the commands that need it

    settings = Settings.from_env()
    if is_url(db):
        return _open_url(str(db), encoder)
    path = Path(db) if db is not None else settings.db_path
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


def open_store(db: str | Path | None) -> Store:
    """The set-up :class:`~retain.store.sqlite.SQLiteStore` of ``db`` (default ``$RETAIN_DB`` or
    ./retain.db), for commands that read the store directly and load no encoder.

    Exits with code 2 (plain message on standard error) when the file does not exist or cannot be
    opened as a retain store (``sqlite3.Error`` or :class:`~retain.errors.RetainError`).
    """
    if is_url(db):
        try:
            url_store = open_location(str(db))
            url_store.setup()
        except RetainError as exc:
            fail_plain(f"cannot open the store: {exc}")
        return url_store
    path = Path(db) if db is not None else Settings.from_env().db_path
    if not path.exists():
        fail_plain(f"no store at {path} (give --db PATH or set RETAIN_DB)")
    try:
        store = SQLiteStore(path)
    except (sqlite3.Error, RetainError) as exc:
        fail_plain(f"cannot open {path}: {exc}")
    try:
        store.setup()
    except (sqlite3.Error, RetainError) as exc:
        store.close()
        fail_plain(f"cannot open {path}: {exc}")
    except BaseException:
        store.close()
        raise
    return store


def hint_namespace(namespace: str, known: list[str]) -> None:
    """On standard error, say so when ``namespace`` holds nothing (a typo is the usual cause)."""
    if namespace in known:
        return
    listed = ", ".join(sorted(known)[:20]) or "none"
    typer.echo(f"note: namespace {namespace!r} holds no records; namespaces in this store: {listed}", err=True)


def emit(text: str, out: Path | None) -> None:
    """Write ``text`` to standard output (with a newline), or to the file ``out`` (UTF-8) and say so."""
    if out is None:
        sys.stdout.write(text + "\n")
    else:
        out.write_text(text, encoding="utf-8")
        console.print(f"wrote {out}")


def cell(value: object) -> str:
    """A table cell: ``–`` for None, three decimals for a float, else ``str``."""
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)

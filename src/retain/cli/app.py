"""The ``retain`` command line (typer): the root ``app`` and its ``eval`` group.

This module only assembles: each command lives at module level in a command module, which adds it
with its ``register`` function; the command modules share :mod:`retain.cli.common` and
:mod:`retain.cli.options` and never import this module. The order of the ``register`` calls is
the order of ``retain --help``. Every command has help text (``retain COMMAND --help``); docs/cli.md
is the reference.
"""

from __future__ import annotations

import importlib.util
from typing import Annotated

import typer

from retain.cli import (
    audit,
    bench,
    dashboard,
    evaluate,
    mcp_server,
    memories,
    migrate,
    models,
    observe,
    records,
    scenarios,
    segments,
    serve,
    utility,
)
from retain.cli.common import fail_plain, setup_logging
from retain.cli.options import PANEL_MODELS

__all__ = ["app", "eval_app", "main"]

app = typer.Typer(
    help="retain: a memory layer for long-horizon LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
eval_app = typer.Typer(
    help="Benchmarks: replay a data set into memory and print retrieval figures.", no_args_is_help=True
)


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


EVAL_EXTRA = ("tqdm", "matplotlib")
"""The packages of the ``eval`` extra, which only ``retain eval`` needs."""


@eval_app.callback()
def _eval_extra_installed() -> None:
    missing = [name for name in EVAL_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        fail_plain(f"retain eval needs the 'eval' extra ({', '.join(missing)} not installed): pip install -e '.[eval]'")


memories.register(app)
models.register(app)
observe.register(app)
bench.register(app)
records.register(app)
mcp_server.register(app)
audit.register(app)
migrate.register(app)
dashboard.register(app)
segments.register(app)
utility.register(app)
scenarios.register(app)
serve.register(app)
evaluate.register(eval_app)
scenarios.register_eval(eval_app)
app.add_typer(eval_app, name="eval", rich_help_panel=PANEL_MODELS)


def main() -> None:  # pragma: no cover - console entry
    """Run the ``retain`` command line (the ``retain`` console script calls :data:`app` directly)."""
    app()

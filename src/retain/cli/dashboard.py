"""The ``retain ui`` command: the dashboard (:mod:`retain.ui`) on 127.0.0.1, for a local trusted admin.

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import typer

from retain.cli.common import Commands, fail_plain, open_memory
from retain.cli.options import PANEL_INSPECT, DbOption

__all__ = ["UI_EXTRA", "register", "ui_cmd"]

commands = Commands()
register = commands.register
"""Adds ``ui`` to ``app``."""

UI_EXTRA = ("jinja2", "fastapi", "uvicorn", "multipart")
"""The packages of the ``ui`` extra, which only ``retain ui`` needs."""


@commands("ui", PANEL_INSPECT)
def ui_cmd(
    db: DbOption = None,
    port: Annotated[int, typer.Option(help="TCP port on 127.0.0.1 (1..65535).", min=1, max=65535)] = 8765,
    eval_json: Annotated[
        Path | None,
        typer.Option(
            "--eval-json",
            help="Evaluation report ('retain eval ... --json') whose budget-performance curve the budget page "
            "draws (default <db>.eval.json).",
        ),
    ] = None,
) -> None:
    """Serve the dashboard at http://127.0.0.1:PORT/ui/ (loopback only, no key: the local user is a
    trusted admin). Stops on Ctrl-C."""
    missing = [name for name in UI_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        fail_plain(f"retain ui needs the 'ui' extra ({', '.join(missing)} not installed): pip install -e '.[ui]'")
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import RedirectResponse

    from retain.ui.app import create_app
    from retain.ui.auth import local_admin

    with open_memory(db) as mem:
        root = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
        root.mount("/ui", create_app(mem, local_admin, eval_json=eval_json))

        @root.get("/", include_in_schema=False)
        def home() -> RedirectResponse:
            return RedirectResponse("/ui/")

        typer.echo(f"retain ui: http://127.0.0.1:{port}/ui/", err=True)
        uvicorn.run(root, host="127.0.0.1", port=port, log_level="warning")

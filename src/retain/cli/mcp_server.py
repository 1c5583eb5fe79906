"""The ``retain mcp`` command: serve one store to MCP clients over stdio or streamable HTTP
(:mod:`retain.service.mcp`; needs the ``mcp`` extra).

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

import importlib.util
from typing import Annotated

import typer

from retain.cli.common import Commands, fail, fail_plain, open_memory
from retain.cli.options import PANEL_MEMORY, DbOption
from retain.errors import RetainError

__all__ = ["mcp_cmd", "register"]

commands = Commands()
register = commands.register
"""Adds ``mcp`` to ``app``."""


@commands("mcp", PANEL_MEMORY)
def mcp_cmd(
    db: DbOption = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace of tool calls that name none.")
    ] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option("--allow", help="A namespace prefix tool calls may also name (repeatable; '' = any)."),
    ] = None,
    actor: Annotated[str, typer.Option("--actor", help="Actor of every call (audited; trust rules apply).")] = "agent",
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.", min=1, max=65535)] = 8765,
) -> None:
    """Serve the store to MCP clients: tools remember, recall, context, forget and explain.

    Over stdio by default (the client launches this command); with --http, streamable HTTP at
    http://HOST:PORT/mcp. The store file is created when missing.
    """
    if importlib.util.find_spec("mcp") is None:
        fail_plain("retain mcp needs the 'mcp' extra: pip install 'retain[mcp]'")
    from retain.service.mcp import ServerScope, build_server

    try:
        scope = ServerScope(namespace=namespace, prefixes=tuple(allow or ()), actor=actor)
    except RetainError as exc:
        fail(exc)
    memory = open_memory(db, create=True)
    try:
        server = build_server(memory, scope)
        if http:
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")
    finally:
        memory.close()

"""The ``retain mcp`` command: serve one store to MCP clients over stdio or streamable HTTP
(:mod:`retain.service.mcp`; needs the ``mcp`` extra).

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Annotated

import typer

from retain.cli.common import Commands, fail, fail_plain, open_memory
from retain.cli.options import PANEL_MEMORY, DbOption
from retain.errors import RetainError
from retain.safety.access import Grant, Role

if TYPE_CHECKING:
    from retain.memory import Memory

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
    grant: Annotated[
        list[str] | None,
        typer.Option(
            "--grant",
            help="PREFIX=ROLE (read, write, admin): a right of the server's principal on the namespaces "
            "starting with PREFIX (repeatable; ''=write for all). Without any, calls may use --namespace only.",
        ),
    ] = None,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="Confine the principal to the namespaces TENANT/...")
    ] = None,
    actor: Annotated[str, typer.Option("--actor", help="Actor of every call (audited; trust rules apply).")] = "agent",
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.", min=1, max=65535)] = 8765,
    conflict_model: Annotated[
        str,
        typer.Option(
            "--conflict-model",
            help="'rules' (default), 'auto' (the learned conflict model for MiniLM vectors, else the rules) "
            "or 'shipped' (the learned model for any encoder).",
        ),
    ] = "rules",
) -> None:
    """Serve the store to MCP clients: tools remember, recall, context, forget, explain and conflicts.

    Over stdio by default (the client launches this command); with --http, streamable HTTP at
    http://HOST:PORT/mcp. Every call runs as one principal (--actor, --grant, --tenant; the rights
    model of Memory.as_actor). The store file is created when missing.
    """
    if importlib.util.find_spec("mcp") is None:
        fail_plain("retain mcp needs the 'mcp' extra: pip install 'retain[mcp]'")
    from retain.safety.access import Principal
    from retain.service.mcp import ServerScope, build_server

    try:
        principal = None
        if grant or tenant:
            grants = [_grant(text) for text in grant or ()]
            if namespace is not None and not grants:
                grants.append(Grant(namespace, Role.WRITE))
            principal = Principal(actor, grants=tuple(grants), tenant=tenant)
        scope = ServerScope(namespace=namespace, principal=principal, actor=actor)
        if conflict_model not in ("auto", "rules", "shipped"):
            raise typer.BadParameter(f"--conflict-model: 'auto', 'rules' or 'shipped', got {conflict_model!r}")
    except RetainError as exc:
        fail(exc)
    memory = _with_model(open_memory(db, create=True), conflict_model)
    try:
        server = build_server(memory, scope)
        if http:
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")
    finally:
        memory.close()


def _grant(text: str) -> Grant:
    """``PREFIX=ROLE`` as a :class:`~retain.safety.access.Grant` (which checks the role).

    Raises:
        typer.BadParameter: no ``=``.
    """
    prefix, sep, role = text.rpartition("=")
    if not sep:
        raise typer.BadParameter(f"--grant: PREFIX=ROLE expected, got {text!r}")
    return Grant(prefix, role)  # type: ignore[arg-type]


def _with_model(memory: Memory, conflict_model: str) -> Memory:
    """``memory`` reopened with the conflict model asked for (same store and encoder): "rules" = the
    rules alone, "shipped" = the shipped model for any encoder; "auto" (the default config) as is."""
    if conflict_model == "auto":
        return memory
    from retain.config import MemoryConfig
    from retain.memory import Memory as Reopened

    path, encoder = memory.store.location, memory.encoder
    memory.close()
    return Reopened(
        path, encoder=encoder, config=MemoryConfig(conflict_model=None if conflict_model == "rules" else "shipped")
    )

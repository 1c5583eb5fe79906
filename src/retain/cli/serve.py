"""CLI commands of the REST service: ``retain serve`` and ``retain keys add | list | revoke``.

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`). ``serve`` needs the
``server`` extra (fastapi, uvicorn) and says so when it is missing; the ``keys`` commands need
only the standard library (:mod:`retain.service.keys`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from retain.cli.common import Commands, fail_plain, open_memory
from retain.cli.options import DbOption
from retain.config import Settings
from retain.errors import RetainError
from retain.safety.access import Grant
from retain.service.keys import ApiKey, KeyStore, default_keys_path
from retain.store.locate import is_url

if TYPE_CHECKING:
    from retain.memory import Memory

__all__ = ["PANEL_SERVICE", "keys_add", "keys_app", "keys_list", "keys_revoke", "register", "serve_command"]

PANEL_SERVICE = "Serve over HTTP"
"""The heading of ``serve`` and ``keys`` in ``retain --help``."""

SERVER_EXTRA = ("fastapi", "uvicorn")

keys_app = typer.Typer(help="API keys of 'retain serve': add, list, revoke.", no_args_is_help=True)
commands = Commands()

KeysOption = Annotated[
    Path | None, typer.Option("--keys", help="Keys file (default <db>.keys.json beside the store; hashes only).")
]


def register(app: typer.Typer) -> None:
    """Add ``serve`` and the ``keys`` group to ``app``."""
    commands.register(app)
    app.add_typer(keys_app, name="keys", rich_help_panel=PANEL_SERVICE)


def _keys(db: str | None, keys: Path | None) -> KeyStore:
    if keys is None and is_url(db):  # no file beside a server's database to put them in
        fail_plain("--keys FILE is needed with a postgresql:// --db")
    return KeyStore(
        keys if keys is not None else default_keys_path(db if db is not None else Settings.from_env().db_path)
    )


@commands("serve", PANEL_SERVICE)
def serve_command(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="Interface to bind; the loopback one unless you say otherwise.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one (see --ready-file).")] = 8080,
    keys: KeysOption = None,
    encoder: Annotated[
        str | None, typer.Option("--encoder", help="Encoder of a new store: 'minilm' (default) or 'hashing-<dim>'.")
    ] = None,
    budget: Annotated[
        int | None, typer.Option(help="Capacity of each namespace's hot memory, records (default unbounded).")
    ] = None,
    policy: Annotated[
        str, typer.Option(help="Eviction policy of --budget: fifo, lru, random, utility, knapsack, lookahead.")
    ] = "utility",
    trusted_actor: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-actor",
            help="Actor (a key's --actor) trusted to change protected records, besides admin and user; repeatable.",
        ),
    ] = None,
    max_body: Annotated[int, typer.Option(help="Largest request body, bytes; larger ones get 413.")] = 4 * 1024 * 1024,
    ready_file: Annotated[
        Path | None, typer.Option(help="Write HOST:PORT here once the server accepts connections.")
    ] = None,
    conflict_model: Annotated[
        str,
        typer.Option(
            "--conflict-model",
            help="'rules' (default), 'auto' (the learned conflict model for MiniLM vectors, else the rules) "
            "or 'shipped' (the learned model for any encoder).",
        ),
    ] = "rules",
    inline: Annotated[
        bool,
        typer.Option("--inline/--threaded", help="Memory calls on the event loop, or a worker thread."),
    ] = True,
    eval_json: Annotated[
        Path | None, typer.Option("--eval-json", help="Evaluation report for /ui's budget page (<db>.eval.json).")
    ] = None,
    ui: Annotated[
        bool,
        typer.Option(
            "--ui/--no-ui",
            help="Serve the dashboard under /ui behind the same keys (on when the 'ui' extra is installed).",
        ),
    ] = True,
) -> None:
    """Serve the store over HTTP: the Memory operations under /v1, /healthz and /openapi.json."""
    missing = [name for name in SERVER_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        fail_plain(
            f"retain serve needs the 'server' extra ({', '.join(missing)} not installed): pip install 'retain[server]'"
        )
    from retain.facade.aio import AsyncMemory
    from retain.service.app import serve

    memory = _open(
        db, encoder, budget=budget, policy=policy, trusted_actor=trusted_actor, conflict_model=conflict_model
    )
    store = _keys(db, keys)
    typer.echo(f"retain serve: store {memory.store.location}, keys {store.path}", err=True)
    mounts = _mounts(memory, ui, eval_json)
    try:
        serve(
            AsyncMemory(memory, inline=inline),
            store,
            host=host,
            port=port,
            max_body_bytes=max_body,
            ready_file=ready_file,
            mounts=mounts,
        )
    finally:
        memory.close()


def _mounts(memory: Memory, ui: bool, eval_json: Path | None) -> dict[str, object]:
    """``{"/ui": the dashboard}`` when asked and the 'ui' extra is installed, else ``{}``."""
    if not ui or not all(importlib.util.find_spec(name) is not None for name in ("jinja2", "multipart")):
        return {}
    from retain.ui.service import mounted

    return {"/ui": mounted(memory, eval_json=eval_json)}


def _open(
    db: str | None,
    encoder: str | None,
    *,
    budget: int | None,
    policy: str,
    trusted_actor: list[str] | None,
    conflict_model: str,
) -> Memory:
    """The served ``Memory``: the store's own encoder, with the budget, trusted actors and conflict
    model asked for (exits with code 2 on a bad value)."""
    from retain.config import DEFAULT_TRUSTED_ACTORS, MemoryConfig
    from retain.memory import Memory
    from retain.retention.budget import Budget

    if conflict_model not in ("auto", "rules", "shipped"):
        fail_plain(f"--conflict-model: 'auto', 'rules' or 'shipped', got {conflict_model!r}")
    memory = open_memory(db, encoder, create=True)
    if budget is None and not trusted_actor and conflict_model == "rules":  # the default config
        return memory
    path, chosen = memory.store.location, memory.encoder
    memory.close()
    try:
        trusted = DEFAULT_TRUSTED_ACTORS | frozenset(trusted_actor or ())
        return Memory(
            path,
            encoder=chosen,
            budget=None if budget is None else Budget(budget, policy=policy),
            config=MemoryConfig(
                trusted_actors=trusted,
                conflict_model=None if conflict_model == "rules" else conflict_model,  # type: ignore[arg-type]
            ),
        )
    except RetainError as exc:
        fail_plain(str(exc))


@keys_app.command("add")
def keys_add(
    tenant: Annotated[str, typer.Option(help="The tenant: the key reaches only namespaces named TENANT/...")],
    prefix: Annotated[
        list[str], typer.Option("--prefix", help="Namespace prefix within the tenant ('' = all); repeatable.")
    ],
    role: Annotated[
        list[str],
        typer.Option("--role", help="read, write or admin: one for every --prefix, or one for all of them."),
    ],
    actor: Annotated[str | None, typer.Option(help="Audit actor of the key's calls (default key:<id>).")] = None,
    db: DbOption = None,
    keys: KeysOption = None,
) -> None:
    """Make an API key; the key is printed once, as the last line (the file keeps its hash only)."""
    if len(role) not in (1, len(prefix)):
        fail_plain(f"--role: give one, or one per --prefix ({len(prefix)}); got {len(role)}")
    roles = role * len(prefix) if len(role) == 1 else role
    try:
        grants = [Grant(p, r) for p, r in zip(prefix, roles, strict=True)]  # type: ignore[arg-type]
        store = _keys(db, keys)
        key, entry = store.add(tenant=tenant, actor=actor, grants=grants)
    except RetainError as exc:
        fail_plain(str(exc))
    typer.echo(f"added key {entry.id} for tenant {entry.tenant} (actor {entry.actor}): {_grants(entry)}")
    typer.echo(f"keys file: {store.path}; the key is shown only now:")
    typer.echo(key)


@keys_app.command("list")
def keys_list(db: DbOption = None, keys: KeysOption = None) -> None:
    """List the API keys (ids, tenants, actors, grants, revoked or not); never the keys themselves."""
    try:
        entries = _keys(db, keys).list()
    except RetainError as exc:
        fail_plain(str(exc))
    if not entries:
        typer.echo("no API keys")
    for entry in entries:
        state = f"revoked {entry.revoked_at}" if entry.revoked_at else "active"
        typer.echo(f"{entry.id}  {entry.tenant}  {entry.actor}  {_grants(entry)}  created {entry.created_at}  {state}")


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (from 'retain keys list'), or the key itself.")],
    db: DbOption = None,
    keys: KeysOption = None,
) -> None:
    """Revoke an API key: refused (401) from the next request on, by running servers too."""
    try:
        entry = _keys(db, keys).revoke(key_id)
    except RetainError as exc:
        fail_plain(str(exc))
    typer.echo(f"revoked key {entry.id} (tenant {entry.tenant}) at {entry.revoked_at}")


def _grants(entry: ApiKey) -> str:
    return ", ".join(f"{g.prefix or '*'}={g.role.value}" for g in entry.grants)

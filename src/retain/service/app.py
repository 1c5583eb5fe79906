"""The FastAPI application of ``retain serve``, and the function that runs it under uvicorn.

:func:`create_app` builds the app over an :class:`~retain.facade.aio.AsyncMemory` and a
:class:`~retain.service.keys.KeyStore`: ``GET /healthz`` (no key), the /v1 endpoints of
:mod:`retain.service.routes`, the OpenAPI schema at ``/openapi.json`` (no key), retain's errors as
JSON (:mod:`retain.service.errors`) and the body size limit (:mod:`retain.service.limits`).

Extending it (the dashboard): ``extra_routers`` are FastAPI routers included as they are, whose
routes take ``principal: PrincipalDep`` or ``mem: ActorMemoryDep`` (:mod:`retain.service.auth`) to
get the authenticated caller or its view of the memory; ``mounts`` maps a path to any ASGI app,
mounted behind the same API keys (:class:`~retain.service.auth.KeyProtected`: 401 without a valid
key, else ``request.state.principal`` and ``request.state.memory``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI

from retain.facade.aio import AsyncMemory
from retain.service.auth import KeyProtected, Service
from retain.service.errors import install_error_handlers
from retain.service.keys import KeyStore
from retain.service.limits import DEFAULT_MAX_BODY_BYTES, BodyLimit
from retain.service.routes import router

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "create_app", "serve"]

DEFAULT_HOST = "127.0.0.1"
"""The server binds the loopback interface unless told otherwise."""
DEFAULT_PORT = 8080


def create_app(
    memory: AsyncMemory,
    keys: KeyStore,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    extra_routers: Sequence[APIRouter] = (),
    mounts: Mapping[str, Any] | None = None,
) -> FastAPI:
    """The REST application over ``memory`` with the API keys of ``keys``.

    Args:
        memory: the memory every request reaches, through its caller's view.
        keys: the keys file; re-read when it changes, so keys added or revoked while the app runs
            count from the next request.
        max_body_bytes: request bodies over it get 413 before they are parsed.
        extra_routers: more routers to include (their routes may depend on ``PrincipalDep`` /
            ``ActorMemoryDep``).
        mounts: path -> ASGI app, each mounted behind the API keys.

    The app does not close ``memory``; its owner does.
    """
    from retain import __version__

    app = FastAPI(
        title="retain",
        version=__version__,
        summary="A memory layer for long-horizon LLM agents: the Memory operations over HTTP.",
        docs_url=None,
        redoc_url=None,
    )
    service = Service(memory=memory, keys=keys)
    app.state.retain = service
    install_error_handlers(app)

    @app.get("/healthz", summary="Liveness: 200 when the server answers (no key needed)")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    app.include_router(router)
    for extra in extra_routers:
        app.include_router(extra)
    for path, sub in (mounts or {}).items():
        app.mount(path, KeyProtected(sub, service))
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app


def serve(
    memory: AsyncMemory,
    keys: KeyStore,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    log_level: str = "warning",
    ready_file: Path | None = None,
) -> None:
    """Run the app under uvicorn until interrupted (SIGINT / SIGTERM), then return.

    ``port`` 0 picks a free port; with ``ready_file``, the bound ``host:port`` is written there once
    the server accepts connections (how tests and benchmarks find an ephemeral port).
    """
    import uvicorn

    app = create_app(memory, keys, max_body_bytes=max_body_bytes)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, access_log=False, lifespan="off")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            bound = server.servers[0].sockets[0].getsockname()
            print(f"retain serve: listening on http://{bound[0]}:{bound[1]}", file=sys.stderr, flush=True)
            if ready_file is not None:
                tmp = ready_file.with_name(ready_file.name + ".tmp")
                tmp.write_text(f"{bound[0]}:{bound[1]}\n", encoding="utf-8")
                tmp.replace(ready_file)
        await task

    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:  # uvloop when installed
        runner.run(run())

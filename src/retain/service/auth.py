"""Who is calling: the API key of a request, as a :class:`~retain.safety.access.Principal`.

A request names its key in ``Authorization: Bearer <key>`` (or ``X-API-Key: <key>``).
:func:`current_principal` is the FastAPI dependency that checks it against the keys file and
raises :class:`~retain.errors.Unauthorized` (401, audited in the ``_service`` namespace) for no
key, an unknown or a revoked one; :func:`actor_memory` is the principal's view of the memory
(``AsyncMemory.as_actor``), which checks the role of every call on its namespace (403 otherwise).
Routers added with ``create_app(extra_routers=...)`` use the same two dependencies;
:class:`KeyProtected` gives a mounted ASGI app the same check, with the principal and its view in
``request.state.principal`` / ``request.state.memory``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.responses import JSONResponse

from retain.errors import Unauthorized
from retain.facade.aio import AsyncMemory
from retain.safety.access import SERVICE_NAMESPACE, Principal, audit_refusal
from retain.service.errors import error_body
from retain.service.keys import KeyStore

__all__ = ["ActorMemoryDep", "KeyProtected", "PrincipalDep", "Service", "actor_memory", "current_principal"]


@dataclass(frozen=True, slots=True)
class Service:
    """What the app's requests share (``app.state.retain``): the memory and the keys file."""

    memory: AsyncMemory
    keys: KeyStore

    async def authenticate(self, headers: Any, method: str, path: str) -> Principal:
        """The principal of the key in ``headers``; a refusal is audited and raised.

        Raises:
            Unauthorized: no key, a malformed, unknown or revoked key.
        """
        key = _presented_key(headers)
        try:
            return self.keys.authenticate(key)
        except Unauthorized as exc:
            store = self.memory.memory.store
            await self.memory.run(
                audit_refusal,
                store,
                namespace=SERVICE_NAMESPACE,
                op="authenticate",
                actor="unauthenticated",
                reason=str(exc),
                method=method,
                path=path,
            )
            raise


def _presented_key(headers: Any) -> str | None:
    auth = headers.get("authorization")
    if auth:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None
    key = headers.get("x-api-key")
    return key.strip() if key else None


def service_of(request: Request) -> Service:
    """The :class:`Service` of the app serving ``request``."""
    service: Service = request.app.state.retain
    return service


async def current_principal(request: Request) -> Principal:
    """FastAPI dependency: the principal of the request's API key.

    Raises:
        Unauthorized: (401) no key, a malformed, unknown or revoked key; audited.
    """
    return await service_of(request).authenticate(request.headers, request.method, request.url.path)


async def actor_memory(request: Request, principal: Annotated[Principal, Depends(current_principal)]) -> AsyncMemory:
    """FastAPI dependency: the memory as the request's principal sees it (rights checked per call)."""
    return service_of(request).memory.as_actor(principal)


PrincipalDep = Annotated[Principal, Depends(current_principal)]
"""``principal: PrincipalDep`` in a route: the authenticated caller."""
ActorMemoryDep = Annotated[AsyncMemory, Depends(actor_memory)]
"""``mem: ActorMemoryDep`` in a route: the caller's view of the memory."""


class KeyProtected:
    """ASGI wrapper of a mounted app: requests without a valid key get 401 (audited); the others
    reach ``app`` with ``scope["state"]["principal"]`` (the :class:`Principal`) and
    ``scope["state"]["memory"]`` (its :class:`~retain.facade.aio.AsyncMemory` view), which
    Starlette and FastAPI expose as ``request.state.principal`` / ``request.state.memory``."""

    def __init__(self, app: Any, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            principal = await self.service.authenticate(request.headers, request.method, request.url.path)
        except Unauthorized as exc:
            response = JSONResponse(error_body("Unauthorized", str(exc)), status_code=401)
            await response(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["principal"] = principal
        state["memory"] = self.service.memory.as_actor(principal)
        await self.app(scope, receive, send)

"""The dashboard behind ``retain serve``'s API keys: :func:`from_service`, the authorisation hook of
``/ui`` on the service (:mod:`retain.service`), and :func:`mounted`, the app to mount there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from retain.safety import access
from retain.ui.auth import Principal, Role

if TYPE_CHECKING:
    from retain.memory import Memory

__all__ = ["from_service", "mounted"]

_ROLES = {access.Role.READ: Role.READ, access.Role.WRITE: Role.WRITE, access.Role.ADMIN: Role.ADMIN}


def from_service(request: Request) -> Principal:
    """The caller of a request that passed the service's key check
    (:class:`~retain.service.auth.KeyProtected` sets ``request.state.principal``): its actor, its
    role per namespace from the key's grants and tenant, and reveal for keys holding an admin grant.

    Raises:
        HTTPException: 401 when the request carries no authenticated principal.
    """
    found = getattr(request.state, "principal", None)
    if not isinstance(found, access.Principal):
        raise HTTPException(401, "an API key is required")
    caller: access.Principal = found

    def resolve(namespace: str) -> Role | None:
        role = caller.role(namespace)
        return None if role is None else _ROLES[role]

    admin = any(grant.role is access.Role.ADMIN for grant in caller.grants)
    return Principal(caller.actor, can_reveal=admin, actor=caller.actor, resolve=resolve)


def mounted(memory: Memory, *, eval_json: Path | None = None) -> Any:
    """The dashboard app over ``memory`` with :func:`from_service` as its hook (mount it at ``/ui``);
    ``eval_json`` is the evaluation report of its budget page (default ``<store file>.eval.json``)."""
    from retain.ui.app import create_app

    return create_app(memory, from_service, eval_json=eval_json)

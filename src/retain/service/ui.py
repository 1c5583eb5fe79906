"""The dashboard (:mod:`retain.ui`) behind the service's API keys.

``create_app(memory, keys, mounts={"/ui": dashboard(path)})`` mounts the dashboard under ``/ui``:
:class:`~retain.service.auth.KeyProtected` answers 401 without a valid key, and
:func:`authorise_from_key` (the dashboard's ``Authorise`` hook) turns the key's
:class:`~retain.safety.access.Principal` into the dashboard's principal, so the dashboard shows and
changes only what the key's grants allow (its tenant's namespaces, prefixes and roles). The
dashboard opens its own ``Memory`` over the same store file (the service's is used by its worker
thread only); writes made from the dashboard are audited with the dashboard's actor ("admin" for a
key that is admin somewhere, else "user") and the key's actor name in their reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from retain.safety.access import Principal, Role
from retain.ui.auth import Principal as UiPrincipal
from retain.ui.auth import Role as UiRole

__all__ = ["authorise_from_key", "dashboard"]

_UI_ROLES = {Role.READ: UiRole.READ, Role.WRITE: UiRole.WRITE, Role.ADMIN: UiRole.ADMIN}


class _GrantedRoles(Mapping[str, UiRole]):
    """The dashboard's ``{namespace: role}`` computed from a principal's prefixes: looking up a
    namespace gives the principal's role there (longest prefix, within its tenant) or nothing."""

    def __init__(self, principal: Principal) -> None:
        self._principal = principal
        head = "" if principal.tenant is None else f"{principal.tenant}/"
        self._named = [head + grant.prefix for grant in principal.grants]

    def __getitem__(self, namespace: str) -> UiRole:
        role = self._principal.role(namespace)
        if role is None:
            raise KeyError(namespace)
        return _UI_ROLES[role]

    def __iter__(self) -> Iterator[str]:
        return iter(self._named)

    def __len__(self) -> int:
        return len(self._named)


def authorise_from_key(request: Request) -> UiPrincipal:
    """The dashboard's principal for a request :class:`~retain.service.auth.KeyProtected` let in.

    Raises:
        HTTPException: 401 when the request carries no authenticated principal (not mounted behind
            the keys).
    """
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):
        raise HTTPException(401, "no API key: send 'Authorization: Bearer <key>'")
    admin = any(grant.role is Role.ADMIN for grant in principal.grants)
    return UiPrincipal(principal.actor, _GrantedRoles(principal), can_reveal=admin)


def dashboard(path: str | Path, **memory_options: Any) -> Any:
    """The dashboard app over its own ``Memory(path, **memory_options)``, authorised by the keys:
    pass it as ``mounts={"/ui": dashboard(path)}``."""
    from retain.memory import Memory
    from retain.ui.app import create_app

    return create_app(Memory(path, **memory_options), authorise_from_key)

"""Who is asking: :class:`Principal` (a name and a :class:`Role` per namespace), the
:data:`Authorise` hook the app calls on every request, and the local hook of ``retain ui``."""

from __future__ import annotations

import enum
import hashlib
import hmac
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from starlette.exceptions import HTTPException
from starlette.requests import Request

__all__ = ["ANY_NAMESPACE", "Authorise", "Principal", "Role", "csrf_token", "local_admin", "read_only"]

ANY_NAMESPACE = "*"
"""The key of :attr:`Principal.roles` that grants a role on every namespace."""


class Role(enum.IntEnum):
    """What a caller may do in a namespace; each role includes the ones below it."""

    READ = 1
    WRITE = 2
    ADMIN = 3


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller of one request.

    Attributes:
        name: who (an API key's name, ``"local-admin"``); recorded in the reason of every audited write.
        roles: ``{namespace: Role}``; :data:`ANY_NAMESPACE` applies to every namespace not named.
        can_reveal: may see stored content unredacted (an explicit reveal per page; default False).
    """

    name: str
    roles: Mapping[str, Role] = field(default_factory=dict)
    can_reveal: bool = False

    def role(self, namespace: str) -> Role | None:
        """The caller's role in ``namespace``, or None when it may not see it."""
        return self.roles.get(namespace, self.roles.get(ANY_NAMESPACE))

    def may(self, namespace: str, needed: Role) -> bool:
        """True when the caller's role in ``namespace`` is ``needed`` or higher."""
        role = self.role(namespace)
        return role is not None and role >= needed

    @property
    def actor(self) -> str:
        """The actor of the caller's writes: "admin" for an admin of any namespace, else "user"."""
        return "admin" if Role.ADMIN in self.roles.values() else "user"


Authorise = Callable[[Request], Principal]
"""Called on every request; returns the caller, or raises :class:`starlette.exceptions.HTTPException`
(401: unknown caller; 403: refused)."""


def local_admin(request: Request) -> Principal:
    """The hook of ``retain ui``: a trusted admin of every namespace, for loopback clients only.

    Raises:
        HTTPException: 403 when the client address is not a loopback address.
    """
    host = request.client.host if request.client is not None else ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host in ("localhost", "testclient")
    if not loopback:
        raise HTTPException(403, f"retain ui answers 127.0.0.1 only, not {host or 'an unknown client'}")
    return Principal("local-admin", {ANY_NAMESPACE: Role.ADMIN}, can_reveal=True)


def read_only(name: str = "viewer") -> Authorise:
    """A hook granting ``name`` read access to every namespace, without reveal (for tests and demos)."""
    principal = Principal(name, {ANY_NAMESPACE: Role.READ})
    return lambda request: principal


def csrf_token(secret: bytes, principal: Principal) -> str:
    """The form token of ``principal`` under the app's ``secret`` (HMAC-SHA256, hex): a write form
    posted without it, or from another site, is refused."""
    return hmac.new(secret, principal.name.encode("utf-8"), hashlib.sha256).hexdigest()

"""Rights: who may read, write or administer which namespaces (multi-agent and multi-tenant memory).

A :class:`Principal` is one agent, person or API key: its ``actor`` name (written as the actor of
every audit entry its calls make), an optional ``tenant`` and a set of :class:`Grant` (a namespace
prefix and a :class:`Role`). ``Memory.as_actor(principal)`` returns a view
(:class:`~retain.facade.actor.ActorMemory`) that checks the principal's role before every call and
refuses with :class:`~retain.errors.Forbidden` (audited, nothing read or written); the REST service
(``retain serve``) maps each API key to a principal and goes through the same view.

Rules:

* **Tenants.** A principal with a tenant ``T`` owns the namespaces named ``T/...`` and no other:
  every namespace outside ``T/`` is refused whatever its grants, and listing shows only ``T/...``.
  Grant prefixes are relative to ``T/`` (a grant ``shared/`` of tenant ``acme`` covers
  ``acme/shared/...``). Without a tenant, prefixes are whole namespace names.
* **Prefixes.** A grant covers every namespace that starts with its prefix (plain string prefix;
  ``""`` covers all of the tenant). When several grants cover a namespace, the longest prefix
  decides, so ``"" -> write`` with ``"audit/" -> read`` makes ``audit/...`` read-only.
* **Roles** are ordered ``read < write < admin``: ``read`` gets, searches, packs contexts, explains,
  lists history, timelines, conflicts, redacted exports, handoffs and budget reports; ``write`` also
  adds, updates, deletes and forgets records, pins, links, gives feedback and resolves conflicts;
  ``admin`` also purges a whole namespace, exports raw content and reads the audit log.

Protected records (current hard constraints, pinned records) still follow
``MemoryConfig.trusted_actors`` (:mod:`retain.safety.integrity`): a ``write`` role lets a principal
ask, the trust rules decide whether its actor name may change a protected record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from retain.errors import Forbidden, InvalidInput
from retain.store import AppendAudit, AuditEntry, Store

__all__ = [
    "REFUSED",
    "SERVICE_NAMESPACE",
    "TENANT_PATTERN",
    "Grant",
    "Principal",
    "Role",
    "audit_refusal",
    "refuse",
]

TENANT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A tenant name: 1 to 64 letters, digits, ``_``, ``.`` or ``-``, starting with a letter or digit."""

SERVICE_NAMESPACE = "_service"
"""The namespace of audit entries that name no namespace (a request refused before its namespace
was known, such as one without an API key). No tenant's namespace can be named so."""

REFUSED = "refused"
"""``details["outcome"]`` of an audited refusal (as :mod:`retain.safety.integrity` writes it)."""


class Role(StrEnum):
    """What a grant allows on its namespaces, ordered ``read < write < admin``."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        """0 for read, 1 for write, 2 for admin: a role allows what every lower rank allows."""
        return _RANKS[self]

    def allows(self, needed: Role) -> bool:
        """True when this role is ``needed`` or higher."""
        return self.rank >= needed.rank


_RANKS = {Role.READ: 0, Role.WRITE: 1, Role.ADMIN: 2}


@dataclass(frozen=True, slots=True)
class Grant:
    """A role on every namespace whose name (relative to the tenant) starts with ``prefix``.

    Raises:
        InvalidInput: ``prefix`` not a string or over 256 characters, or ``role`` not a role name.
    """

    prefix: str
    role: Role

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str) or len(self.prefix) > 256:
            raise InvalidInput(f"grant prefix: a string of at most 256 characters, got {self.prefix!r}")
        try:
            object.__setattr__(self, "role", Role(self.role))
        except ValueError as exc:
            raise InvalidInput(f"grant role: one of read, write, admin; got {self.role!r}") from exc

    def to_dict(self) -> dict[str, str]:
        """``{"prefix": ..., "role": ...}``."""
        return {"prefix": self.prefix, "role": self.role.value}


@dataclass(frozen=True, slots=True)
class Principal:
    """An agent, a person or an API key, with its rights.

    Attributes:
        actor: the name written as the actor of its audit entries (1 to 128 characters, no control
            characters). Trust for protected records follows ``MemoryConfig.trusted_actors``.
        grants: the roles it holds, each on a namespace prefix (see the module docstring).
        tenant: the tenant whose namespaces (``tenant/...``) it is confined to; None = not confined.

    Raises:
        InvalidInput: a bad actor name, a grant that is not a :class:`Grant` (or a ``(prefix, role)``
            pair), or a tenant that does not match :data:`TENANT_PATTERN`.
    """

    actor: str
    grants: tuple[Grant, ...] = field(default=())
    tenant: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.actor, str) or not 0 < len(self.actor) <= 128 or not self.actor.isprintable():
            raise InvalidInput(f"actor: 1 to 128 printable characters, got {self.actor!r}")
        if self.tenant is not None and (not isinstance(self.tenant, str) or not TENANT_PATTERN.fullmatch(self.tenant)):
            raise InvalidInput(f"tenant: {TENANT_PATTERN.pattern} expected, got {self.tenant!r}")
        object.__setattr__(self, "grants", tuple(_grant(g) for g in self.grants))

    def local(self, namespace: str) -> str | None:
        """``namespace`` relative to the tenant (``"acme/trip"`` -> ``"trip"`` for tenant ``acme``),
        or None when it lies outside the tenant. Without a tenant, ``namespace`` itself."""
        if self.tenant is None:
            return namespace
        head = f"{self.tenant}/"
        return namespace[len(head) :] if namespace.startswith(head) else None

    def role(self, namespace: str) -> Role | None:
        """The principal's role on ``namespace`` (the grant with the longest matching prefix wins),
        or None when no grant covers it or it lies outside the tenant."""
        local = self.local(namespace)
        if local is None:
            return None
        best: Grant | None = None
        for grant in self.grants:
            if local.startswith(grant.prefix) and (best is None or len(grant.prefix) > len(best.prefix)):
                best = grant
        return None if best is None else best.role

    def can(self, namespace: str, needed: Role | str) -> bool:
        """True when the principal's role on ``namespace`` allows ``needed``."""
        role = self.role(namespace)
        return role is not None and role.allows(Role(needed))

    def visible(self, namespaces: Iterable[str]) -> list[str]:
        """The namespaces among ``namespaces`` the principal may read, sorted."""
        return sorted(ns for ns in namespaces if self.can(ns, Role.READ))

    def to_dict(self) -> dict[str, Any]:
        """``{"actor": ..., "tenant": ..., "grants": [{"prefix": ..., "role": ...}, ...]}``."""
        return {"actor": self.actor, "tenant": self.tenant, "grants": [g.to_dict() for g in self.grants]}


def _grant(value: object) -> Grant:
    if isinstance(value, Grant):
        return value
    if isinstance(value, tuple | list) and len(value) == 2:
        return Grant(value[0], value[1])
    raise InvalidInput(f"grants: each a Grant or a (prefix, role) pair, got {value!r}")


def audit_refusal(store: Store, *, namespace: str, op: str, actor: str, reason: str, **details: Any) -> None:
    """Append one audit entry for a refused request (``details["outcome"] = "refused"``), in
    ``namespace`` (the one asked for) or :data:`SERVICE_NAMESPACE` when none was named."""
    entry = AuditEntry(namespace, op, None, actor, reason, details={"outcome": REFUSED, **details})
    store.batch([AppendAudit(entry)])


def refuse(store: Store, principal: Principal, namespace: str, op: str, needed: Role) -> Forbidden:
    """Audit that ``principal`` was refused ``op`` on ``namespace`` and return the
    :class:`~retain.errors.Forbidden` to raise (its message names the role needed and held)."""
    held = principal.role(namespace)
    audit_refusal(
        store,
        namespace=namespace,
        op=op,
        actor=principal.actor,
        reason="access denied",
        needed=needed.value,
        held=None if held is None else held.value,
    )
    if principal.local(namespace) is None:
        why = f"the namespace is outside its tenant {principal.tenant!r}"
    else:
        why = f"needs {needed.value}, has role {held.value if held else 'none'}"
    return Forbidden(
        f"{principal.actor!r} may not {op} in namespace {namespace!r}: {why}. "
        "Nothing was read or written; the refusal is audited."
    )

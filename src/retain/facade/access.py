"""``Memory.as_actor``: the rights model of :mod:`retain.safety.access` applied to a ``Memory``."""

from __future__ import annotations

from retain.errors import InvalidInput
from retain.facade.actor import ActorMemory
from retain.facade.base import FacadeBase
from retain.safety.access import Principal

__all__ = ["AccessMixin"]


class AccessMixin(FacadeBase):
    """Views of the memory for one principal (an agent, a person, an API key), and its namespaces."""

    def namespaces(self) -> list[str]:
        """The namespaces holding at least one record (any tier), sorted (a principal's view:
        ``as_actor(p).namespaces()``, those it may read)."""
        return sorted(self._core.store.namespaces())

    def as_actor(self, principal: Principal) -> ActorMemory:
        """This memory as ``principal`` sees it: every call checks the principal's role on its
        namespace (read < write < admin, on namespace prefixes, confined to its tenant), raises
        :class:`~retain.errors.Forbidden` before reading or writing anything when the role is too
        low (the refusal is audited), and records the principal's ``actor`` in the audit log.
        See :mod:`retain.safety.access`.

        Raises:
            InvalidInput: ``principal`` is not a :class:`~retain.safety.access.Principal`.

        Example::

            planner = mem.as_actor(Principal("planner", grants=(Grant("trip/", Role.WRITE),)))
            reviewer = mem.as_actor(Principal("reviewer", grants=(Grant("trip/", Role.READ),)))
            rid = planner.add("Book the 9:40 train.", namespace="trip/42")
            reviewer.search("train", namespace="trip/42")   # allowed
            reviewer.delete(rid, namespace="trip/42")       # Forbidden, audited
        """
        if not isinstance(principal, Principal):
            raise InvalidInput(f"principal: a retain.Principal, got {type(principal).__name__}")
        return ActorMemory(self, principal)

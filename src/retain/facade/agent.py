"""Agent-loop methods of :class:`~retain.memory.Memory`: predictive prefetch (SAM)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retain.facade.base import FacadeBase
from retain.record import validate_namespace
from retain.state.prefetch import Prefetch, prefetch

__all__ = ["AgentLoopMixin"]


class AgentLoopMixin(FacadeBase):
    """Methods an agent loop calls between steps."""

    def prefetch(self, state: Mapping[str, Any], *, namespace: str, k: int = 10) -> Prefetch:
        """Warm the records the next step will likely need: the phase-transition model (learned from
        agent traces, ``retain/models/phases.json``) predicts the next phase from ``state["phase"]``
        and a state-adaptive search for that predicted state returns up to ``k`` hits, best first
        (higher score = more relevant). A phase never seen in training (or a state without a phase)
        returns a :class:`~retain.state.prefetch.Prefetch` with no hits and the reason, not an error.
        See :func:`retain.state.prefetch.prefetch`.

        Raises:
            InvalidInput: bad namespace, ``state`` not a valid agent state, ``k`` not an int >= 1.
        """
        validate_namespace(namespace)
        return prefetch(self._core, state, namespace=namespace, k=k)

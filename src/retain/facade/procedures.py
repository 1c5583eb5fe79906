"""Procedural memory methods of :class:`~retain.memory.Memory`: plan templates found by state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retain.facade.base import FacadeBase
from retain.sequence.procedures import Procedure, ProcedureTracker, find_procedures, record_procedure
from retain.state.agent import AgentState

__all__ = ["ProceduresMixin"]


class ProceduresMixin(FacadeBase):
    """Adds :meth:`record_procedure`, :meth:`procedures` and :meth:`procedure_tracker`."""

    def record_procedure(
        self,
        steps: Sequence[str],
        *,
        state: AgentState | Mapping[str, Any],
        namespace: str,
        outcome: str = "success",
        actor: str = "agent",
    ) -> str:
        """Remember a procedure: the ``steps`` (in order, each a non-empty string of at most 500
        characters, at most 100) that completed a plan from ``state``, with ``outcome``
        (``"success"`` or ``"failure"``). Stored in the companion namespace ``"<namespace>#procedures"``
        (tier archive: outside the budget, never in ``search``/``context`` of ``namespace``), audited
        as "add" with reason "procedure". Returns its record id. See
        :func:`retain.sequence.procedures.record_procedure`.

        Raises:
            InvalidInput: no steps, a bad step, an empty or bad state, an unknown outcome, a bad
                namespace or actor; nothing is written.
        """
        return record_procedure(self._core, steps, state=state, namespace=namespace, outcome=outcome, actor=actor)

    def procedures(
        self,
        state: AgentState | Mapping[str, Any],
        *,
        namespace: str,
        k: int = 5,
        include_failed: bool = False,
        min_score: float = -1.0,
    ) -> list[Procedure]:
        """The ``k`` procedures of ``namespace`` whose start state is most similar to ``state``, best
        first (:class:`~retain.sequence.procedures.Procedure`, ``score`` in [-1, 1], higher = more
        similar: a weighted cosine of phase, goal and whole-state embeddings); failed ones only with
        ``include_failed``; scores below ``min_score`` left out. See
        :func:`retain.sequence.procedures.find_procedures`.

        Raises:
            InvalidInput: a bad namespace or state, ``k`` not an int >= 1, ``min_score`` not finite.
        """
        return find_procedures(
            self._core, state, namespace=namespace, k=k, include_failed=include_failed, min_score=min_score
        )

    def procedure_tracker(self, namespace: str, *, actor: str = "agent") -> ProcedureTracker:
        """A :class:`~retain.sequence.procedures.ProcedureTracker` writing procedures of ``namespace``:
        feed it each new agent state; it records a procedure when the subgoal stack empties after
        plan steps (popped subgoals or the steps reported).

        Raises:
            InvalidInput: a bad namespace or actor.
        """
        return ProcedureTracker(self._core, namespace, actor=actor)

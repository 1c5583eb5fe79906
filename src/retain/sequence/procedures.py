"""Procedural memory: plan templates that worked, found again by the state they applied to.

A *procedure* is an ordered list of steps an agent carried out to completion and the agent state
(:class:`~retain.state.agent.AgentState`) it started from. It is a sequence over the event stream
(the formal model's plan: a path of actions from a state to a goal), so it lives beside the other
sequence structures (:mod:`retain.sequence.timeline`, :mod:`retain.sequence.episodes`).

Storage. Procedures of namespace ``ns`` are records of the companion namespace
``procedure_namespace(ns)`` (``"<ns>#procedures"``), type ``plan_step``, tier ``archive`` and
``metadata["kind"] == "procedure"``: they never count against the hot budget, are never evicted,
are not facts (so no supersede, merge or conflict detection applies to them) and never appear in
``search`` or ``context`` of ``ns``. Each write is one store transaction with an ``add`` audit entry
(reason ``"procedure"``, the number of steps and the outcome in its details).

Writing. Explicitly with :func:`record_procedure`, or from the agent's states with a
:class:`ProcedureTracker`: a sequence starts when the subgoal stack becomes non-empty; each popped
subgoal (and each step the caller reports) is a step; it completes when the stack is empty again
after at least one step, and is then written with the state it started from.

Retrieval (:func:`find_procedures`): every stored procedure's start state is embedded with the
memory's :class:`~retain.state.agent.StateEncoder` (memoised by text) and scored against the asked
state by :func:`state_similarity`, a weighted cosine of the phase, the goal (top subgoal with the
phase) and the whole-state vectors; higher = more similar; the ``k`` best are returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from retain.errors import InvalidInput
from retain.ingest.draft import NewMemory, draft
from retain.record import MemoryRecord, MemoryType, Tier, validate_actor, validate_namespace
from retain.state.agent import AgentState, EncodedState
from retain.store import AuditEntry
from retain.store.filters import RecordFilter

if TYPE_CHECKING:
    from retain.core import Core

__all__ = [
    "MAX_STEPS",
    "OUTCOMES",
    "PROCEDURE_SUFFIX",
    "Procedure",
    "ProcedureTracker",
    "find_procedures",
    "procedure_namespace",
    "record_procedure",
    "state_similarity",
]

PROCEDURE_SUFFIX = "#procedures"
"""Appended to a namespace to name the companion namespace its procedures are stored in."""
MAX_STEPS = 100
"""Most steps a procedure may hold; more is refused (a procedure is a template, not a log)."""
MAX_STEP_CHARS = 500
"""Longest step (characters); longer is refused."""
OUTCOMES = frozenset({"success", "failure"})
"""The outcomes a procedure may record; :func:`find_procedures` returns failures only on request."""
_WEIGHTS = (("phase", 0.3), ("goal", 0.4), ("whole", 0.3))
"""State parts compared by :func:`state_similarity` and their weights (renormalised over the parts
present in both states)."""


@dataclass(frozen=True, slots=True)
class Procedure:
    """A stored procedure and how well its start state matches the asked one.

    Attributes:
        id: the record id (in :func:`procedure_namespace` of the namespace asked).
        steps: the steps in order.
        state: the state the procedure applied to (the state when the sequence started).
        outcome: ``"success"`` or ``"failure"``.
        score: :func:`state_similarity` of ``state`` to the asked state, in [-1, 1]; higher = more similar.
        created_at: when it was recorded (UTC).
    """

    id: str
    steps: tuple[str, ...]
    state: AgentState
    outcome: str
    score: float
    created_at: datetime


def procedure_namespace(namespace: str) -> str:
    """The companion namespace holding the procedures of ``namespace``.

    Raises:
        InvalidInput: ``namespace`` is not a valid namespace, or the companion name would be too long.
    """
    return validate_namespace(validate_namespace(namespace) + PROCEDURE_SUFFIX)


def _check_steps(steps: Sequence[str]) -> tuple[str, ...]:
    if isinstance(steps, str) or not isinstance(steps, Sequence):
        raise InvalidInput(f"steps: expected a list of strings, got {type(steps).__name__}")
    if not steps:
        raise InvalidInput("steps: at least one step is required")
    if len(steps) > MAX_STEPS:
        raise InvalidInput(f"steps: {len(steps)} steps, limit is {MAX_STEPS}")
    out: list[str] = []
    for i, step in enumerate(steps):
        if not isinstance(step, str) or not step.strip():
            raise InvalidInput(f"steps[{i}]: must be a non-empty string, got {step!r}")
        if len(step) > MAX_STEP_CHARS:
            raise InvalidInput(f"steps[{i}]: {len(step)} characters, limit is {MAX_STEP_CHARS}")
        out.append(step.strip())
    return tuple(out)


def _content(steps: tuple[str, ...], state: AgentState) -> str:
    """The record's text: the state it applied to, then the numbered steps."""
    head = ", ".join(x for x in (state.phase, state.subgoals[-1] if state.subgoals else None) if x)
    body = "; ".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
    return f"Procedure ({head or 'any state'}): {body}"


def record_procedure(
    core: Core,
    steps: Sequence[str],
    *,
    state: AgentState | Mapping[str, Any],
    namespace: str,
    outcome: str = "success",
    actor: str = "agent",
) -> str:
    """Store a procedure of ``namespace`` (in its companion namespace, tier archive) with one ``add``
    audit entry, in one transaction; returns its record id.

    Raises:
        InvalidInput: no steps, more than :data:`MAX_STEPS`, an empty or over-long step, a bad
            ``state``, an ``outcome`` not in :data:`OUTCOMES`, a bad namespace or actor; nothing is written.
    """
    checked = _check_steps(steps)
    st = AgentState.from_dict(state)
    if st.empty:
        raise InvalidInput("state: a procedure needs the state it applied to (phase, subgoals or constraints)")
    if outcome not in OUTCOMES:
        raise InvalidInput(f"outcome: must be one of {sorted(OUTCOMES)}, got {outcome!r}")
    validate_actor(actor)
    home = procedure_namespace(namespace)
    meta = {"kind": "procedure", "steps": list(checked), "state": st.to_dict(), "outcome": outcome}
    item = NewMemory(content=_content(checked, st), type=MemoryType.PLAN_STEP, role=actor, metadata=meta)
    drafted = [r.evolve(tier=Tier.ARCHIVE) for r in draft(item, home, core.config)]
    records = core.embed(drafted)
    audit = [
        AuditEntry(
            home,
            "add",
            r.id,
            actor,
            "procedure",
            details={
                "type": r.type.value,
                "tier": r.tier.value,
                "steps": len(checked),
                "outcome": outcome,
                "content_hash": r.content_hash,
            },
        )
        for r in records
    ]
    try:
        core.store.put(records, audit)
    finally:
        core.invalidate(home)
    return records[0].id


def _cos(a: np.ndarray, b: np.ndarray) -> float | None:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return None
    return float(np.dot(a, b) / (na * nb))


def state_similarity(a: EncodedState, b: EncodedState) -> float:
    """Weighted cosine of two encoded states over their phase, goal and whole-state vectors (weights
    0.3, 0.4, 0.3, renormalised over the parts present in both); in [-1, 1], higher = more similar;
    0.0 when the two share no present part."""
    total = weight = 0.0
    for name, w in _WEIGHTS:
        c = _cos(getattr(a, name), getattr(b, name))
        if c is not None:
            total += w * c
            weight += w
    return total / weight if weight else 0.0


def _parse(record: MemoryRecord) -> tuple[tuple[str, ...], AgentState, str] | None:
    meta = record.metadata
    if meta.get("kind") != "procedure":
        return None
    try:
        steps = tuple(str(s) for s in meta.get("steps", ()))
        state = AgentState.from_dict(json.loads(json.dumps(meta.get("state") or {})))
    except (InvalidInput, TypeError, ValueError):
        return None  # a record written by hand into the companion namespace: not a procedure
    return steps, state, str(meta.get("outcome", "success"))


def find_procedures(
    core: Core,
    state: AgentState | Mapping[str, Any],
    *,
    namespace: str,
    k: int = 5,
    include_failed: bool = False,
    min_score: float = -1.0,
) -> list[Procedure]:
    """The ``k`` stored procedures of ``namespace`` whose start state is most similar to ``state``
    (:func:`state_similarity`), best first; failures only with ``include_failed``; those scoring
    below ``min_score`` are left out. Reads every procedure of the namespace (all tiers).

    Raises:
        InvalidInput: a bad namespace or state, ``k`` not an int >= 1, ``min_score`` not a number.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k: must be an int >= 1, got {k!r}")
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not np.isfinite(min_score):
        raise InvalidInput(f"min_score: must be a finite number, got {min_score!r}")
    asked = core.state_encoder.encode(AgentState.from_dict(state))
    home = procedure_namespace(namespace)
    records = core.store.list_records(home, RecordFilter(tiers=tuple(Tier), types=(MemoryType.PLAN_STEP,)))
    found: list[Procedure] = []
    for record in records:
        parsed = _parse(record)
        if parsed is None or (parsed[2] != "success" and not include_failed):
            continue
        steps, st, outcome = parsed
        score = state_similarity(asked, core.state_encoder.encode(st))
        if score >= min_score:
            found.append(Procedure(record.id, steps, st, outcome, round(score, 6), record.created_at))
    found.sort(key=lambda p: (-p.score, p.id))
    return found[:k]


class ProcedureTracker:
    """Turns an agent's successive states into procedures of ``namespace``.

    Call :meth:`observe` with each new state (and, optionally, the step just carried out). A sequence
    starts when the subgoal stack becomes non-empty (that state is the one the procedure applied to);
    a subgoal popped from the stack is a step (unless the caller reported steps), and so is every
    reported step; when the stack is empty again after at least one step, the procedure is written
    (:func:`record_procedure`, outcome ``"success"``, or ``"failure"`` when the caller says so) and
    its id returned. Not thread-safe: one tracker per agent loop.
    """

    def __init__(self, core: Core, namespace: str, *, actor: str = "agent") -> None:
        self._core = core
        self.namespace = validate_namespace(namespace)
        self.actor = validate_actor(actor)
        self._start: AgentState | None = None
        self._previous: AgentState | None = None
        self._steps: list[str] = []
        self._reported = False

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps of the sequence in progress (empty when none is)."""
        return tuple(self._steps)

    def observe(
        self, state: AgentState | Mapping[str, Any], *, step: str | None = None, failed: bool = False
    ) -> str | None:
        """Fold in the agent's new ``state``; ``step`` is the step just carried out (optional);
        ``failed`` marks the sequence that completes now as a failure. Returns the id of the procedure
        written when this state completes a sequence, else None.

        Raises:
            InvalidInput: a bad state or step (the tracker is unchanged then).
        """
        st = AgentState.from_dict(state)
        if step is not None:
            step = _check_steps([step])[0]
        previous, self._previous = self._previous, st
        if self._start is None and st.subgoals:
            self._start, self._steps, self._reported = st, [], False
        if self._start is None:
            return None
        if step is not None:
            if not self._reported:
                self._steps.clear()  # the caller reports its steps: popped subgoals no longer count
            self._reported = True
            self._steps.append(step)
        elif not self._reported and previous is not None:
            self._steps.extend(s for s in previous.subgoals if s not in st.subgoals and s not in self._steps)
        if st.subgoals or not self._steps:
            if not st.subgoals:
                self._start = None  # emptied without a step: nothing to remember
            return None
        start, steps = self._start, self._steps[:MAX_STEPS]
        self._start, self._steps, self._reported = None, [], False
        outcome = "failure" if failed else "success"
        return record_procedure(
            self._core, steps, state=start, namespace=self.namespace, outcome=outcome, actor=self.actor
        )

"""Predictive prefetch (SAM): the likely next phase of a task, and the records its step will need.

:class:`PhaseModel` is a first-order Markov model of task phases learned from agent traces: for each
phase seen in training (names normalised: lower case, spaces and dashes as ``_``), the counts of the
phase of the next event (staying included). :func:`prefetch` asks it for the most likely next phase
*other than* the current one (the step after the transition is the one a warm cache must serve),
builds the predicted state (that phase, the current subgoals, constraints and last result) and runs a
state-adaptive search for it. A phase the model has never seen, or one never left in training, gives
no prediction: :class:`Prefetch` with no hits and the reason, never an exception.

Shipped model: ``retain/models/phases.json`` (``retain train-phases``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retain.errors import InvalidInput
from retain.retrieval.fusion import Hit

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["MIN_TRANSITIONS", "PhaseModel", "Prefetch", "normalise_phase", "prefetch"]

MIN_TRANSITIONS = 2
"""Fewest observed departures from a phase for the model to predict its successor."""
_SEP = re.compile(r"[\s\-]+")


def normalise_phase(phase: str) -> str:
    """Lower case, trimmed, runs of spaces and dashes as one ``_`` ("Book Hotel" -> "book_hotel")."""
    return _SEP.sub("_", phase.strip().lower())


@dataclass
class PhaseModel:
    """Counts of next phases: ``transitions[a][b]`` = how often an event in phase ``b`` followed one
    in phase ``a`` (normalised names) in the training traces; ``trained_on``: provenance."""

    transitions: dict[str, Counter[str]] = field(default_factory=dict)
    trained_on: str = ""

    @classmethod
    def fit(cls, sequences: Iterable[Sequence[str]], trained_on: str = "") -> PhaseModel:
        """Count consecutive phase pairs of each sequence (one task's events in order; empty names skipped)."""
        model = cls(trained_on=trained_on)
        for seq in sequences:
            names = [normalise_phase(p) for p in seq if p and p.strip()]
            for a, b in pairwise(names):
                model.transitions.setdefault(a, Counter())[b] += 1
        return model

    def knows(self, phase: str) -> bool:
        """True when ``phase`` (any spelling that normalises the same) was seen in training."""
        return normalise_phase(phase) in self.transitions

    def next_phase(self, phase: str) -> tuple[str | None, float, str]:
        """(the most likely next phase other than ``phase``, its probability among departures, reason).

        The phase is None when ``phase`` is unknown or left fewer than :data:`MIN_TRANSITIONS` times;
        the reason says which. Ties: the name first in sort order."""
        name = normalise_phase(phase)
        if name not in self.transitions:
            return None, 0.0, f"unknown phase {phase!r}: never seen in training"
        departures = {b: n for b, n in self.transitions[name].items() if b != name}
        total = sum(departures.values())
        if total < MIN_TRANSITIONS:
            return None, 0.0, f"phase {phase!r} was left {total} time(s) in training; fewer than {MIN_TRANSITIONS}"
        best = min(departures, key=lambda b: (-departures[b], b))
        p = departures[best] / total
        return best, p, f"{name} -> {best} in {departures[best]} of {total} departures"

    def to_json(self) -> str:
        """Serialise (phases sorted, counts as ints)."""
        rows = {a: dict(sorted(c.items())) for a, c in sorted(self.transitions.items())}
        return json.dumps({"transitions": rows, "trained_on": self.trained_on}, ensure_ascii=False, indent=0)

    @classmethod
    def from_json(cls, text: str) -> PhaseModel:
        """Parse :meth:`to_json` output.

        Raises:
            InvalidInput: malformed JSON or counts that are not non-negative integers.
        """
        try:
            raw = json.loads(text)
            rows = {str(a): Counter({str(b): int(n) for b, n in c.items()}) for a, c in raw["transitions"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInput(f"phase model: malformed JSON ({exc})") from exc
        if any(n < 0 for c in rows.values() for n in c.values()):
            raise InvalidInput("phase model: counts must be >= 0")
        return cls(rows, str(raw.get("trained_on", "")))

    @classmethod
    def load(cls, path: str | Path | None = None) -> PhaseModel:
        """Load from ``path``, or the shipped models/phases.json when None (read once per process)."""
        if path is None:
            return _shipped()
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


@cache
def _shipped() -> PhaseModel:
    return PhaseModel.from_json(resources.files("retain").joinpath("models/phases.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Prefetch:
    """What :func:`prefetch` warmed: ``hits`` (best first, at most ``k``; [] without a prediction), the
    predicted ``next_phase`` (None without one), its ``probability`` among departures from the current
    phase (0..1) and the ``reason``."""

    hits: list[Hit]
    next_phase: str | None
    probability: float
    reason: str


def prefetch(
    core: Core, state: Mapping[str, Any], *, namespace: str, k: int = 10, model: PhaseModel | None = None
) -> Prefetch:
    """The records the next step will likely need: a state-adaptive search (``k`` hits, hot tiers) for
    the predicted next state (see the module docstring); the query is the predicted phase's name.

    Raises:
        InvalidInput: ``state`` not a valid agent state, bad namespace, ``k`` not an int >= 1.
    """
    from retain.retrieval.search import SearchRequest, search
    from retain.state.agent import AgentState

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k: must be an int >= 1, got {k!r}")
    current = AgentState.from_dict(state)
    if not current.phase:
        return Prefetch([], None, 0.0, "state has no phase: nothing to predict from")
    chosen = model if model is not None else PhaseModel.load()
    nxt, p, reason = chosen.next_phase(current.phase)
    if nxt is None:
        return Prefetch([], None, 0.0, reason)
    predicted = {**current.to_dict(), "phase": nxt}
    hits = search(core, nxt.replace("_", " "), namespace=namespace, request=SearchRequest(k=k, state=predicted))
    return Prefetch(list(hits[:k]), nxt, p, reason)

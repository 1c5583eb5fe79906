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
from retain.state.agent import AgentState

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
    predicted ``next_phase`` (the most likely phase other than the current one; None without one), its
    ``probability`` among departures from the current phase (0..1), the ``reason``, and ``stay``: the
    probability that the next event stays in the current phase (0..1)."""

    hits: list[Hit]
    next_phase: str | None
    probability: float
    reason: str
    stay: float = 0.0
    known_as: str | None = None


MATCH_COS = 0.7
"""Least cosine (basis encoder, phase names with ``_`` as spaces) at which a phase unseen in training
is read as the nearest phase seen (phase names are free-form: "book hotel" and "hotel booking");
below it the phase is unknown and :func:`prefetch` predicts nothing."""


def _known_phase(core: Core, model: PhaseModel, phase: str) -> tuple[str | None, str]:
    """The phase of ``model`` that ``phase`` is read as (itself when seen; else the nearest seen phase
    at cosine >= :data:`MATCH_COS`), and the reason."""
    name = normalise_phase(phase)
    if name in model.transitions:
        return name, f"phase {name!r} seen in training"
    names = sorted(model.transitions)
    if not names:
        return None, f"unknown phase {phase!r}: the phase model is empty"
    key = (core.encoder.name, id(model))
    matrix = _PHASE_VECTORS.get(key)
    if matrix is None:
        matrix = core.encoder.encode([n.replace("_", " ") for n in names])
        _PHASE_VECTORS[key] = matrix
    vec = core.encoder.encode([name.replace("_", " ")])[0]
    cos = matrix @ vec
    best = int(cos.argmax())
    if float(cos[best]) < MATCH_COS:
        near = f"nearest {names[best]!r} at cosine {float(cos[best]):.2f}"
        return None, f"unknown phase {phase!r}: never seen in training, {near}"
    return names[best], f"unseen phase {phase!r} read as {names[best]!r} (cosine {float(cos[best]):.2f})"


_PHASE_VECTORS: dict[tuple[str, int], Any] = {}
"""Embedded phase names of a phase model, by (encoder name, model id): computed once per process."""


def _focus(state: AgentState, phase: str) -> str:
    """The query of a prefetch: what the next step will address (the open questions first, then the
    top subgoal, the last result and the phase), as one text."""
    parts = [*state.open_questions[-3:], state.subgoals[-1] if state.subgoals else None, state.last_result]
    return " ; ".join([*(p for p in parts if p), phase.replace("_", " ")])


def prefetch(
    core: Core, state: Mapping[str, Any], *, namespace: str, k: int = 10, model: PhaseModel | None = None
) -> Prefetch:
    """The records the next step will likely need, in ``k`` hits (hot tiers), best first.

    The phase model gives P(the next event stays in this phase) and the most likely other phase. The
    ``k`` slots are shared in proportion: ``round(k * P(leave))`` go to a state-adaptive search for
    the predicted next state (that phase, the current subgoals, constraints and open questions), the
    rest to one for the current state; both ask :func:`_focus` (the open questions, top subgoal and
    last result: what the next step will likely address). A phase unseen in training is read as the
    nearest seen one (:data:`MATCH_COS`); a phase with no such match gives no hits and the reason.

    Raises:
        InvalidInput: ``state`` not a valid agent state, bad namespace, ``k`` not an int >= 1.
    """
    from retain.retrieval.search import SearchRequest, search

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k: must be an int >= 1, got {k!r}")
    current = AgentState.from_dict(state)
    if not current.phase:
        return Prefetch([], None, 0.0, "state has no phase: nothing to predict from")
    chosen = model if model is not None else PhaseModel.load()
    known, why = _known_phase(core, chosen, current.phase)
    if known is None:
        return Prefetch([], None, 0.0, why)
    counts = chosen.transitions[known]
    total = sum(counts.values())
    stay = counts.get(known, 0) / total if total else 0.0
    nxt, p, reason = chosen.next_phase(known)
    moving = round(k * (1.0 - stay)) if nxt is not None else 0
    hits: dict[str, Hit] = {}
    if moving:
        predicted = {**current.to_dict(), "phase": nxt}
        ahead = search(
            core, _focus(current, str(nxt)), namespace=namespace, request=SearchRequest(k=k, state=predicted)
        )
        hits.update((h.record.id, h) for h in ahead[:moving])
    here = search(core, _focus(current, current.phase), namespace=namespace, request=SearchRequest(k=k, state=current))
    for h in here:
        if len(hits) >= k:
            break
        hits.setdefault(h.record.id, h)
    ranked = sorted(hits.values(), key=lambda h: -h.score)
    return Prefetch(ranked, nxt, p, f"{why}; {reason}; stays in phase with p={stay:.2f}", round(stay, 6), known)

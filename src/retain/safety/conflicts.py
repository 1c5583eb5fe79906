"""Open conflicts: contradictions retain did not resolve on its own, surfaced instead of hidden.

When a new record contradicts a hard constraint but may not retire it (an untrusted actor such as a
tool, a change the conflict model is not confident of, two hard constraints of one call that
disagree), both stay current and the pair is recorded as an open conflict: a ``conflicts_with`` edge
new -> old (:class:`~retain.store.EdgeType`, part of the storage contract every backend implements)
whose metadata holds ``status`` ("open" / "resolved"), the actor that wrote the new record, the
model's probability, the signals and the reason (never record content), and an audit entry
"conflict". Edges that callers write with :meth:`retain.Memory.link` carry no ``status`` and are not
conflicts in this sense.

* :func:`list_conflicts`: the open conflicts of a namespace with both records and the evidence;
* :func:`conflicts_of`: the open conflicts each of some records takes part in (search hits carry them);
* :func:`retain.safety.resolution.resolve`: close one, keeping the new record (it supersedes the old
  one), the old one, or both; audited as "resolve_conflict";
* :func:`to_confirm_lines`: the "To confirm" section of a packed context, with a clarifying question
  per conflict.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain.record import MemoryRecord
from retain.store import Edge, EdgeType, Store

if TYPE_CHECKING:
    pass

__all__ = [
    "OPEN",
    "RESOLVED",
    "Conflict",
    "Resolution",
    "conflict_edge",
    "conflict_from_edge",
    "conflicts_of",
    "edges_of",
    "list_conflicts",
    "to_confirm_lines",
]

OPEN = "open"
RESOLVED = "resolved"
_QUESTION_CHARS = 120


class Resolution(enum.StrEnum):
    """How :func:`resolve` closes a conflict: keep the ``new`` record (it supersedes the old one),
    keep the ``old`` one (the new one stays stored as a claim, not current truth), or keep ``both``
    (they do not contradict each other after all)."""

    NEW = "new"
    OLD = "old"
    BOTH = "both"


@dataclass(frozen=True, slots=True)
class Conflict:
    """One conflict between two records of a namespace.

    Attributes:
        id: ``"<new id>:<old id>"``, what :func:`resolve` takes.
        namespace: where both records live.
        new, old: the two records (``old`` is the earlier statement, often a hard constraint).
        actor: who wrote the new record.
        probability: the conflict model's calibrated P(update) for the pair, 0..1 (higher = more
            likely the new record replaces the old one), or None.
        signals: the evidence that fired (value change, cue words, ...).
        reason: one line naming the rule that opened the conflict.
        status: "open" or "resolved"; resolution: how it was closed (None while open).
        created_at: when the conflict was recorded (UTC).
    """

    id: str
    namespace: str
    new: MemoryRecord
    old: MemoryRecord
    actor: str
    probability: float | None
    signals: tuple[str, ...]
    reason: str
    status: str
    resolution: str | None
    created_at: datetime

    def question(self) -> str:
        """A clarifying question the agent can ask the user to settle the conflict."""
        return f'Which holds now: "{_short(self.old.content)}" or "{_short(self.new.content)}" (from {self.actor})?'

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (records without embeddings)."""
        return {
            "id": self.id,
            "namespace": self.namespace,
            "status": self.status,
            "resolution": self.resolution,
            "actor": self.actor,
            "probability": self.probability,
            "signals": list(self.signals),
            "reason": self.reason,
            "question": self.question(),
            "created_at": self.created_at.isoformat(),
            "new": self.new.to_dict(),
            "old": self.old.to_dict(),
        }


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUESTION_CHARS else flat[: _QUESTION_CHARS - 3] + "..."


def conflict_edge(
    namespace: str, new: str, old: str, *, actor: str, probability: float | None, signals: Sequence[str], reason: str
) -> Edge:
    """The open-conflict edge new -> old (see the module docstring); metadata holds no content."""
    return Edge(
        namespace,
        new,
        old,
        EdgeType.CONFLICTS_WITH,
        metadata={
            "status": OPEN,
            "actor": actor,
            "probability": None if probability is None else round(probability, 4),
            "signals": list(signals),
            "reason": reason,
        },
    )


def edges_of(store: Store, namespace: str, ids: Sequence[str] | None = None) -> list[Edge]:
    """The conflict edges (open or resolved) of ``namespace``, of ``ids`` only when given."""
    edges = store.edges(namespace, ids, types=[EdgeType.CONFLICTS_WITH])
    return [e for e in edges if e.metadata.get("status") in (OPEN, RESOLVED)]


def conflict_from_edge(edge: Edge, records: Mapping[str, MemoryRecord]) -> Conflict | None:
    """The :class:`Conflict` a conflict edge records, None when one of its records is not in ``records``."""
    new, old = records.get(edge.src), records.get(edge.dst)
    if new is None or old is None:
        return None
    meta = edge.metadata
    p = meta.get("probability")
    return Conflict(
        id=f"{edge.src}:{edge.dst}",
        namespace=edge.namespace,
        new=new,
        old=old,
        actor=str(meta.get("actor", "")),
        probability=None if p is None else float(p),
        signals=tuple(str(s) for s in meta.get("signals", ())),
        reason=str(meta.get("reason", "")),
        status=str(meta.get("status")),
        resolution=meta.get("resolution"),
        created_at=edge.created_at,
    )


def list_conflicts(store: Store, namespace: str, *, include_resolved: bool = False) -> list[Conflict]:
    """The conflicts of ``namespace`` (open ones only unless ``include_resolved``), oldest first; a
    conflict one of whose records was deleted is gone with it."""
    edges = [e for e in edges_of(store, namespace) if include_resolved or e.metadata.get("status") == OPEN]
    ids = list(dict.fromkeys([e.src for e in edges] + [e.dst for e in edges]))
    records = {r.id: r for r in store.get(namespace, ids)} if ids else {}
    found = [c for e in edges if (c := conflict_from_edge(e, records)) is not None]
    return sorted(found, key=lambda c: (c.created_at, c.id))


def conflicts_of(store: Store, namespace: str, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """For each of ``ids`` that takes part in an open conflict, the ids of the records on the other
    side (one store read for all of them)."""
    if not ids:
        return {}
    wanted = set(ids)
    out: dict[str, list[str]] = {}
    for e in edges_of(store, namespace, list(ids)):
        if e.metadata.get("status") != OPEN:
            continue
        for mine, other in ((e.src, e.dst), (e.dst, e.src)):
            if mine in wanted:
                out.setdefault(mine, []).append(other)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def to_confirm_lines(conflicts: Sequence[Conflict]) -> list[str]:
    """The "To confirm" section of a packed context: a heading, then per open conflict the two
    statements and a clarifying question; [] when there is none."""
    if not conflicts:
        return []
    lines = ["To confirm (open conflicts, neither is settled):"]
    for c in conflicts:
        lines.append(f"- {c.question()}")
    return lines

"""Typed, weighted edges between two records of one namespace (:class:`Edge`), and the checks
every backend applies to them (:func:`check_edge`). Used by :mod:`retain.retrieval.graph`.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from retain.errors import InvalidInput
from retain.record import utcnow, validate_namespace

__all__ = ["Edge", "EdgeType", "check_edge"]


class EdgeType(enum.StrEnum):
    """Kinds of typed edges between two records of one namespace (:mod:`retain.retrieval.graph`).

    Direction is ``src -> dst``: ``next`` earlier -> later in a stream; ``derived_from`` the new
    record -> the record its reasoning step used; ``supersedes`` new version -> old version;
    ``same_entity`` newer -> older record naming the same entity; ``supports``, ``conflicts_with``,
    ``elaborates`` are set by callers (:meth:`retain.Memory.link`).
    """

    NEXT = "next"
    DERIVED_FROM = "derived_from"
    SUPPORTS = "supports"
    CONFLICTS_WITH = "conflicts_with"
    SUPERSEDES = "supersedes"
    ELABORATES = "elaborates"
    SAME_ENTITY = "same_entity"


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed, weighted edge ``src -> dst`` between two records of ``namespace``.

    Attributes:
        namespace: both endpoints live here; edges never cross namespaces.
        src, dst: record ids (distinct: no self-loops).
        type: an :class:`EdgeType` (a string value is accepted by :func:`check_edge`).
        weight: finite, > 0; multiplies scores in retrieval expansion and transition
            probabilities in importance propagation (higher = stronger link).
        created_at: when the edge was written (timezone-aware, stored as UTC microseconds).
        metadata: JSON-serialisable details (never record content).

    The key is (namespace, src, dst, type): writing the same key again replaces weight,
    created_at and metadata.
    """

    namespace: str
    src: str
    dst: str
    type: EdgeType
    weight: float = 1.0
    created_at: datetime = field(default_factory=utcnow)
    metadata: Mapping[str, Any] = field(default_factory=dict)


def check_edge(edge: Edge, index: int = 0) -> Edge:
    """Validate the parts of ``edge`` every backend checks the same way; return it with ``type``
    coerced to :class:`EdgeType` and ``weight`` to float. Endpoint existence is the backend's check.

    Raises:
        InvalidInput: not an Edge, bad namespace, empty or equal ids (self-loop), unknown type,
            weight not finite or <= 0, naive ``created_at``, metadata not JSON-serialisable.
    """
    where = f"edge {index}"
    if not isinstance(edge, Edge):
        raise InvalidInput(f"{where}: expected an Edge, got {type(edge).__name__}")
    try:
        validate_namespace(edge.namespace)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from exc
    for name in ("src", "dst"):
        value = getattr(edge, name)
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{where}: {name} must be a non-empty record id, got {value!r}")
    if edge.src == edge.dst:
        raise InvalidInput(f"{where}: self-loop on {edge.src}; an edge joins two different records")
    try:
        kind = EdgeType(edge.type)
    except ValueError:
        known = ", ".join(t.value for t in EdgeType)
        raise InvalidInput(f"{where}: unknown type {edge.type!r}; one of {known}") from None
    weight = edge.weight
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight <= 0:
        raise InvalidInput(f"{where}: weight must be a finite number > 0, got {weight!r}")
    if not isinstance(edge.created_at, datetime) or edge.created_at.tzinfo is None:
        raise InvalidInput(f"{where}: created_at must be a timezone-aware datetime")
    if not isinstance(edge.metadata, Mapping):
        raise InvalidInput(f"{where}: metadata must be a mapping")
    try:
        json.dumps(dict(edge.metadata), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}: metadata must be JSON-serialisable without NaN/inf ({exc})") from exc
    return replace(edge, type=kind, weight=float(weight))

"""The agent's task state (SAM): what the agent is doing, which drives what memory surfaces.

* :class:`AgentState` — phase, subgoal stack (top last), confirmed constraints, open questions, last
  action result and free-form features; validated and bounded at the boundary.
* :class:`StatePerceiver` — keeps a state current from memory events: confirmed constraints from
  hard-constraint records, corrections applied, phase and subgoals set by the caller.
* :class:`StateEncoder` — renders each part of the state as text and embeds it with the basis
  encoder, memoised by text: a state seen before costs a dictionary lookup, a new one costs one
  batched encoder call over its changed parts only.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import Encoder
from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType

__all__ = [
    "MAX_CONSTRAINTS",
    "MAX_ITEMS",
    "MAX_TEXT_CHARS",
    "STATE_KEYS",
    "AgentState",
    "EncodedState",
    "StateEncoder",
    "StatePerceiver",
]

MAX_CONSTRAINTS = 1_000
"""Most confirmed constraints a state may carry; more is refused (a state is a summary, not a log)."""
MAX_ITEMS = 200
"""Most subgoals, open questions or free-form features a state may carry; more is refused."""
MAX_TEXT_CHARS = 2_000
"""Longest phase, subgoal, question, result or rendered constraint value (characters); longer is refused."""
ENCODED_CONSTRAINTS = 64
"""Constraints embedded one by one; a state with more embeds the 64 most recently confirmed (the
mapping's last entries) and reports how many it left out in :attr:`EncodedState.omitted`."""
STATE_CACHE_SIZE = 256
"""Encoded states a :class:`StateEncoder` keeps whole (by their rendered parts), newest used last."""

STATE_KEYS = frozenset({"phase", "subgoals", "constraints", "uncertain", "open_questions", "last_result", "features"})
"""Keys of a state mapping that :meth:`AgentState.from_dict` reads as fields; any other key is kept as
a free-form feature."""
_KNOWN_KEYS = STATE_KEYS


def _text(value: Any, name: str) -> str | None:
    """A state text: None or blank -> None; non-strings rendered as JSON; over the limit refused."""
    if value is None:
        return None
    if not isinstance(value, str):
        try:
            value = str(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
        except (TypeError, ValueError, RecursionError) as exc:  # too deep, or keys of mixed types
            raise InvalidInput(f"state.{name}: not renderable as text ({exc})") from exc
        except Exception as exc:  # an object whose __str__ raises: a caller's error, refused at the boundary
            raise InvalidInput(f"state.{name}: not renderable as text (its str() raised {type(exc).__name__})") from exc
    value = value.strip()
    if not value:
        return None
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidInput(f"state.{name}: {len(value)} characters, limit is {MAX_TEXT_CHARS}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"state.{name}: not valid Unicode text (lone surrogate)") from exc
    return str(value)


def _key(key: Any, name: str) -> str:
    """A state mapping key as text; a key whose ``str()`` raises is refused."""
    if isinstance(key, str):
        return key
    try:
        return str(key)
    except Exception as exc:  # an object whose __str__ raises
        raise InvalidInput(
            f"state.{name}: a key is not renderable as text (its str() raised {type(exc).__name__})"
        ) from exc


def _texts(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence):
        raise InvalidInput(f"state.{name}: expected a list of strings, got {type(value).__name__}")
    if len(value) > MAX_ITEMS:
        raise InvalidInput(f"state.{name}: {len(value)} items, limit is {MAX_ITEMS}")
    out = [_text(v, f"{name}[{i}]") for i, v in enumerate(value)]
    return tuple(v for v in out if v is not None)


@dataclass(frozen=True, slots=True)
class AgentState:
    """The agent's task state at one moment.

    Attributes:
        phase: the task phase, e.g. ``"book_hotel"``; None when unknown.
        subgoals: the subgoal stack, top (current) last.
        constraints: confirmed constraints, name -> value (JSON-serialisable values), in the order
            they were confirmed (last = newest).
        open_questions: questions still open (the scenario format calls them ``uncertain``).
        last_result: a short description of the last action's result, or None.
        features: free-form extra fields (kept, rendered, not interpreted).

    Build one with :meth:`from_dict` (accepts the scenario format's keys); blank strings are dropped,
    unknown keys go to ``features``. Limits: :data:`MAX_CONSTRAINTS` constraints, :data:`MAX_ITEMS`
    items per list, :data:`MAX_TEXT_CHARS` characters per text — over a limit is refused with
    :class:`~retain.errors.InvalidInput`, never cut silently.
    """

    phase: str | None = None
    subgoals: tuple[str, ...] = ()
    constraints: Mapping[str, Any] = field(default_factory=dict)
    open_questions: tuple[str, ...] = ()
    last_result: str | None = None
    features: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | AgentState | None) -> AgentState:
        """Validate a state mapping (scenario-format keys: phase, subgoals, constraints, uncertain,
        last_result; also open_questions, features). Unknown keys are kept in ``features``.

        Raises:
            InvalidInput: not a mapping, a field of the wrong kind, or over a limit.
        """
        if data is None:
            return cls()
        if isinstance(data, AgentState):
            return data
        if not isinstance(data, Mapping):
            raise InvalidInput(f"state: expected a mapping or AgentState, got {type(data).__name__}")
        constraints = data.get("constraints") or {}
        if not isinstance(constraints, Mapping):
            raise InvalidInput(f"state.constraints: expected a mapping, got {type(constraints).__name__}")
        if len(constraints) > MAX_CONSTRAINTS:
            raise InvalidInput(
                f"state.constraints: {len(constraints)} entries, limit is {MAX_CONSTRAINTS}; keep the "
                "confirmed constraints in memory (hard_constraint records) and only the active ones in the state"
            )
        checked: dict[str, Any] = {}
        for key, value in constraints.items():
            name = _text(key, "constraints key")
            if name is None:
                continue
            _text(value, f"constraints[{name!r}]")  # validates size and encoding
            checked[name] = value
        open_questions = _texts(data.get("uncertain", ()), "uncertain") + _texts(
            data.get("open_questions", ()), "open_questions"
        )
        extra = {_key(k, "key"): v for k, v in data.items() if k not in _KNOWN_KEYS}
        given = data.get("features") or {}
        if not isinstance(given, Mapping):
            raise InvalidInput(f"state.features: expected a mapping, got {type(given).__name__}")
        features = {_key(k, "features key"): v for k, v in given.items()} | extra
        if len(features) > MAX_ITEMS:
            raise InvalidInput(f"state.features: {len(features)} entries, limit is {MAX_ITEMS}")
        for key, value in features.items():
            _text(key, "features key")
            _text(value, f"features[{key!r}]")
        return cls(
            phase=_text(data.get("phase"), "phase"),
            subgoals=_texts(data.get("subgoals", ()), "subgoals"),
            constraints=checked,
            open_questions=open_questions,
            last_result=_text(data.get("last_result"), "last_result"),
            features=features,
        )

    @property
    def empty(self) -> bool:
        """True when the state carries nothing (content scoring only)."""
        return not (
            self.phase or self.subgoals or self.constraints or self.open_questions or self.last_result or self.features
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict in the scenario format's keys."""
        return {
            "phase": self.phase,
            "subgoals": list(self.subgoals),
            "constraints": dict(self.constraints),
            "uncertain": list(self.open_questions),
            "last_result": self.last_result,
            "features": dict(self.features),
        }

    def render(self) -> str:
        """The whole state as one line of text (for logs and for content-only baselines)."""
        parts = []
        if self.phase:
            parts.append(f"phase: {self.phase}")
        if self.subgoals:
            parts.append("subgoals: " + "; ".join(self.subgoals))
        if self.constraints:
            parts.append("constraints: " + "; ".join(_constraint_text(k, v) for k, v in self.constraints.items()))
        if self.open_questions:
            parts.append("open: " + "; ".join(self.open_questions))
        if self.last_result:
            parts.append(f"last result: {self.last_result}")
        return " | ".join(parts)


def _constraint_text(key: str, value: Any) -> str:
    rendered = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return f"{key.replace('_', ' ')}: {rendered}"


def _phase_text(phase: str) -> str:
    return phase.replace("_", " ").replace("-", " ")


class StatePerceiver:
    """Keeps an :class:`AgentState` current from memory events.

    The caller sets phase and subgoals (:meth:`set_phase`, :meth:`push_subgoal`, :meth:`pop_subgoal`);
    :meth:`observe` folds in each stored record: a current hard constraint becomes a confirmed
    constraint (keyed by its record id, valued by its text), a record that supersedes another
    replaces the old constraint, and an ``action_result`` record becomes ``last_result``.
    """

    def __init__(self, state: AgentState | Mapping[str, Any] | None = None) -> None:
        self.state = AgentState.from_dict(state)
        self._constraint_ids: dict[str, str] = {}

    def set_phase(self, phase: str | None) -> AgentState:
        """Enter ``phase`` (None clears it). Returns the new state."""
        return self._replace(phase=_text(phase, "phase"))

    def push_subgoal(self, subgoal: str) -> AgentState:
        """Push a subgoal on top of the stack. Raises InvalidInput when blank or over the limits."""
        text = _text(subgoal, "subgoal")
        if text is None:
            raise InvalidInput("subgoal: must be a non-blank string")
        if len(self.state.subgoals) >= MAX_ITEMS:
            raise InvalidInput(f"state.subgoals: stack is full ({MAX_ITEMS})")
        return self._replace(subgoals=(*self.state.subgoals, text))

    def pop_subgoal(self) -> AgentState:
        """Pop the top subgoal (no-op on an empty stack)."""
        return self._replace(subgoals=self.state.subgoals[:-1])

    def observe(self, record: MemoryRecord) -> AgentState:
        """Fold one stored record into the state; returns the new state."""
        constraints = dict(self.state.constraints)
        if record.supersedes is not None and record.supersedes in self._constraint_ids:
            constraints.pop(self._constraint_ids.pop(record.supersedes), None)
        if record.type is MemoryType.HARD_CONSTRAINT and record.superseded_by is None:
            if len(constraints) >= MAX_CONSTRAINTS:
                raise InvalidInput(f"state.constraints: already {MAX_CONSTRAINTS} confirmed constraints")
            key = f"constraint {record.id[-6:]}"
            constraints[key] = record.content[:MAX_TEXT_CHARS]
            self._constraint_ids[record.id] = key
        last = self.state.last_result
        if record.type is MemoryType.ACTION_RESULT:
            last = record.content[:MAX_TEXT_CHARS]
        return self._replace(constraints=constraints, last_result=last)

    def _replace(self, **changes: Any) -> AgentState:
        data = {
            "phase": self.state.phase,
            "subgoals": self.state.subgoals,
            "constraints": self.state.constraints,
            "open_questions": self.state.open_questions,
            "last_result": self.state.last_result,
            "features": self.state.features,
        } | changes
        self.state = AgentState(**data)
        return self.state


@dataclass(frozen=True, slots=True)
class EncodedState:
    """A state's parts embedded with the basis encoder; every vector (dim,) float32, L2-normalised,
    or a zero vector when the part is absent.

    Attributes:
        phase: the phase name. goal: the top subgoal with the phase. result: the last result.
        constraints: (c, dim) one row per encoded constraint (c <= 64). open: (o, dim) open questions.
        whole: the mean of the present parts, renormalised (the state's single vector).
        omitted: constraints not embedded (beyond the 64 newest).
        texts: the rendered texts of each part ("phase", "goal", "result", "constraints", "open").
    """

    phase: npt.NDArray[np.float32]
    goal: npt.NDArray[np.float32]
    result: npt.NDArray[np.float32]
    constraints: npt.NDArray[np.float32]
    open: npt.NDArray[np.float32]
    whole: npt.NDArray[np.float32]
    omitted: int = 0
    texts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


class StateEncoder:
    """Embeds :class:`AgentState` parts with ``encoder``; texts memoised in an LRU of ``cache_size``.

    Deterministic for a deterministic encoder. A repeated state costs no encoder call: its
    :class:`EncodedState` (arrays read-only) is kept whole for the last :data:`STATE_CACHE_SIZE` states.
    """

    def __init__(self, encoder: Encoder, *, cache_size: int = 4_096) -> None:
        if cache_size < 1:
            raise InvalidInput("cache_size: must be >= 1")
        self.encoder = encoder
        self.dim = encoder.dim
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._cache_size = cache_size
        # whole encoded states by their rendered parts: a repeated state costs one lookup
        self._states: OrderedDict[tuple[tuple[str, ...], ...], EncodedState] = OrderedDict()

    def _vectors(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            self._memoise(missing, self.encoder.encode(missing))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._cache[text]
            self._cache.move_to_end(text)
        self._trim()  # only after reading: this call's own texts may be more than the cache holds
        return out

    def missing(self, state: AgentState | Mapping[str, Any] | None) -> list[str]:
        """The texts of ``state``'s parts that :meth:`encode` would embed now (none for a repeated
        state), in order, each once: a caller can embed them in a batch it runs anyway (the query's)
        and hand the vectors over with :meth:`add_vectors`."""
        texts, slots, omitted = self._render(AgentState.from_dict(state))
        if self._key(texts, slots, omitted) in self._states:
            return []
        return [t for t in dict.fromkeys(texts) if t not in self._cache]

    def add_vectors(self, texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Memoise ``vectors`` ((len(texts), dim) float32, this encoder's embeddings of ``texts``).

        Raises:
            InvalidInput: ``vectors`` is not (len(texts), dim), or not finite; nothing is memoised then.
        """
        self._memoise(texts, vectors)
        self._trim()

    def _memoise(self, texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        """Check ``vectors`` and memoise a read-only copy of each, newest used last (no eviction)."""
        vectors = np.array(vectors, dtype=np.float32)  # a copy: the caller's buffer may change
        if vectors.shape != (len(texts), self.dim):
            raise InvalidInput(f"vectors: expected ({len(texts)}, {self.dim}), got {vectors.shape}")
        if not np.all(np.isfinite(vectors)):
            raise InvalidInput("vectors: not finite (NaN or inf); nothing memoised")
        vectors.flags.writeable = False
        for text, vec in zip(texts, vectors, strict=True):
            self._cache[text] = vec
            self._cache.move_to_end(text)

    def _trim(self) -> None:
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    @staticmethod
    def _key(texts: list[str], slots: dict[str, slice], omitted: int) -> tuple[tuple[str, ...], ...]:
        return (*(tuple(texts[sl]) for sl in slots.values()), (str(omitted),))

    def _render(self, st: AgentState) -> tuple[list[str], dict[str, slice], int]:
        """The texts of ``st``'s parts, where each part's texts sit among them, and the constraints left out."""
        items = list(st.constraints.items())
        omitted = max(0, len(items) - ENCODED_CONSTRAINTS)
        items = items[omitted:]
        phase = _phase_text(st.phase) if st.phase else None
        goal = " ; ".join(x for x in (st.subgoals[-1] if st.subgoals else None, phase) if x) or None
        texts: list[str] = []
        slots: dict[str, slice] = {}
        for name, group in (
            ("phase", [phase] if phase else []),
            ("goal", [goal] if goal else []),
            ("result", [st.last_result] if st.last_result else []),
            ("constraints", [_constraint_text(k, v) for k, v in items]),
            ("open", list(st.open_questions[-ENCODED_CONSTRAINTS:])),
        ):
            slots[name] = slice(len(texts), len(texts) + len(group))
            texts.extend(group)
        return texts, slots, omitted

    def encode(self, state: AgentState | Mapping[str, Any] | None) -> EncodedState:
        """Embed ``state`` (validated with :meth:`AgentState.from_dict`)."""
        texts, slots, omitted = self._render(AgentState.from_dict(state))
        key = self._key(texts, slots, omitted)
        known = self._states.get(key)
        if known is not None:
            self._states.move_to_end(key)
            return known
        encoded = self._encode(texts, slots, omitted)
        self._states[key] = encoded
        while len(self._states) > STATE_CACHE_SIZE:
            self._states.popitem(last=False)
        return encoded

    def _encode(self, texts: list[str], slots: dict[str, slice], omitted: int) -> EncodedState:
        matrix = self._vectors(texts) if texts else np.zeros((0, self.dim), dtype=np.float32)
        zero = np.zeros(self.dim, dtype=np.float32)

        def one(name: str) -> npt.NDArray[np.float32]:
            rows = matrix[slots[name]]
            return rows[0] if len(rows) else zero

        present = [v for v in (one("goal"), one("result")) if v.any()]
        if len(matrix[slots["constraints"]]):
            present.append(matrix[slots["constraints"]].mean(axis=0))
        whole = np.mean(present, axis=0) if present else zero
        norm = float(np.linalg.norm(whole))
        whole = (whole / norm).astype(np.float32) if norm > 0 and math.isfinite(norm) else zero
        for array in (matrix, whole, zero):  # shared by every caller of a repeated state: read-only
            array.flags.writeable = False
        return EncodedState(
            phase=one("phase"),
            goal=one("goal"),
            result=one("result"),
            constraints=matrix[slots["constraints"]],
            open=matrix[slots["open"]],
            whole=whole,
            omitted=omitted,
            texts=MappingProxyType({name: tuple(texts[sl]) for name, sl in slots.items()}),  # shared: read-only
        )

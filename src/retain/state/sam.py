"""State-adaptive memory scoring (SAM): the agent's task state, not only the query words, ranks memory.

For a candidate memory m with embedding e (L2-normalised, (d,) float32) and an encoded state S
(:class:`~retain.state.agent.EncodedState`)::

    w(S)        = 1 + W2 tanh(W1 [s_whole ; s_phase])                 state-generated reweighting, (d,)
    reweighted  = cos(w(S) * e, s_part) for s_part in (whole, goal, result)
    prior       = onehot(type(m)) . (b + B tanh(P^T s_phase))          learned type x phase prior
    state_score = sigmoid(theta . x(S, m) + gamma . reweighted + prior)
    alpha       = sigmoid(a . [1, log(1 + query terms), terse, top content, phase known])   (0 without a state)
    score       = alpha * state_score + (1 - alpha) * content_score(query, m)

``x(S, m)`` are cheap state features (:data:`STATE_FEATURES`): plain cosines of e to each state part,
recency in stream positions and in event time (exponential decay, configurable half-life), whether m
was written in the current phase, observations of an earlier phase (suppression), the core tier,
importance and use, and value match (the share of a constraint's, the subgoal's or the last result's
dates, times and amounts, :func:`retain.text.values.canonical_values`, that m states; whether m is the newest
candidate stating a constraint's value), and what the stream said last: the cosine of e to the newest
candidate of all and to the newest of each role (user, tool, agent), and the share of each of those
records' terms that m states (a terse "ok, continue" names no next step; the agent's latest thought,
the user's latest message and the latest tool output do).
``content_score`` is the learned fusion of :mod:`retain.retrieval.fusion`.
``s_phase`` is the phase name's embedding plus a learned vector for phases seen in training (none for unseen ones:
the hit breakdown then says ``phase_known = 0``). All parameters are fitted by
:func:`train_state_scorer` on (state, needed memory) pairs from scenario files (a listwise softmax
loss, Adam, L2 penalty) and evaluated on scenario files they were not fitted on.

Scoring is numpy only: for n candidates it costs a few (n, d) x (d,) products.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.numeric.kernels import blocked_product
from retain.record import MemoryRecord, MemoryType, Tier
from retain.state.agent import EncodedState
from retain.text.lexical import STOPWORDS, index_terms
from retain.text.values import canonical_values

__all__ = [
    "DEFAULT_HALF_LIFE_S",
    "STATE_FEATURES",
    "CandidateMemo",
    "Candidates",
    "SamExample",
    "StateScorer",
    "candidates_from_records",
    "train_state_scorer",
]

FloatArray = npt.NDArray[np.float64]

STATE_FEATURES: tuple[str, ...] = (
    "goal_cos",
    "result_cos",
    "constraint_max",
    "open_max",
    "whole_cos",
    "latest",
    "log_age_events",
    "time_decay",
    "same_phase",
    "earlier_phase_observation",
    "core",
    "importance",
    "log_access",
    "newest_of_type",
    "log_type_rank",
    "role_user",
    "role_tool",
    "role_agent",
    "goal_overlap",
    "result_overlap",
    "constraint_overlap",
    "hard_x_goal",
    "hard_x_goal_overlap",
    "pref_x_goal",
    "pref_x_goal_overlap",
    "observation_x_result",
    "value_match",
    "value_setter",
    "goal_value_match",
    "result_value_match",
    "last_cos",
    "last_user_cos",
    "last_tool_cos",
    "last_agent_cos",
    "last_overlap",
    "last_user_overlap",
    "last_tool_overlap",
    "last_agent_overlap",
)
TYPES: tuple[MemoryType, ...] = tuple(MemoryType)
_TYPE_INDEX = {t: i for i, t in enumerate(TYPES)}
DEFAULT_HALF_LIFE_S = 3 * 24 * 3600.0
"""Default half-life of the event-time decay feature: 3 days (seconds)."""
PHASE_KEY = "phase"
"""Metadata key under which :meth:`retain.Memory.add` records the phase the record was written in."""
_REWEIGHTED = ("whole_rw", "goal_rw", "result_rw")
_TOOL_ROLES = frozenset({"tool", "system", "function", "observation"})
_ALPHA_INPUTS = ("bias", "log_query_terms", "terse", "top_content", "phase_known")


@dataclass(frozen=True, slots=True)
class Candidates:
    """What SAM needs of n candidate memories.

    Attributes:
        vectors: (n, d) float32, L2-normalised embeddings.
        types: (n,) int index into :data:`TYPES`.
        positions: (n,) float64 stream position (``seq``, else arrival order); higher = later.
        times: (n,) float64 event time (POSIX seconds, UTC) or NaN when unknown.
        phases: phase each record was written in (None when unknown).
        phase_ids: (n,) intp, each phase's id in ``phase_vocab`` (phase name -> id; -1 when unknown).
        roles: each record's role (who produced it).
        terms: each record's content terms (:func:`retain.text.lexical.index_terms` minus stop words).
        core, importance, access: (n,) float64.
        newest_position, newest_time: of the whole namespace (not only the candidates).
        role_flags: (n, 3) float64 (user, tool, agent) indicators of each role.
        term_ids, term_rows: (m,) intp, the terms of every candidate as one list: term ``term_ids[j]``
            (an id in ``vocab``) is in candidate ``term_rows[j]``'s terms.
        vocab: term -> id (may hold terms no candidate has).
        values: each record's canonical dates, times and amounts (:func:`retain.text.values.canonical_values`).
    """

    vectors: npt.NDArray[np.float32]
    types: npt.NDArray[np.intp]
    positions: FloatArray
    times: FloatArray
    phases: tuple[str | None, ...]
    phase_ids: npt.NDArray[np.intp]
    phase_vocab: Mapping[str, int]
    roles: tuple[str, ...]
    terms: tuple[frozenset[str], ...]
    core: FloatArray
    importance: FloatArray
    access: FloatArray
    newest_position: float
    newest_time: float
    role_flags: FloatArray
    term_ids: npt.NDArray[np.intp]
    term_rows: npt.NDArray[np.intp]
    vocab: Mapping[str, int]
    values: tuple[frozenset[str], ...]


_Row = tuple[tuple[float, float, float, float, float, float], str | None, str, frozenset[str], frozenset[str]]
"""One record's inputs: (seq or NaN, event time or NaN, type index, core, importance, log1p(access)),
phase, role, content terms, canonical values."""


def _row(r: MemoryRecord) -> _Row:
    numeric = (
        float(r.seq) if r.seq is not None else math.nan,
        r.event_time.timestamp() if r.event_time is not None else math.nan,
        float(_TYPE_INDEX[r.type]),
        1.0 if r.tier is Tier.CORE else 0.0,
        float(r.importance),
        math.log1p(r.access_count),
    )
    return numeric, _phase_of(r), r.role, content_terms(r.content), canonical_values(r.content)


class CandidateMemo:
    """Each record's :class:`Candidates` inputs, kept in growing arrays (one row per record), for as
    long as the very same record object comes back (records are immutable; a store that re-reads a
    changed record hands out a new object, which gets a new row). A search's candidates are then
    gathered from those arrays by row number, with no work per record but one dictionary lookup.
    Holds at most ``limit`` rows, then starts over; a call with more than ``limit`` records is worked
    out without the memo.

    Raises:
        InvalidInput: ``limit`` < 1.
    """

    def __init__(self, limit: int = 20_000) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInput(f"limit: must be an int >= 1, got {limit!r}")
        self._limit = limit
        self._clear()

    def _clear(self) -> None:
        self._slots: dict[int, int] = {}  # id(record) -> row; _held keeps each record alive, so ids stay unique
        self._held: list[MemoryRecord] = []
        self._n = 0
        self.numeric = np.zeros((0, 6))
        self.role_flags = np.zeros((0, 3))
        self.has_vector = np.zeros(0, dtype=bool)
        self.phases = np.zeros(0, dtype=object)
        self.phase_ids = np.zeros(0, dtype=np.intp)
        self.phase_vocab: dict[str, int] = {}
        self.roles = np.zeros(0, dtype=object)
        self.terms = np.zeros(0, dtype=object)
        self.values = np.zeros(0, dtype=object)
        self.term_start = np.zeros(0, dtype=np.intp)
        self.term_count = np.zeros(0, dtype=np.intp)
        self.term_flat = np.zeros(0, dtype=np.intp)
        self._flat_used = 0
        self.vocab: dict[str, int] = {}

    def __len__(self) -> int:
        return self._n

    def slots(self, records: Sequence[MemoryRecord]) -> npt.NDArray[np.intp] | None:
        """Each record's row (worked out for records not seen as that object before); None when
        ``records`` are more than the memo holds."""
        out = list(map(self._slots.get, map(id, records)))
        if None not in out:  # every record seen before: no per-record Python work
            return np.array(out, dtype=np.intp)
        missing = [i for i, row in enumerate(out) if row is None]
        if self._n + len(missing) > self._limit:
            if len(records) > self._limit:
                return None
            self._clear()
            missing = list(range(len(records)))
        new: dict[int, MemoryRecord] = {}  # a record listed twice gets one row
        for i in missing:
            new.setdefault(id(records[i]), records[i])
        self._append(list(new.values()))
        slots = self._slots
        for i in missing:
            out[i] = slots[id(records[i])]
        return np.array(out, dtype=np.intp)

    def _append(self, records: list[MemoryRecord]) -> None:
        """Give each of ``records`` (none held yet) a row: its inputs worked out and stored in bulk."""
        start, k = self._n, len(records)
        need = start + k
        if need > len(self.numeric):
            cap = max(need, 2 * len(self.numeric), 64)
            names = ("numeric", "role_flags", "has_vector", "phases", "phase_ids", "roles", "terms", "values")
            for name in (*names, "term_start", "term_count"):
                old = getattr(self, name)
                grown = np.zeros((cap, *old.shape[1:]), dtype=old.dtype)
                grown[:start] = old[:start]
                setattr(self, name, grown)
        rows = [_row(r) for r in records]
        end = slice(start, need)
        self.numeric[end] = [row[0] for row in rows]
        phases = [row[1] for row in rows]
        roles = [row[2] for row in rows]
        terms = [row[3] for row in rows]
        values = [row[4] for row in rows]
        self.role_flags[end] = [_role_flags(role) for role in roles]
        self.has_vector[end] = [r.embedding is not None for r in records]
        for j in range(k):  # element by element: numpy would read a frozenset as a sequence
            self.phases[start + j], self.roles[start + j], self.terms[start + j] = phases[j], roles[j], terms[j]
            self.values[start + j] = values[j]
        pv = self.phase_vocab
        self.phase_ids[end] = [-1 if p is None else pv.setdefault(p, len(pv)) for p in phases]
        vocab = self.vocab
        ids = [vocab.setdefault(t, len(vocab)) for ts in terms for t in ts]
        used = self._flat_used
        if used + len(ids) > len(self.term_flat):
            grown = np.zeros(max(2 * len(self.term_flat), used + len(ids), 256), dtype=np.intp)
            grown[:used] = self.term_flat[:used]
            self.term_flat = grown
        self.term_flat[used : used + len(ids)] = ids
        counts = np.array([len(ts) for ts in terms], dtype=np.intp)
        self.term_count[end] = counts
        self.term_start[end] = used + np.cumsum(counts) - counts
        self._flat_used = used + len(ids)
        self._slots.update((id(r), start + j) for j, r in enumerate(records))
        self._held.extend(records)
        self._n = need


def candidates_from_records(
    records: Sequence[MemoryRecord],
    *,
    newest_position: float | None = None,
    newest_time: datetime | None = None,
    vectors: npt.NDArray[np.float32] | None = None,
    memo: CandidateMemo | None = None,
) -> Candidates:
    """Build :class:`Candidates`; records without ``seq`` take their index in ``records`` as position.

    ``vectors`` ((n, d) float32), when given, are the records' embeddings already stacked in order;
    ``memo`` keeps each record's other inputs between calls.

    Raises:
        InvalidInput: a record without an embedding, embeddings of different widths, or ``vectors``
            not (len(records), d).
    """
    n = len(records)
    rows = memo.slots(records) if memo is not None else None
    if memo is None or rows is None:
        memo = CandidateMemo(limit=max(1, n))
        rows = memo.slots(records)
        assert rows is not None  # a memo of len(records) rows holds them all
    if not memo.has_vector[rows].all():
        raise InvalidInput("candidates: every record needs an embedding, all of one width")
    if vectors is None:
        try:
            vectors = np.stack([r.embedding for r in records]) if n else np.zeros((0, 0), np.float32)  # type: ignore[misc]
        except ValueError as exc:
            raise InvalidInput("candidates: every record needs an embedding, all of one width") from exc
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != n:
        raise InvalidInput(f"vectors: expected ({n}, d) float32, got shape {vectors.shape}")
    numeric = memo.numeric[rows]
    positions = np.where(np.isnan(numeric[:, 0]), np.arange(n, dtype=np.float64), numeric[:, 0])
    times = numeric[:, 1].copy()
    known = times[~np.isnan(times)]
    counts = memo.term_count[rows]
    firsts = np.cumsum(counts) - counts  # where each candidate's terms start in term_ids
    at = np.arange(int(counts.sum()), dtype=np.intp) + np.repeat(memo.term_start[rows] - firsts, counts)
    return Candidates(
        vectors=vectors,
        types=numeric[:, 2].astype(np.intp),
        positions=positions,
        times=times,
        phases=tuple(memo.phases[rows]),
        phase_ids=memo.phase_ids[rows],
        phase_vocab=memo.phase_vocab,
        roles=tuple(memo.roles[rows]),
        terms=tuple(memo.terms[rows]),
        core=numeric[:, 3].copy(),
        importance=numeric[:, 4].copy(),
        access=numeric[:, 5].copy(),
        newest_position=float(newest_position if newest_position is not None else positions.max(initial=0.0)),
        newest_time=(
            newest_time.timestamp() if newest_time is not None else float(known.max()) if known.size else math.nan
        ),
        role_flags=memo.role_flags[rows],
        term_ids=memo.term_flat[at],
        term_rows=np.repeat(np.arange(n, dtype=np.intp), counts),
        vocab=memo.vocab,
        values=tuple(memo.values[rows]),
    )


@lru_cache(maxsize=1 << 16)
def content_terms(text: str) -> frozenset[str]:
    """Lower-cased index terms of ``text`` without stop words (CJK as bigrams and characters);
    memoised by text (the last 65,536 texts), so a record seen by an earlier search costs a lookup."""
    return frozenset(t for t in index_terms(text) if t not in STOPWORDS and len(t) > 1)


def _overlaps(cands: Candidates, wanted: Sequence[frozenset[str]]) -> FloatArray:
    """(n, len(wanted)) share of each wanted term set that each candidate contains (0 for an empty set).

    The candidates' terms are one list of term ids (:attr:`Candidates.term_ids`); the entries that
    are wanted terms become an (n, u) indicator matrix, then one (n, u) x (u, w) product with each
    wanted set's members, instead of n x w set intersections."""
    n = len(cands.terms)
    out = np.zeros((n, len(wanted)))
    union = frozenset().union(*wanted)
    vocab = cands.vocab
    known = np.array(sorted({vocab[t] for t in union if t in vocab}), dtype=np.intp)
    if not known.size or not n:
        return out
    column = np.full(len(vocab), -1, dtype=np.intp)  # term id -> column of the wanted terms (-1: not wanted)
    column[known] = np.arange(len(known))
    cols = column[cands.term_ids]
    hit = cols >= 0
    present = np.zeros((n, len(known)))
    present[cands.term_rows[hit], cols[hit]] = 1.0
    member = np.zeros((len(known), len(wanted)))
    for j, w in enumerate(wanted):
        member[np.searchsorted(known, [vocab[t] for t in w if t in vocab]), j] = 1.0
    sizes = np.array([max(len(w), 1) for w in wanted], dtype=np.float64)
    return (present @ member) / sizes


def _set_overlaps(sets: Sequence[frozenset[str]], wanted: Sequence[frozenset[str]]) -> FloatArray:
    """(n, len(wanted)) share of each wanted set that each of ``sets`` contains (0 for an empty set):
    one intersection per non-empty set (with the union of the wanted sets), then one (n, u) x (u, w)
    product of indicators. For the canonical values, which most records have none of."""
    out = np.zeros((len(sets), len(wanted)))
    union = frozenset().union(*wanted)
    if not union:
        return out
    column = {t: j for j, t in enumerate(union)}
    rows: list[int] = []
    cols: list[int] = []
    for i, members in enumerate(sets):
        if members:
            for value in members & union:
                rows.append(i)
                cols.append(column[value])
    if not rows:
        return out
    present = np.zeros((len(sets), len(union)))
    present[rows, cols] = 1.0
    member = np.zeros((len(union), len(wanted)))
    for j, w in enumerate(wanted):
        member[[column[t] for t in w], j] = 1.0
    sizes = np.array([max(len(w), 1) for w in wanted], dtype=np.float64)
    return (present @ member) / sizes


def _phase_of(record: MemoryRecord) -> str | None:
    value = record.metadata.get(PHASE_KEY)
    return value if isinstance(value, str) and value else None


def state_features(
    state: EncodedState, phase: str | None, cands: Candidates, *, half_life_s: float = DEFAULT_HALF_LIFE_S
) -> FloatArray:
    """(n, len(STATE_FEATURES)) float64 features of each candidate under ``state`` (the lexical overlap
    features read the state's texts from ``state.texts``)."""
    return _features(state, phase, cands, half_life_s, np.zeros((0, cands.vectors.shape[1])))[0]


def _features(
    state: EncodedState, phase: str | None, cands: Candidates, half_life_s: float, extra: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """:func:`state_features`, and the (n, r) dot products of the candidates with the r rows of
    ``extra`` ((r, d) float64), computed in the same matrix product as the state-part cosines."""
    E = cands.vectors
    n = E.shape[0]
    out = np.zeros((n, len(STATE_FEATURES)))
    if n == 0:
        return out, np.zeros((0, len(extra)))
    col = _COLUMN
    c, o = len(state.constraints), len(state.open)
    last = _newest_rows(cands)
    newest = np.where(last[:, None] >= 0, E[np.maximum(last, 0)], 0.0)  # (4, d): the newest record of each
    parts = np.vstack([state.goal, state.result, state.whole, state.constraints, state.open, newest, extra]).astype(
        np.float32
    )
    # (n, 3 + c + o + 4 + r): every state part and the 4 newest records at once, in float32 like the
    # stored embeddings (half the memory traffic of float64; cosines of unit vectors need no more than
    # float32's 7 digits)
    cos = blocked_product(E, parts.T.copy()).astype(np.float64)
    out[:, col["goal_cos"]] = cos[:, 0]
    out[:, col["result_cos"]] = cos[:, 1]
    out[:, col["whole_cos"]] = cos[:, 2]
    if c:
        out[:, col["constraint_max"]] = cos[:, 3 : 3 + c].max(axis=1)
    if o:
        out[:, col["open_max"]] = cos[:, 3 + c : 3 + c + o].max(axis=1)
    at = 3 + c + o  # the newest records' columns
    out[:, [col[name] for name in _LAST_COS]] = cos[:, at : at + len(_LAST_COS)]
    age = np.maximum(cands.newest_position - cands.positions, 0.0)
    out[:, col["latest"]] = (age == 0).astype(np.float64)
    out[:, col["log_age_events"]] = np.log1p(age)
    if not math.isnan(cands.newest_time):
        dt = np.maximum(cands.newest_time - cands.times, 0.0)
        out[:, col["time_decay"]] = np.where(np.isnan(dt), 0.5, np.exp(-math.log(2) * dt / half_life_s))
    else:
        out[:, col["time_decay"]] = 0.5
    if phase:
        same = np.where(
            cands.phase_ids == cands.phase_vocab.get(phase, -2), 1.0, np.where(cands.phase_ids < 0, 0.5, 0.0)
        )
        out[:, col["same_phase"]] = same
        obs = cands.types == TYPES.index(MemoryType.OBSERVATION)
        out[:, col["earlier_phase_observation"]] = obs & (same == 0.0)
    else:
        out[:, col["same_phase"]] = 0.5
    out[:, col["core"]] = cands.core
    out[:, col["importance"]] = cands.importance
    out[:, col["log_access"]] = cands.access
    # recency among the candidates of the same type: the newest plan step, observation, result ...
    order = np.lexsort((-cands.positions, cands.types))
    sorted_types = cands.types[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_types[1:] != sorted_types[:-1])))  # each type's first row
    group_start = starts[np.searchsorted(starts, np.arange(n), side="right") - 1]
    rank = np.zeros(n)
    rank[order] = np.arange(n) - group_start
    out[:, col["newest_of_type"]] = (rank == 0).astype(np.float64)
    out[:, col["log_type_rank"]] = np.log1p(rank)
    out[:, [col["role_user"], col["role_tool"], col["role_agent"]]] = cands.role_flags
    constraint_terms = [content_terms(t) for t in state.texts.get("constraints", ())]
    wanted = [
        *(cands.terms[j] if j >= 0 else frozenset() for j in last),
        content_terms(" ".join(state.texts.get("goal", ()))),
        content_terms(" ".join(state.texts.get("result", ()))),
        *constraint_terms,
    ]
    overlap = _overlaps(cands, wanted)
    k = len(_LAST_OVERLAP)
    out[:, [col[name] for name in _LAST_OVERLAP]] = overlap[:, :k]
    goal = overlap[:, k]
    out[:, col["goal_overlap"]] = goal
    out[:, col["result_overlap"]] = overlap[:, k + 1]
    if constraint_terms:
        out[:, col["constraint_overlap"]] = overlap[:, k + 2 :].max(axis=1)
    hard = (cands.types == TYPES.index(MemoryType.HARD_CONSTRAINT)).astype(np.float64)
    pref = (cands.types == TYPES.index(MemoryType.SOFT_PREFERENCE)).astype(np.float64)
    obs = (cands.types == TYPES.index(MemoryType.OBSERVATION)).astype(np.float64)
    out[:, col["hard_x_goal"]] = hard * out[:, col["goal_cos"]]
    out[:, col["hard_x_goal_overlap"]] = hard * goal
    out[:, col["pref_x_goal"]] = pref * out[:, col["goal_cos"]]
    out[:, col["pref_x_goal_overlap"]] = pref * goal
    out[:, col["observation_x_result"]] = obs * out[:, col["result_cos"]]
    _value_features(state, cands, out)
    return out, cos[:, 3 + c + o + len(_LAST_COS) :]


_LAST_COS = ("last_cos", "last_user_cos", "last_tool_cos", "last_agent_cos")
_LAST_OVERLAP = ("last_overlap", "last_user_overlap", "last_tool_overlap", "last_agent_overlap")


def _newest_rows(cands: Candidates) -> npt.NDArray[np.intp]:
    """(4,) rows of the newest candidate (highest position, the first on ties) of all, and of those
    with a user, a tool and an agent role (:attr:`Candidates.role_flags`); -1 where there is none.
    What the stream said last stands in for the next step a terse query does not name."""
    pos = cands.positions
    out = np.full(4, -1, dtype=np.intp)
    if len(pos):
        out[0] = int(np.argmax(pos))
    for k in range(3):
        rows = np.flatnonzero(cands.role_flags[:, k] > 0)
        if rows.size:
            out[k + 1] = int(rows[np.argmax(pos[rows])])
    return out


def _value_features(state: EncodedState, cands: Candidates, out: FloatArray) -> None:
    """Fill the value-match columns: the share of a confirmed constraint's canonical values (dates,
    times, amounts; :func:`retain.text.values.canonical_values`) that a record states, best over the
    constraints (``value_match``); 1 for the newest candidate with the best share of some constraint
    (``value_setter``: the record that set the current value, not an older one with an old value); the
    share of the top subgoal's and of the last result's values."""
    col = _COLUMN
    wanted = [v for v in (canonical_values(t) for t in state.texts.get("constraints", ())) if v]
    goal = canonical_values(" ".join(state.texts.get("goal", ())))
    result = canonical_values(" ".join(state.texts.get("result", ())))
    if not (wanted or goal or result):
        return
    share = _set_overlaps(cands.values, [goal, result, *wanted])  # (n, 2 + c): one pass over the candidates
    out[:, col["goal_value_match"]] = share[:, 0]
    out[:, col["result_value_match"]] = share[:, 1]
    if wanted:
        share = share[:, 2:]
        out[:, col["value_match"]] = share.max(axis=1)
        best = share.max(axis=0)
        for j in np.flatnonzero(best > 0):
            rows = np.flatnonzero(share[:, j] == best[j])
            out[rows[np.argmax(cands.positions[rows])], col["value_setter"]] = 1.0


_COLUMN = {name: i for i, name in enumerate(STATE_FEATURES)}


@lru_cache(maxsize=1024)
def _role_flags(role: str) -> tuple[float, float, float]:
    """(user, tool, agent) indicators of a role name."""
    r = role.lower()
    return float(r == "user"), float(r in _TOOL_ROLES), float(r.startswith(("agent", "assistant")))


def _rows(value: Any, shape: tuple[int, ...], name: str) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise InvalidInput(f"state scorer: {name} must be finite with shape {shape}, got {arr.shape}")
    return arr


class StateScorer:
    """The learned SAM scorer (see the module docstring for the model).

    Args:
        params: arrays by name (``theta`` (F,), ``gamma`` (3,), ``type_bias`` (T,), ``B`` (T, r2),
            ``P`` (d, r2), ``W1`` (r, 2d), ``W2`` (d, r), ``alpha`` (5,), ``mean``/``scale`` (F,)).
        phases: learned vector per phase seen in training, name -> (d,).
        half_life_s: half-life of the event-time decay feature (seconds).
        meta: free-form training record (data, command, figures).

    Raises:
        InvalidInput: missing, non-finite or mis-shaped parameters.
    """

    def __init__(
        self,
        params: Mapping[str, Any],
        *,
        phases: Mapping[str, Any] | None = None,
        half_life_s: float = DEFAULT_HALF_LIFE_S,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        if not (isinstance(half_life_s, int | float) and half_life_s > 0 and math.isfinite(half_life_s)):
            raise InvalidInput(f"half_life_s: must be a positive number of seconds, got {half_life_s!r}")
        f, t = len(STATE_FEATURES), len(TYPES)
        try:
            d = int(np.asarray(params["P"]).shape[0])
            r2 = int(np.asarray(params["P"]).shape[1])
            r = int(np.asarray(params["W1"]).shape[0])
            self.theta = _rows(params["theta"], (f,), "theta")
            self.gamma = _rows(params["gamma"], (len(_REWEIGHTED),), "gamma")
            self.type_bias = _rows(params["type_bias"], (t,), "type_bias")
            self.B = _rows(params["B"], (t, r2), "B")
            self.P = _rows(params["P"], (d, r2), "P")
            self.W1 = _rows(params["W1"], (r, 2 * d), "W1")
            self.W2 = _rows(params["W2"], (d, r), "W2")
            self.alpha = _rows(params["alpha"], (len(_ALPHA_INPUTS),), "alpha")
            self.mean = _rows(params["mean"], (f,), "mean")
            self.scale = _rows(params["scale"], (f,), "scale")
            self.bias = float(params.get("bias", 0.0))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise InvalidInput(f"state scorer: bad parameters ({exc})") from exc
        if np.any(self.scale <= 0):
            raise InvalidInput("state scorer: scale must be > 0")
        self.dim = d
        self.phases = {str(k): _rows(v, (d,), f"phases[{k!r}]") for k, v in (phases or {}).items()}
        self.half_life_s = float(half_life_s)
        self.meta = dict(meta or {})

    # --- scoring ----------------------------------------------------------------------------------

    def phase_vector(self, state: EncodedState, phase: str | None) -> tuple[FloatArray, bool]:
        """s_phase and whether the phase was seen in training."""
        base = state.phase.astype(np.float64)
        learned = self.phases.get(phase) if phase else None
        return (base + learned, True) if learned is not None else (base, False)

    def score(
        self,
        state: EncodedState,
        phase: str | None,
        cands: Candidates,
        content: FloatArray,
        *,
        query_terms: int,
        terse: bool,
        empty_state: bool = False,
    ) -> tuple[FloatArray, dict[str, FloatArray], float]:
        """Score n candidates.

        Args:
            state: the encoded state; phase: its phase name (None when unknown).
            cands: the candidates; content: (n,) content scores in [0, 1] (higher = more relevant).
            query_terms: distinct content terms of the query; terse: :func:`retain.text.lexical.is_terse` of the query.
            empty_state: the state carries nothing: alpha = 0 (content scoring only).

        Returns:
            (final (n,) float64 in [0, 1], higher = more relevant; breakdown name -> (n,) arrays
            ``content``, ``state``, ``prior``, ``importance``, ``alpha``, ``phase_known``; alpha).

        Raises:
            InvalidInput: the candidates' width differs from the model's, or content has another length.
        """
        n = cands.vectors.shape[0]
        content = np.asarray(content, dtype=np.float64)
        if content.shape != (n,):
            raise InvalidInput(f"content: expected ({n},) scores, got {content.shape}")
        if n and cands.vectors.shape[1] != self.dim:
            raise InvalidInput(f"candidates: {cands.vectors.shape[1]} dims, the state scorer expects {self.dim}")
        s_phase, known = self.phase_vector(state, phase)
        w, parts = self._reweighting(state, s_phase)
        features, dots = _features(state, phase, cands, self.half_life_s, w * parts)
        x = (features - self.mean) / self.scale
        reweighted = self._reweighted(cands, w, parts, dots)
        h = np.tanh(s_phase @ self.P)
        prior = (self.type_bias + self.B @ h)[cands.types] if n else np.zeros(0)
        linear = blocked_product(x, self.theta[:, None])[:, 0] if n else np.zeros(0)
        logit = linear + reweighted @ self.gamma + prior + self.bias
        state_score = 1.0 / (1.0 + np.exp(-np.clip(logit, -30, 30)))
        top = float(content.max()) if n else 0.0
        if empty_state:
            alpha = 0.0
        else:
            z = self.alpha @ np.array([1.0, math.log1p(query_terms), float(terse), top, float(known)])
            alpha = float(1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z)))))
        final = alpha * state_score + (1.0 - alpha) * content
        breakdown = {
            "content": content,
            "state": state_score,
            "prior": prior,
            "importance": cands.importance,
            "alpha": np.full(n, alpha),
            "phase_known": np.full(n, float(known)),
        }
        return final, breakdown, alpha

    def _reweighting(self, state: EncodedState, s_phase: FloatArray) -> tuple[FloatArray, FloatArray]:
        """w(S) ((d,) float64) and the parts it is compared with, rows whole, goal, result ((3, d))."""
        w = 1.0 + self.W2 @ np.tanh(self.W1 @ np.concatenate([state.whole, s_phase]))
        return w, np.stack([state.whole, state.goal, state.result]).astype(np.float64)

    def _reweighted(self, cands: Candidates, w: FloatArray, parts: FloatArray, dots: FloatArray) -> FloatArray:
        """(n, 3) cos(w * e, s_part) for s_part in whole, goal, result (0 for absent parts), given
        ``dots`` = e . (w * s_part) ((n, 3))."""
        E = cands.vectors
        n = E.shape[0]
        out = np.zeros((n, len(_REWEIGHTED)))
        if n == 0:
            return out
        squares = np.square(E)  # (n, d) float32: |w * e|^2 = e^2 . w^2
        norms = np.sqrt(np.maximum(blocked_product(squares, np.square(w).astype(np.float32)[:, None])[:, 0], 1e-12))
        pn = np.linalg.norm(parts, axis=1)
        present = pn > 0
        out[:, present] = dots[:, present] / (norms[:, None] * pn[present])
        return out

    # --- persistence ------------------------------------------------------------------------------

    def to_json(self) -> str:
        """Serialise to JSON (parameters rounded to 6 decimals)."""
        names = ("theta", "gamma", "type_bias", "B", "P", "W1", "W2", "alpha", "mean", "scale")
        doc = {
            "format": "retain-sam/1",
            "features": list(STATE_FEATURES),
            "types": [t.value for t in TYPES],
            "half_life_s": self.half_life_s,
            "bias": round(self.bias, 6),
            "params": {k: np.round(getattr(self, k), 6).tolist() for k in names},
            "phases": {k: np.round(v, 6).tolist() for k, v in self.phases.items()},
            "meta": self.meta,
        }
        return json.dumps(doc)

    @classmethod
    def from_json(cls, text: str) -> StateScorer:
        """Inverse of :meth:`to_json`. Raises InvalidInput on another format or feature set."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"state scorer: not JSON ({exc})") from exc
        if not isinstance(doc, dict) or doc.get("format") != "retain-sam/1":
            raise InvalidInput("state scorer: not a retain-sam/1 document")
        if doc.get("features") != list(STATE_FEATURES) or doc.get("types") != [t.value for t in TYPES]:
            raise InvalidInput("state scorer: fitted on another feature or type set; retrain it (retain train-sam)")
        params = dict(doc["params"]) | {"bias": doc.get("bias", 0.0)}
        return cls(
            params,
            phases=doc.get("phases"),
            half_life_s=doc.get("half_life_s", DEFAULT_HALF_LIFE_S),
            meta=doc.get("meta"),
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> StateScorer:
        """Load from ``path``, or the model shipped in ``retain/models/sam.json``."""
        if path is None:
            text = resources.files("retain").joinpath("models/sam.json").read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        return cls.from_json(text)

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path``."""
        Path(path).write_text(self.to_json(), encoding="utf-8")


# --- training -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SamExample:
    """One probe for training: the state, its candidates with content scores, and which are needed.

    Attributes:
        state: encoded state; phase: its phase name. cands: candidates; content: (n,) in [0, 1].
        needed: (n,) bool. query_terms, terse: as :meth:`StateScorer.score`. group: the scenario id
            (folds never split a scenario).
    """

    state: EncodedState
    phase: str | None
    cands: Candidates
    content: FloatArray
    needed: npt.NDArray[np.bool_]
    query_terms: int
    terse: bool
    group: str


def train_state_scorer(
    examples: Sequence[SamExample],
    *,
    rank: int = 8,
    prior_rank: int = 4,
    epochs: int = 300,
    lr: float = 0.02,
    l2: float = 1e-3,
    temperature: float = 0.1,
    min_phase_groups: int = 2,
    half_life_s: float = DEFAULT_HALF_LIFE_S,
    seed: int = 0,
    meta: Mapping[str, Any] | None = None,
) -> StateScorer:
    """Fit a :class:`StateScorer` by a listwise softmax loss over each probe's candidates.

    loss = mean over probes, over needed candidates i of -log softmax(score / temperature)_i, plus
    ``l2`` * (sum of squared weights). Adam (torch, CPU), full batch, ``epochs`` steps. A learned phase
    vector is fitted only for phases present in at least ``min_phase_groups`` scenarios.

    Raises:
        InvalidInput: no example with a needed candidate, or mixed embedding widths.
    """
    import torch

    usable = [e for e in examples if e.needed.any() and len(e.needed) > 0]
    if not usable:
        raise InvalidInput("examples: none has a needed candidate")
    dims = {e.cands.vectors.shape[1] for e in usable}
    if len(dims) != 1:
        raise InvalidInput(f"examples: embeddings of several widths {sorted(dims)}")
    d = dims.pop()
    torch.manual_seed(seed)
    feats = [state_features(e.state, e.phase, e.cands, half_life_s=half_life_s) for e in usable]
    allx = np.vstack(feats)
    mean, scale = allx.mean(axis=0), allx.std(axis=0)
    scale[scale < 1e-6] = 1.0
    groups_of: dict[str, set[str]] = {}
    for e in usable:
        if e.phase:
            groups_of.setdefault(e.phase, set()).add(e.group)
    learned_phases = sorted(p for p, g in groups_of.items() if len(g) >= min_phase_groups)
    phase_index = {p: i for i, p in enumerate(learned_phases)}
    t = len(TYPES)
    f = len(STATE_FEATURES)

    def param(*shape: int, std: float = 0.0) -> torch.Tensor:
        return (torch.randn(*shape, dtype=torch.float64) * std).requires_grad_()

    theta, gamma, type_bias = param(f), param(len(_REWEIGHTED)), param(t)
    B, P = param(t, prior_rank, std=0.01), param(d, prior_rank, std=0.05)
    W1, W2 = param(rank, 2 * d, std=0.02), param(d, rank)
    alpha = torch.tensor([0.0, -0.5, 1.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    bias = param(1)
    phase_vecs = param(max(1, len(learned_phases)), d)
    params = [theta, gamma, type_bias, B, P, W1, W2, alpha, bias, phase_vecs]
    # Pad every probe's candidates to one (m, n_max) batch; padded slots are masked out of the softmax.
    m, n_max = len(usable), max(len(e.content) for e in usable)
    X = np.zeros((m, n_max, f))
    E = np.zeros((m, n_max, d))
    T = np.zeros((m, n_max), dtype=np.int64)
    C = np.zeros((m, n_max))
    valid = np.zeros((m, n_max), dtype=bool)
    pos = np.zeros((m, n_max))
    parts = np.zeros((m, 3, d))
    phase0 = np.zeros((m, d))
    pidx = np.zeros(m, dtype=np.int64)
    known = np.zeros(m)
    ain = np.zeros((m, len(_ALPHA_INPUTS)))
    for i, (e, x) in enumerate(zip(usable, feats, strict=True)):
        n = len(e.content)
        X[i, :n], E[i, :n], T[i, :n] = (x - mean) / scale, e.cands.vectors, e.cands.types
        C[i, :n], valid[i, :n] = e.content, True
        pos[i, :n] = e.needed / e.needed.sum()
        parts[i] = np.stack([e.state.whole, e.state.goal, e.state.result])
        phase0[i] = e.state.phase
        j = phase_index.get(e.phase or "")
        pidx[i], known[i] = (j, 1.0) if j is not None else (0, 0.0)
        ain[i] = [1.0, math.log1p(e.query_terms), float(e.terse), float(e.content.max()), known[i]]
    Xt, Et, Tt, Ct = torch.tensor(X), torch.tensor(E), torch.tensor(T), torch.tensor(C)
    validt, post, partst = torch.tensor(valid), torch.tensor(pos), torch.tensor(parts)
    phase0t, pidxt, knownt, aint = torch.tensor(phase0), torch.tensor(pidx), torch.tensor(known), torch.tensor(ain)
    pn = torch.clamp(partst.norm(dim=2), min=1e-12)  # (m, 3)
    opt = torch.optim.Adam(params, lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        s_phase = phase0t + knownt[:, None] * phase_vecs[pidxt]  # (m, d)
        w = 1.0 + torch.tanh(torch.cat([partst[:, 0], s_phase], dim=1) @ W1.T) @ W2.T  # (m, d)
        norms = torch.sqrt(torch.clamp((Et * Et) @ (w * w)[:, :, None], min=1e-12))[..., 0]  # (m, n)
        rw = torch.einsum("mnd,md,mkd->mnk", Et, w, partst) / (norms[..., None] * pn[:, None, :])
        prior = torch.gather(type_bias[None, :] + torch.tanh(s_phase @ P) @ B.T, 1, Tt)  # (m, n)
        s = torch.sigmoid(Xt @ theta + rw @ gamma + prior + bias)
        a = torch.sigmoid(aint @ alpha)[:, None]
        final = (a * s + (1 - a) * Ct) / temperature
        logp = torch.log_softmax(final.masked_fill(~validt, -1e9), dim=1)
        nll = -(post * logp.masked_fill(~validt, 0.0)).sum(dim=1).mean()
        reg = sum((p * p).sum() for p in (theta, gamma, type_bias, B, P, W1, W2, phase_vecs))
        loss = nll + l2 * reg
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
    out = {
        "theta": theta.detach().numpy(),
        "gamma": gamma.detach().numpy(),
        "type_bias": type_bias.detach().numpy(),
        "B": B.detach().numpy(),
        "P": P.detach().numpy(),
        "W1": W1.detach().numpy(),
        "W2": W2.detach().numpy(),
        "alpha": alpha.detach().numpy(),
        "mean": mean,
        "scale": scale,
        "bias": float(bias.detach().numpy()[0]),
    }
    phases = {p: phase_vecs[i].detach().numpy() for p, i in phase_index.items()}
    return StateScorer(out, phases=phases, half_life_s=half_life_s, meta=meta)

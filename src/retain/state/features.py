"""The state features of SAM: ``x(S, m)``, cheap features of each candidate memory m under an
encoded agent state S (:class:`~retain.state.agent.EncodedState`), one column per name in
:data:`STATE_FEATURES`.

They are: plain cosines of m's embedding to each state part, recency in stream positions and in event
time (exponential decay, configurable half-life), whether m was written in the current phase,
observations of an earlier phase (suppression), the core tier, importance and use, and value match
(the share of a constraint's, the subgoal's or the last result's dates, times and amounts,
:func:`retain.text.values.canonical_values`, that m states; whether m is the newest candidate stating
a constraint's value), and what the stream said last: the cosine of m to the newest candidate of all
and to the newest of each role (user, tool, agent), and the share of each of those records' terms
that m states (a terse "ok, continue" names no next step; the agent's latest thought, the user's
latest message and the latest tool output do).

Numpy only: for n candidates, one (n, d) x (d, p) product over every state part at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from retain.numeric.kernels import blocked_product
from retain.record import MemoryType
from retain.state.agent import EncodedState
from retain.state.candidates import TYPES, Candidates, content_terms
from retain.text.values import canonical_values

__all__ = [
    "DEFAULT_HALF_LIFE_S",
    "STATE_FEATURES",
    "feature_matrix",
    "state_features",
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
DEFAULT_HALF_LIFE_S = 3 * 24 * 3600.0
"""Default half-life of the event-time decay feature: 3 days (seconds)."""
_COLUMN = {name: i for i, name in enumerate(STATE_FEATURES)}
_LAST_COS = ("last_cos", "last_user_cos", "last_tool_cos", "last_agent_cos")
_LAST_OVERLAP = ("last_overlap", "last_user_overlap", "last_tool_overlap", "last_agent_overlap")


def state_features(
    state: EncodedState, phase: str | None, cands: Candidates, *, half_life_s: float = DEFAULT_HALF_LIFE_S
) -> FloatArray:
    """(n, len(STATE_FEATURES)) float64 features of each candidate under ``state`` (the lexical overlap
    features read the state's texts from ``state.texts``)."""
    return feature_matrix(state, phase, cands, half_life_s, np.zeros((0, cands.vectors.shape[1])))[0]


def feature_matrix(
    state: EncodedState, phase: str | None, cands: Candidates, half_life_s: float, extra: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """:func:`state_features`, and the (n, r) dot products of the candidates with the r rows of
    ``extra`` ((r, d) float64), computed in the same matrix product as the state-part cosines."""
    n = cands.vectors.shape[0]
    out = np.zeros((n, len(STATE_FEATURES)))
    if n == 0:
        return out, np.zeros((0, len(extra)))
    last = _newest_rows(cands)
    dots = _cosine_features(state, cands, last, extra, out)
    _record_features(phase, cands, half_life_s, out)
    _overlap_features(state, cands, last, out)
    _value_features(state, cands, out)
    return out, dots


def _cosine_features(
    state: EncodedState, cands: Candidates, last: npt.NDArray[np.intp], extra: FloatArray, out: FloatArray
) -> FloatArray:
    """Fill the cosine columns (each state part, the newest records ``last``); return the (n, r) dot
    products with the rows of ``extra``."""
    E = cands.vectors
    col = _COLUMN
    c, o = len(state.constraints), len(state.open)
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
    return cos[:, 3 + c + o + len(_LAST_COS) :]


def _record_features(phase: str | None, cands: Candidates, half_life_s: float, out: FloatArray) -> None:
    """Fill the columns read from the records alone: recency (stream position, event time, rank
    among the candidates of the same type), phase, tier, importance, use and role."""
    n = cands.vectors.shape[0]
    col = _COLUMN
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


def _overlap_features(state: EncodedState, cands: Candidates, last: npt.NDArray[np.intp], out: FloatArray) -> None:
    """Fill the lexical overlap columns (the newest records' terms, the goal's, the last result's, the
    constraints') and the type x goal / result interactions (after the cosine columns)."""
    col = _COLUMN
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

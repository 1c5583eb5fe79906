"""What the state scorer reads of candidate memories, as arrays: embeddings, stream position, event
time, type, tier, importance, use, phase, role, content terms and canonical values.

:func:`candidates_from_records` gathers n records into one :class:`Candidates`; a
:class:`CandidateMemo` keeps each record's inputs between searches (one row per record object), so a
record seen by an earlier search costs one dictionary lookup. The state features
(:mod:`retain.state.features`) and the scorer (:mod:`retain.state.scorer`) read only these arrays.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, Tier
from retain.text.lexical import STOPWORDS, index_terms
from retain.text.values import canonical_values

__all__ = [
    "PHASE_KEY",
    "TYPES",
    "CandidateMemo",
    "Candidates",
    "candidates_from_records",
    "content_terms",
]

FloatArray = npt.NDArray[np.float64]

TYPES: tuple[MemoryType, ...] = tuple(MemoryType)
"""The memory types in a fixed order; :attr:`Candidates.types` holds indices into it."""
_TYPE_INDEX = {t: i for i, t in enumerate(TYPES)}
PHASE_KEY = "phase"
"""Metadata key under which :meth:`retain.Memory.add` records the phase the record was written in."""
_TOOL_ROLES = frozenset({"tool", "system", "function", "observation"})


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


def _phase_of(record: MemoryRecord) -> str | None:
    value = record.metadata.get(PHASE_KEY)
    return value if isinstance(value, str) and value else None


@lru_cache(maxsize=1024)
def _role_flags(role: str) -> tuple[float, float, float]:
    """(user, tool, agent) indicators of a role name."""
    r = role.lower()
    return float(r == "user"), float(r in _TOOL_ROLES), float(r.startswith(("agent", "assistant")))

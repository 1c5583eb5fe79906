"""Which records an operation sees: :class:`RecordFilter` and its named values.

Every search and listing of the store contract takes a filter; backends apply all of it (types,
tiers, event-time window, history, segments, stream positions) inside the query.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from retain.errors import InvalidInput
from retain.record import MemoryType, Tier, parse_tier, parse_type, utc
from retain.store.where import MetadataCondition, parse_where

__all__ = ["ALL_RECORDS", "DEFAULT_FILTER", "HOT_TIERS", "MAX_SEQ", "RecordFilter"]

HOT_TIERS: tuple[Tier, ...] = (Tier.CORE, Tier.DYNAMIC)


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Metadata filter applied inside every search and listing.

    Attributes:
        types: keep only these types (None = all).
        tiers: keep only these tiers; default the hot memory (core + dynamic), not the archive.
        start, end: keep records whose event_time is in [start, end) (UTC); records with unknown
            event_time are excluded when either bound is set.
        include_superseded: keep records that a newer version replaced (history).
        segments: keep only these segment ids, strings (None = all; () = none). Records without a
            segment are kept only by ``segments=None``.
        seqs: keep only records at these stream positions, ints in [0, 2**63) (None = all; () = none).
            Records without a position are kept only by ``seqs=None``.
        where: metadata conditions, all of which a record meets (:mod:`retain.store.where`; a mapping
            is parsed with :func:`~retain.store.where.parse_where`); None = no condition.
        live_at: leave out the hot (core, dynamic) records expired at this time (UTC): those whose
            ``metadata["expires_at"]`` (:data:`~retain.store.where.EXPIRES_AT_KEY`) is <= ``live_at``
            (archived records are kept); None = expired records too.

    Any iterable is accepted for the tuple fields (type and tier names too); ``types`` and ``tiers``
    are stored as tuples of enums, ``segments`` and ``seqs`` as sorted tuples without duplicates, so
    equal filters compare and hash equal.

    Raises:
        InvalidInput: a field of the wrong kind (a string or a number where a collection is due; a
            segment id that is not a string or holds a lone surrogate; a position that is not an int,
            is negative or does not fit 64 bits; an unknown type or tier name; ``include_superseded`` not a bool;
            a bad ``where`` condition; a naive or unparseable ``live_at``).
    """

    types: tuple[MemoryType, ...] | None = None
    tiers: tuple[Tier, ...] | None = HOT_TIERS
    start: datetime | None = None
    end: datetime | None = None
    include_superseded: bool = False
    segments: tuple[str, ...] | None = None
    seqs: tuple[int, ...] | None = None
    where: tuple[MetadataCondition, ...] | None = None
    live_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.where is not None and not (
            isinstance(self.where, tuple) and all(isinstance(c, MetadataCondition) for c in self.where)
        ):
            object.__setattr__(self, "where", parse_where(self.where))  # type: ignore[arg-type]
        if self.where == ():
            object.__setattr__(self, "where", None)
        if self.live_at is not None:
            object.__setattr__(self, "live_at", utc(self.live_at, field_name="live_at"))
        if not isinstance(self.include_superseded, bool):
            raise InvalidInput(f"include_superseded: must be a bool, got {self.include_superseded!r}")
        if self.types is not None:
            object.__setattr__(self, "types", tuple(parse_type(t) for t in _items(self.types, "types")))
        if self.tiers is not None:
            object.__setattr__(self, "tiers", tuple(parse_tier(t) for t in _items(self.tiers, "tiers")))
        if self.segments is not None:
            segments = _items(self.segments, "segments")
            for segment in segments:
                if not isinstance(segment, str):
                    raise InvalidInput(f"segments: segment ids are strings, got {segment!r}")
                if not segment.isascii():  # a lone surrogate: SQLite cannot bind it, the index matched nothing
                    try:
                        segment.encode("utf-8")
                    except UnicodeEncodeError:
                        raise InvalidInput(f"segments: {segment!r} is not valid UTF-8 text") from None
            object.__setattr__(self, "segments", tuple(sorted(set(segments))))
        if self.seqs is not None:
            items = _items(self.seqs, "seqs")
            # plain ints (the common case) are range-checked at once below; bool and the rest one by one
            seqs = set(items) if all(type(seq) is int for seq in items) else {_position(seq) for seq in items}
            if seqs and (min(seqs) < 0 or max(seqs) >= MAX_SEQ):
                _position(min(seqs) if min(seqs) < 0 else max(seqs))
            object.__setattr__(self, "seqs", tuple(sorted(seqs)))


MAX_SEQ = 2**63
"""One past the largest stream position a filter takes (SQLite integers are 64-bit, signed)."""


def _position(seq: object) -> int:
    """``seq`` as a stream position (an int in [0, :data:`MAX_SEQ`)); numpy integers are accepted."""
    if isinstance(seq, bool) or not isinstance(seq, numbers.Integral) or not 0 <= int(seq) < MAX_SEQ:
        raise InvalidInput(f"seqs: positions are ints in [0, 2**63), got {seq!r}")
    return int(seq)


def _items(value: object, name: str) -> tuple[Any, ...]:
    """``value`` (any iterable but a string or bytes) as a tuple."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{name}: must be a collection (tuple, list, set) or None, got {value!r}")
    return tuple(value)


ALL_RECORDS = RecordFilter(tiers=None, include_superseded=True)
"""Every record, archive and superseded versions included."""

DEFAULT_FILTER = RecordFilter()
"""The default of every operation: current records of the hot memory (core + dynamic), any type."""

"""Helpers of the conformance suite: deterministic records and vectors, and a hand-written
reference cosine. Backends' own tests may use them too."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from hypothesis import strategies as st

from retain.record import MemoryRecord, new_id
from retain.store.ops import ScoredId

__all__ = ["DIM", "T0", "cosine", "ids", "make", "names", "unicode_text", "unit"]

DIM = 16
"""Width of the suite's embeddings."""
T0 = datetime(2024, 3, 1, 9, 30, 15, 123457, tzinfo=UTC)
"""A fixed time with microseconds (UTC)."""


def unit(seed: int, dim: int = DIM) -> np.ndarray:
    """A deterministic (dim,) float32 L2-normalised vector."""
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def make(namespace: str, content: str, *, seed: int | None = None, **fields: Any) -> MemoryRecord:
    """A valid record; embedding ``unit(seed)`` (default: derived from the content)."""
    vec = unit(seed if seed is not None else zlib.crc32(content.encode()))
    return MemoryRecord(id=new_id(), namespace=namespace, content=content, embedding=vec, encoder="test", **fields)


def ids(records_or_hits: Sequence[MemoryRecord | ScoredId]) -> list[str]:
    """The ids of records or search hits, in order."""
    return [x.id for x in records_or_hits]


def cosine(a: npt.ArrayLike, b: npt.ArrayLike | None) -> float:
    """Reference cosine similarity, written out by hand in float64 (``b`` may be a record's
    ``embedding`` as typed; records of :func:`make` always have one)."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.sum(a64 * b64) / (np.sqrt(np.sum(a64 * a64)) * np.sqrt(np.sum(b64 * b64))))


_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)

unicode_text = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_categories=_SURROGATES),  # any code point UTF-8 can carry
        st.sampled_from("用户喜欢绿茶東京でラーメンを食べましたカタカナ한국어🍵😀👩‍👩‍👧éßİ\u0301\u200d"),
    ),
    min_size=1,
    max_size=200,
).filter(lambda s: s.strip() != "")


def names(corpus: dict[str, MemoryRecord], records: list[MemoryRecord]) -> list[str]:
    by_id = {r.id: name for name, r in corpus.items()}
    return [by_id[r.id] for r in records]

"""The candidate pool of supersede detection within one ``add_many`` call.

:class:`Earlier` holds the records of a batch seen so far and picks which of them a new record is
compared with (:func:`retain.ingest.detect.find_updates`); :func:`cosine` of two records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from retain.record import MemoryRecord
from retain.text.lexical import query_terms

__all__ = ["Earlier", "cosine"]


class Earlier:
    """The records of a :func:`retain.ingest.detect.find_updates` batch seen so far, and which of them a new record is
    compared with: all while they are at most ``4 * window``; else the ``window`` with the highest
    cosine to it and the ``window`` sharing the most of its query terms (each shared term weighted by
    its inverse document frequency among them, log(1 + n / df): BM25 without length normalisation),
    ties to the later record."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.records: list[MemoryRecord] = []
        self._unit = np.zeros((0, 0), dtype=np.float32)  # rows [:len(records)]: L2-normalised embeddings
        self._widths: set[int] = set()  # embedding widths seen (one, unless the caller mixed encoders)
        self._postings: dict[str, list[int]] = {}
        self._indexed = 0  # records[:_indexed] are in _postings

    def append(self, rec: MemoryRecord) -> None:
        assert rec.embedding is not None
        v = rec.embedding.astype(np.float32)
        norm = float(np.linalg.norm(v))
        n = len(self.records)
        self._widths.add(len(v))
        if len(self._widths) == 1:  # grown by doubling: appending stays O(d) amortised
            if n == len(self._unit):
                grown = np.zeros((max(64, 2 * n), len(v)), dtype=np.float32)
                if n:  # the first buffer replaces the (0, 0) placeholder
                    grown[:n] = self._unit[:n]
                self._unit = grown
            self._unit[n] = v / norm if norm else v
        self.records.append(rec)

    def candidates(self, rec: MemoryRecord, terms: Sequence[str]) -> list[MemoryRecord]:
        n = len(self.records)
        if n <= 4 * self.window:
            return list(self.records)
        assert rec.embedding is not None
        picked: dict[int, None] = {}
        if self._widths == {len(rec.embedding)}:
            cos = self._unit[:n] @ rec.embedding.astype(np.float32)
            # stable sort of the reversed list: of equal cosines the later record comes first
            order = n - 1 - np.argsort(-cos[::-1], kind="stable")[: self.window]
            picked.update(dict.fromkeys(order.tolist()))
        for j in range(self._indexed, n):  # index the records appended since the last call
            for term in set(query_terms(self.records[j].content)):
                self._postings.setdefault(term, []).append(j)
        self._indexed = n
        weight: dict[int, float] = {}
        for term in set(terms):
            rows = self._postings.get(term, ())
            idf = math.log1p(n / len(rows)) if rows else 0.0
            for j in rows:
                weight[j] = weight.get(j, 0.0) + idf
        best = sorted(weight, key=lambda j: (-weight[j], -j))[: self.window]
        picked.update(dict.fromkeys(best))
        return [self.records[j] for j in sorted(picked)]


def cosine(a: MemoryRecord, b: MemoryRecord) -> float:
    """Cosine of the embeddings of ``a`` and ``b`` (-1..1; 0 when one is all zeros)."""
    assert a.embedding is not None and b.embedding is not None
    x, y = a.embedding.astype(np.float64), b.embedding.astype(np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0

"""Calibrated relevance: the last step of every search, the same number in every preset.

The ranking score of a hit (``Hit.score``) depends on the preset: a probability from the learned
fusion for "default", a reciprocal-rank sum for "rrf", "dense" and "lexical" that is identical for a
relevant and a nonsense query. None of these can carry a "return nothing when nothing is relevant"
threshold. :func:`relevance` adds one that can: the probability that a hit is relevant to the query,
estimated from two absolute pieces of evidence about the (query, record) pair that every preset has:

* ``cosine``: cosine of the query and record embeddings (the store's encoder), in [-1, 1];
* ``coverage``: share of the distinct query terms (:func:`retain.text.lexical.query_terms`) found
  among the record's indexed terms (:func:`retain.text.lexical.index_terms` of
  :func:`retain.record.search_text`), in [0, 1].

Model: Platt scaling (logistic regression, Platt 1999) p = sigmoid(w . x + b) with non-negative
weights, so the relevance never falls when the cosine or the coverage rises. One model per encoder
(cosines of different encoders are not comparable), fitted by ``python -m
retain.eval.calibration_fit`` on LoCoMo dev conversations split by conversation (fit / choose /
held-out; ``docs/benchmarks.md#calibrated-relevance``) and shipped in
``retain/models/calibration.json``. For an encoder without a model (or a store without vectors) a
coverage-only model fitted on the same data is used.

"Relevant" is what the fit was labelled with: the hit is one of the question's evidence turns. A
relevance of 0.3 means that, over the held-out conversations, about 30% of the hits scored near 0.3
were evidence (the reliability table in the benchmarks gives the measured share per bin).
:data:`NOTHING_RELEVANT` is the documented threshold under which a query about nothing stored
returns [] in every preset.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.record import MemoryRecord, search_text
from retain.text.lexical import index_terms

__all__ = ["NOTHING_RELEVANT", "Platt", "RelevanceCalibration", "coverage", "relevance"]

FloatArray = npt.NDArray[np.float64]

NOTHING_RELEVANT = 0.05
"""The relevance threshold documented to drop the hits of a query about nothing stored: pass
``threshold=NOTHING_RELEVANT`` to :meth:`retain.Memory.search` (any preset). Chosen on the LoCoMo
"choose" conversation; its cost in recall@10 and its "nothing relevant -> []" rate are in
``docs/benchmarks.md#calibrated-relevance``."""


@dataclass(frozen=True, slots=True)
class Platt:
    """p = sigmoid(weights . x + bias): a logistic calibration over the named features.

    Attributes:
        features: names of the columns of x, a subset of ("cosine", "coverage").
        weights: one per feature, each >= 0 (relevance monotone in the evidence).
        bias: intercept.
    """

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float

    def __post_init__(self) -> None:
        if len(self.features) != len(self.weights) or not set(self.features) <= {"cosine", "coverage"}:
            raise InvalidInput(f"calibration: features {self.features} and weights {self.weights} do not match")
        if any(not math.isfinite(w) or w < 0 for w in self.weights) or not math.isfinite(self.bias):
            raise InvalidInput("calibration: weights must be finite and >= 0, the bias finite")

    def prob(self, columns: Mapping[str, FloatArray]) -> FloatArray:
        """(n,) probabilities in [0, 1] from the (n,) feature columns named in :attr:`features`."""
        z = np.full(len(next(iter(columns.values()))), self.bias) if columns else np.zeros(0)
        for name, w in zip(self.features, self.weights, strict=True):
            z = z + w * np.asarray(columns[name], dtype=np.float64)
        out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
        return out

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return {"features": list(self.features), "weights": list(self.weights), "bias": self.bias}

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> Platt:
        """Parse :meth:`to_dict` output. Raises InvalidInput when malformed."""
        try:
            return cls(
                features=tuple(str(f) for f in raw["features"]),  # type: ignore[attr-defined]
                weights=tuple(float(w) for w in raw["weights"]),  # type: ignore[attr-defined]
                bias=float(raw["bias"]),  # type: ignore[arg-type]
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"calibration: malformed model ({exc})") from exc


@dataclass(frozen=True)
class RelevanceCalibration:
    """The per-encoder calibrations and the fallback.

    Attributes:
        by_encoder: encoder name (``Encoder.name``) -> Platt over ("cosine", "coverage").
        fallback: Platt over ("coverage",), for an encoder without a model or no vectors.
        trained_on: provenance (data, split).
    """

    by_encoder: Mapping[str, Platt]
    fallback: Platt
    trained_on: str = ""
    notes: Mapping[str, object] = field(default_factory=dict)

    def relevance(self, encoder: str, cosine: FloatArray | None, cover: FloatArray) -> FloatArray:
        """(n,) calibrated relevance in [0, 1] from (n,) cosines (None when there are no vectors) and
        coverages."""
        model = self.by_encoder.get(encoder)
        if model is None or cosine is None:
            return self.fallback.prob({"coverage": cover})
        return model.prob({"cosine": np.clip(cosine, -1.0, 1.0), "coverage": cover})

    def to_json(self) -> str:
        """Serialise (the shape :meth:`from_json` reads)."""
        body = {
            "by_encoder": {k: v.to_dict() for k, v in sorted(self.by_encoder.items())},
            "fallback": self.fallback.to_dict(),
            "trained_on": self.trained_on,
            "notes": dict(self.notes),
        }
        return json.dumps(body, indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> RelevanceCalibration:
        """Parse :meth:`to_json` output. Raises InvalidInput when malformed."""
        try:
            raw = json.loads(text)
            by_encoder = {str(k): Platt.from_dict(v) for k, v in raw["by_encoder"].items()}
            fallback = Platt.from_dict(raw["fallback"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInput(f"calibration: malformed JSON ({exc})") from exc
        if fallback.features != ("coverage",):
            raise InvalidInput("calibration: the fallback model reads coverage only")
        return cls(by_encoder, fallback, str(raw.get("trained_on", "")), dict(raw.get("notes", {})))

    @classmethod
    def load(cls, path: str | Path | None = None) -> RelevanceCalibration:
        """The model at ``path``, or the one shipped with the package when None."""
        if path is None:
            return _shipped()
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _shipped() -> RelevanceCalibration:
    text = resources.files("retain").joinpath("models/calibration.json").read_text(encoding="utf-8")
    return RelevanceCalibration.from_json(text)


@functools.lru_cache(maxsize=1 << 16)
def _terms(text: str) -> frozenset[str]:
    return frozenset(index_terms(text))


def coverage(terms: Sequence[str], records: Sequence[MemoryRecord]) -> FloatArray:
    """(n,) share of the distinct query ``terms`` found among each record's indexed terms, in [0, 1]
    (0 for a query without terms)."""
    wanted = set(terms)
    if not wanted:
        return np.zeros(len(records))
    return np.array([len(wanted & _terms(search_text(r))) / len(wanted) for r in records], dtype=np.float64)


def relevance(
    records: Sequence[MemoryRecord],
    terms: Sequence[str],
    query_vector: npt.NDArray[np.float32] | None,
    encoder: str,
    calibration: RelevanceCalibration | None = None,
) -> FloatArray:
    """(n,) calibrated relevance in [0, 1] of ``records`` to a query (its ``terms`` and, when the store
    has vectors, its (d,) L2-normalised embedding ``query_vector`` by the encoder named ``encoder``);
    higher = more relevant. Records without an embedding of the query's dimension are scored by
    coverage only. ``calibration`` defaults to the shipped model."""
    model = calibration or _shipped()
    cover = coverage(terms, records)
    if query_vector is None or not records:
        return model.relevance(encoder, None, cover)
    dim = len(query_vector)
    has = np.array([r.embedding is not None and len(r.embedding) == dim for r in records])
    zero = np.zeros(dim, np.float32)
    matrix = np.stack(
        [r.embedding if h and r.embedding is not None else zero for r, h in zip(records, has, strict=True)]
    )
    cosine = matrix.astype(np.float64) @ np.asarray(query_vector, dtype=np.float64)
    out = model.relevance(encoder, cosine, cover)
    if not has.all():
        out = np.where(has, out, model.relevance(encoder, None, cover))
    return out

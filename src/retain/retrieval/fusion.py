"""Retrieval: candidate generation, fusion and diversity, as pure functions over arrays.

The hybrid pipeline (run by :meth:`retain.Memory.search`):

1. **Channels.** BM25 over index terms (lexical) and cosine over embeddings (dense), each returning
   its top candidates within the namespace and filter. With the learned fusion, when the query names
   speakers of those candidates, a third channel: cosine to :func:`relation_query` (the query without
   the names), so that the several turns of one person that answer a multi-hop question join the pool.
2. **Context.** The stream neighbours (previous and next record of the same segment) of every
   candidate join the pool: the answer to a question often sits in the reply to it.
3. **Fusion.** Either reciprocal rank fusion (Cormack, Clarke & Büttcher 2009) or a learned linear
   fusion: logistic regression over per-candidate features (:func:`fusion_features`) fitted on the
   LoCoMo dev conversations (``retain train-fusion``); the shipped weights live in
   ``retain/models/fusion.json``.
4. **Calibration, threshold and diversity.** Every candidate gets a calibrated relevance in [0, 1]
   (:mod:`retain.retrieval.calibration`, the same scale in every preset); optional minimum
   relevance; optional maximal marginal relevance re-ranking (Carbonell & Goldstein 1998).

Every score here is "higher = more relevant".
"""

from __future__ import annotations

import enum
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.numeric.linear import fit_clipped_logistic
from retain.record import MemoryRecord

__all__ = [
    "FEATURE_NAMES",
    "PRESETS",
    "Fusion",
    "Hit",
    "LinearFusion",
    "SearchConfig",
    "SearchMode",
    "SearchOrder",
    "fusion_features",
    "mmr",
    "proper_nouns",
    "relation_query",
    "rrf",
    "train_fusion",
]

FloatArray = npt.NDArray[np.float64]


class SearchMode(enum.StrEnum):
    """Which channels run: both (hybrid), BM25 only (lexical), or cosine only (dense)."""

    HYBRID = "hybrid"
    LEXICAL = "lexical"
    DENSE = "dense"


class SearchOrder(enum.StrEnum):
    """How hits are returned: best first (rank), as distinct episodes in event order (time), or
    time when the query asks for an order of events and rank otherwise (auto). See
    :mod:`retain.sequence.episodes`."""

    RANK = "rank"
    TIME = "time"
    AUTO = "auto"


class Fusion(enum.StrEnum):
    """How channel results are combined: reciprocal rank fusion or the learned linear model."""

    RRF = "rrf"
    LEARNED = "learned"


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """Retrieval options.

    Attributes:
        mode: channels to run.
        fusion: combination method (learned needs both channels; lexical/dense modes use ranks).
        candidates: top-N taken from each channel before fusion.
        neighbors: add the stream neighbours of each candidate to the pool.
        rrf_k: the k constant of RRF (60 in the original paper).
        threshold: drop hits whose calibrated relevance (``Hit.relevance``, in [0, 1], the same
            scale in every preset: :mod:`retain.retrieval.calibration`) is below this (None = keep
            all). :data:`~retain.retrieval.calibration.NOTHING_RELEVANT` (0.05) returns [] for a
            query about nothing stored.
        mmr_lambda: if set (0..1), re-rank the top with MMR; 1 = pure relevance, 0 = pure novelty.
        relation_candidates: with the learned fusion, when the query names speakers of the pool, the
            top-N by cosine to :func:`relation_query` (the query without those names) join the pool
            as a third channel; 0 = off (the ``relation_dense`` feature is computed either way).
    """

    mode: SearchMode = SearchMode.HYBRID
    fusion: Fusion = Fusion.LEARNED
    candidates: int = 100
    neighbors: bool = True
    rrf_k: int = 60
    threshold: float | None = None
    mmr_lambda: float | None = None
    relation_candidates: int = 50

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", SearchMode(self.mode))
        object.__setattr__(self, "fusion", Fusion(self.fusion))
        if self.candidates < 1:
            raise InvalidInput("candidates: must be >= 1")
        if self.relation_candidates < 0:
            raise InvalidInput("relation_candidates: must be >= 0")
        if self.mmr_lambda is not None and not 0.0 <= self.mmr_lambda <= 1.0:
            raise InvalidInput("mmr_lambda: must be in [0, 1]")


PRESETS: Mapping[str, SearchConfig] = {
    "default": SearchConfig(),
    "rrf": SearchConfig(fusion=Fusion.RRF, neighbors=False),
    "lexical": SearchConfig(mode=SearchMode.LEXICAL, fusion=Fusion.RRF, neighbors=False),
    "dense": SearchConfig(mode=SearchMode.DENSE, fusion=Fusion.RRF, neighbors=False),
    "diverse": SearchConfig(mmr_lambda=0.7),
}


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result.

    Attributes:
        record: the memory.
        score: the ranking score (higher = more relevant); its scale depends on the preset (for the
            learned fusion a probability, for RRF a reciprocal-rank sum): rank by it, never threshold it.
        rank: 1-based position.
        relevance: calibrated probability in [0, 1] that the hit is relevant to the query, the same
            function of the (query, record) pair in every preset (:mod:`retain.retrieval.calibration`):
            0.3 means that about 30% of hits scored near 0.3 were relevant on held-out LoCoMo
            conversations. ``threshold=`` applies to it. Also ``scores["relevance"]``.
        scores: breakdown: ``bm25`` (raw BM25, 0 when not matched), ``dense`` (cosine),
            ``rrf`` (reciprocal rank fusion), ``fused`` (the final score), and ``neighbor`` when the
            hit entered the pool as a neighbour of another candidate.
        via_edge, via: for a hit added by graph expansion (``search(expand=...)``,
            :func:`retain.retrieval.graph.expand_hits`), the edge type and the id of the hit it hangs from;
            else None.
        window: the hit's context unit when the search asked for one (``window=w``): the records of
            its segment with ``seq`` within w of its own, in stream order, the hit included; () otherwise
            (:func:`retain.sequence.segments.attach_windows`).
        conflicts_with: ids of the records this one is in an open conflict with
            (:mod:`retain.safety.conflicts`); () when none. ``superseded_by``: the record's successor
            (history hits only), else None.
    """

    record: MemoryRecord
    score: float
    rank: int
    scores: Mapping[str, float] = field(default_factory=dict)
    via_edge: str | None = None
    via: str | None = None
    window: tuple[MemoryRecord, ...] = ()
    conflicts_with: tuple[str, ...] = ()
    relevance: float = 0.0

    @property
    def superseded_by(self) -> str | None:
        """The id of the record that replaced this hit's record, or None when it is current."""
        return self.record.superseded_by

    @property
    def stale(self) -> bool:
        """True when the search's agent state holds another value for a slot this record states
        (``scores["stale"]``, :mod:`retain.state.evidence`): history, not the current value."""
        return bool(self.scores.get("stale", 0.0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (record without embedding; ``via_edge``/``via`` and ``window`` only when set)."""
        out = {
            "rank": self.rank,
            "score": self.score,
            "relevance": self.relevance,
            "scores": dict(self.scores),
            "record": self.record.to_dict(),
        }
        if self.via_edge is not None:
            out.update(via_edge=self.via_edge, via=self.via)
        if self.window:
            out["window"] = [r.to_dict() for r in self.window]
        out["superseded_by"] = self.record.superseded_by
        out["conflicts_with"] = list(self.conflicts_with)
        return out


def rrf(rankings: Sequence[Sequence[str]], *, k: int = 60, weights: Sequence[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion: score(d) = sum_i w_i / (k + rank_i(d)), ranks 1-based.

    Source: Cormack, Clarke & Büttcher, SIGIR 2009. Returns id -> score (higher = more relevant).
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise InvalidInput("weights: one per ranking")
    out: dict[str, float] = {}
    for ranking, w in zip(rankings, weights, strict=True):
        for position, doc in enumerate(ranking, start=1):
            out[doc] = out.get(doc, 0.0) + w / (k + position)
    return out


def mmr(
    vectors: npt.NDArray[np.float32],
    relevance: FloatArray,
    *,
    lam: float,
    k: int,
) -> list[int]:
    """Maximal marginal relevance: greedily pick argmax lam*rel_i - (1-lam)*max_{j picked} cos(v_i, v_j).

    Args:
        vectors: (n, d) float32, L2-normalised.
        relevance: (n,) relevance, higher = more relevant, any scale (min-max normalised here).
        lam: trade-off in [0, 1].
        k: how many to pick.

    Returns: indices into ``vectors`` in pick order. Source: Carbonell & Goldstein, SIGIR 1998.
    """
    n = len(relevance)
    if n == 0 or k <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    span = rel.max() - rel.min()
    rel = (rel - rel.min()) / span if span > 0 else np.ones_like(rel)
    sims = vectors @ vectors.T
    picked: list[int] = []
    max_sim = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        value = lam * rel - (1 - lam) * redundancy
        value[~available] = -np.inf
        best = int(np.argmax(value))
        picked.append(best)
        available[best] = False
        max_sim = np.maximum(max_sim, sims[best])
    return picked


FEATURE_NAMES: tuple[str, ...] = (
    "bm25_norm",
    "bm25_rr",
    "dense",
    "dense_gap",
    "dense_rr",
    "neighbor_bm25",
    "neighbor_dense",
    "segment_dense",
    "mentions_speaker",
    "mentions_other",
    "query_coverage",
    "length_relevance",
    "is_question",
    "query_terms",
    "turn_position",
    "proper_nouns",
    "relation_dense",
    "relation_gap",
)

_NAME_TOKEN = re.compile(r"([^\W_]+)((?:['\u2019]s?)?)", re.UNICODE)
_PROPER_NOUN = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")


def relation_query(query: str, names: Iterable[str]) -> str:
    """``query`` with the given names (lower-case first names, e.g. the speakers it mentions) and
    their possessive "'s" removed: what is asked about them, the relation.

    "What books has Melanie read?" with names {"melanie"} -> "What books has read?" (whitespace
    collapsed). A multi-hop
    question about one person is answered by several of that person's turns that share the
    relation ("books ... read") but rarely the name itself; the fusion scores candidates against
    this query too (feature ``relation_dense``). Returns ``query`` unchanged when it names none.
    """
    wanted = {n.lower() for n in names if n}
    if not wanted:
        return query
    kept = _NAME_TOKEN.sub(lambda m: "" if m.group(1).lower() in wanted else m.group(0), query)
    return " ".join(kept.split())


@functools.lru_cache(maxsize=1 << 16)
def proper_nouns(text: str) -> int:
    """Number of capitalised words (``[A-Z][a-z]+``) that do not open a sentence: a rough count of
    the names, places and titles a text mentions (0 for text without Latin capitals). Memoised per
    text (the same records come back search after search)."""
    return len(_PROPER_NOUN.findall(text))


def fusion_features(
    *,
    bm25: FloatArray,
    bm25_rank: FloatArray,
    dense: FloatArray,
    dense_rank: FloatArray,
    prev_index: npt.NDArray[np.intp],
    next_index: npt.NDArray[np.intp],
    segment: Sequence[str | None],
    mentions_speaker: npt.NDArray[np.bool_],
    mentions_other: npt.NDArray[np.bool_],
    coverage: FloatArray,
    length_terms: FloatArray,
    is_question: npt.NDArray[np.bool_],
    n_query_terms: int,
    earlier_turns: npt.NDArray[np.intp] | None = None,
    proper_noun_counts: FloatArray | None = None,
    relation_dense: FloatArray | None = None,
) -> FloatArray:
    """Per-candidate features for the learned fusion, (n, len(FEATURE_NAMES)) float64.

    Args (all (n,) over the candidate pool):
        bm25: raw BM25 (0 when the lexical channel did not return the candidate).
        bm25_rank, dense_rank: 0-based rank in each channel (the channel's depth when absent).
        dense: cosine to the query.
        prev_index, next_index: index of the stream neighbour in the pool, or -1.
        segment: segment id of each candidate (None when unknown).
        mentions_speaker: the query names the candidate's speaker.
        mentions_other: the query names another speaker of the namespace.
        coverage: share of the query terms found in the candidate (0..1; 0 when BM25 is 0).
        length_terms: length of the candidate in encoder tokens. It enters as
            log(1 + length) * max(bm25_norm, cosine): on LoCoMo longer turns carry more evidence, but
            the product keeps that prior from lifting long records that do not match the query.
        is_question: the candidate ends with a question mark.
        n_query_terms: number of distinct query terms.
        earlier_turns: records of the same segment just before the candidate, counted up to 2
            (0 = it opens its segment; -1 = unknown, e.g. no ``seq``). Enters as 1 / (1 + count)
            (1/3 when unknown): on LoCoMo the opening turns of a session carry the news since the
            last one and hold evidence three times as often as other turns. None = all unknown.
        proper_noun_counts: :func:`proper_nouns` of each candidate; enters as log(1 + count).
            None = all 0.
        relation_dense: cosine to :func:`relation_query` (the query without the speaker names it
            mentions); equals ``dense`` when the query names none. Enters raw and as the gap to
            its maximum. None = ``dense``.
    """
    n = len(dense)
    if n == 0:
        return np.zeros((0, len(FEATURE_NAMES)))
    earlier = np.full(n, -1, dtype=np.intp) if earlier_turns is None else np.asarray(earlier_turns)
    turn_position = np.where(earlier >= 0, 1.0 / (1.0 + np.clip(earlier, 0, 2)), 1.0 / 3.0)
    nouns = np.zeros(n) if proper_noun_counts is None else np.asarray(proper_noun_counts, dtype=np.float64)
    relation = dense if relation_dense is None else np.asarray(relation_dense, dtype=np.float64)
    top_bm25 = float(bm25.max()) if bm25.size else 0.0
    bm25_norm = bm25 / top_bm25 if top_bm25 > 0 else np.zeros(n)
    dense_gap = dense - float(dense.max())

    def neighbour_max(values: FloatArray, fill: float) -> FloatArray:
        prev_v = np.where(prev_index >= 0, values[np.maximum(prev_index, 0)], fill)
        next_v = np.where(next_index >= 0, values[np.maximum(next_index, 0)], fill)
        return np.maximum(prev_v, next_v)

    segment_dense = np.zeros(n)
    groups: dict[str | None, list[int]] = {}
    for i, seg in enumerate(segment):
        groups.setdefault(seg, []).append(i)
    for members in groups.values():
        top3 = np.sort(dense_gap[members])[-3:]
        segment_dense[members] = top3.mean()
    return np.stack(
        [
            bm25_norm,
            1.0 / (1.0 + bm25_rank),
            dense,
            dense_gap,
            1.0 / (1.0 + dense_rank),
            neighbour_max(bm25_norm, 0.0),
            neighbour_max(dense_gap, float(dense_gap.min())),
            segment_dense,
            mentions_speaker.astype(np.float64),
            mentions_other.astype(np.float64),
            coverage,
            np.log1p(length_terms) * np.maximum(bm25_norm, np.maximum(dense, 0.0)),
            is_question.astype(np.float64),
            np.full(n, float(n_query_terms)),
            turn_position,
            np.log1p(nouns),
            relation,
            relation - float(relation.max()),
        ],
        axis=1,
    )


@dataclass(frozen=True)
class LinearFusion:
    """A logistic-regression fusion: p = sigmoid(w . (clip(x) - mean) / scale + b).

    Features are clipped to the range seen in training (``low``, ``high``) before scoring, so a
    record unlike anything in training (say a 2,000-character part where training turns had at most
    a few hundred) cannot ride one feature far outside what the weights were fitted on.

    Attributes:
        weights: (F,) float64, one per name in ``feature_names``.
        bias: intercept.
        mean, scale: (F,) standardisation fitted on the training features.
        low, high: (F,) training range of each feature (1st and 99th percentile).
        feature_names: must equal :data:`FEATURE_NAMES` to be used.
        trained_on: description of the training data (provenance).
    """

    weights: FloatArray
    bias: float
    mean: FloatArray
    scale: FloatArray
    low: FloatArray
    high: FloatArray
    feature_names: tuple[str, ...] = FEATURE_NAMES
    trained_on: str = ""

    def score(self, features: FloatArray) -> FloatArray:
        """(n, F) features -> (n,) probabilities in [0, 1] (higher = more relevant)."""
        if features.shape[1] != len(self.weights):
            raise InvalidInput(f"features: {features.shape[1]} columns, model expects {len(self.weights)}")
        clipped = np.clip(features, self.low, self.high)
        z = ((clipped - self.mean) / self.scale) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))

    def to_json(self) -> str:
        """Serialise to JSON (weights as lists)."""
        return json.dumps(
            {
                "feature_names": list(self.feature_names),
                "weights": self.weights.tolist(),
                "bias": self.bias,
                "mean": self.mean.tolist(),
                "scale": self.scale.tolist(),
                "low": self.low.tolist(),
                "high": self.high.tolist(),
                "trained_on": self.trained_on,
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> LinearFusion:
        """Parse :meth:`to_json` output.

        Raises:
            InvalidInput: malformed JSON or feature names that differ from :data:`FEATURE_NAMES`.
        """
        try:
            raw = json.loads(text)
            names = tuple(raw["feature_names"])
            model = cls(
                weights=np.asarray(raw["weights"], dtype=np.float64),
                bias=float(raw["bias"]),
                mean=np.asarray(raw["mean"], dtype=np.float64),
                scale=np.asarray(raw["scale"], dtype=np.float64),
                low=np.asarray(raw["low"], dtype=np.float64),
                high=np.asarray(raw["high"], dtype=np.float64),
                feature_names=names,
                trained_on=str(raw.get("trained_on", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"fusion model: malformed JSON ({exc})") from exc
        if names != FEATURE_NAMES:
            raise InvalidInput(f"fusion model: features {names} differ from this version's {FEATURE_NAMES}")
        return model

    @classmethod
    def load(cls, path: str | Path | None = None) -> LinearFusion:
        """Load a model from ``path``, or the one shipped with the package when None."""
        if path is None:
            text = resources.files("retain").joinpath("models/fusion.json").read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        return cls.from_json(text)


def train_fusion(
    features: Sequence[FloatArray], labels: Sequence[npt.NDArray[np.bool_]], *, c: float = 1.0, trained_on: str = ""
) -> LinearFusion:
    """Fit the learned fusion: L2-regularised logistic regression on standardised features.

    Args:
        features: one (n_q, F) float64 matrix per query (its candidate pool).
        labels: one (n_q,) bool vector per query, True for evidence candidates.
        c: inverse regularisation strength (scikit-learn's ``C``).
        trained_on: provenance string stored in the model.

    Raises:
        InvalidInput: no positive or no negative label at all.
    """

    x = np.concatenate(list(features)) if features else np.zeros((0, len(FEATURE_NAMES)))
    y = np.concatenate(list(labels)).astype(bool) if labels else np.zeros(0, dtype=bool)
    if y.all() or not y.any():
        raise InvalidInput("train_fusion: need both relevant and non-relevant candidates")
    fit = fit_clipped_logistic(x, y, c=c)
    return LinearFusion(
        weights=fit.weights,
        bias=fit.bias,
        mean=fit.mean,
        scale=fit.scale,
        low=fit.low,
        high=fit.high,
        trained_on=trained_on,
    )

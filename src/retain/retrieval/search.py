"""The search path over a :class:`~retain.core.Core`: query -> pool -> fusion -> state scorer -> hits.

:func:`search` validates the request (:func:`check_request`), gathers the candidate pool
(:func:`retain.retrieval.pool.candidates`, plus the records a state brings:
:func:`~retain.retrieval.pool.state_pool`), scores it by content fusion (:func:`fuse`: the learned
fusion for hybrid search, else RRF), adds the time boost (:func:`retain.text.temporal.time_boost`),
re-ranks by agent state (:mod:`retain.state.scorer`) and turns the scores into hits
(:func:`~retain.retrieval.pool.ranked_hits`); episodes in event order, graph expansion and windows
follow when asked. ``Memory.search`` delegates here, as do context packing and ``forget``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.ingest.draft import check_text
from retain.record import MemoryType, Tier, caller_time, parse_tier, parse_type, utc, utcnow, validate_namespace
from retain.retrieval.calibration import relevance
from retain.retrieval.fusion import PRESETS, Fusion, Hit, LinearFusion, SearchConfig, SearchMode, SearchOrder
from retain.retrieval.graph import check_expand, expand_hits
from retain.retrieval.pool import Pool, candidates, ranked_hits, sam_inputs, state_pool
from retain.safety.observe import annotate, observed, searched
from retain.state.agent import AgentState, EncodedState
from retain.state.evidence import demote_stale, stale_rows
from retain.store import HOT_TIERS, RecordFilter
from retain.store.where import parse_where
from retain.text.lexical import check_query, is_terse
from retain.text.temporal import time_boost

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["DEFAULT_REQUEST", "SearchRequest", "by_time", "check_allow_raw", "fuse", "search", "search_config"]


@dataclass(frozen=True, slots=True)
class _Request:
    """A validated search: the query searched (the topic of an ordering question), ``k`` searched, the
    ``k`` and question asked, the filter, config, state, and the switches."""

    query: str
    k: int
    asked_k: int
    ordering_query: str
    flt: RecordFilter
    cfg: SearchConfig
    state: AgentState
    use_state: bool
    by_time: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequest:
    """The options of a :func:`search` (the keyword parameters of ``Memory.search``, same defaults)."""

    k: int = 10
    """Number of hits (>= 1)."""
    config: SearchConfig | str = "default"
    """A :class:`SearchConfig` or a preset name ("default", "rrf", "lexical", "dense", "diverse")."""
    types: Sequence[MemoryType | str] | None = None
    """Metadata filter on the memory type; None = every type."""
    tiers: Sequence[Tier | str] | None = None
    """Metadata filter on the tier; None = the hot memory (core + dynamic); pass ``["archive"]`` or
    all three to search the archive."""
    start: datetime | str | None = None
    """Start of the event-time range [start, end), UTC."""
    end: datetime | str | None = None
    """End of the event-time range [start, end), UTC."""
    include_superseded: bool = False
    """Also return superseded versions (history)."""
    where: Mapping[str, Any] | None = None
    """Metadata conditions every hit meets, applied inside the store query in every preset
    (:mod:`retain.store.where`): ``{"topic": "travel", "n": {"$gte": 3}}``; operators ``$eq``, ``$ne``,
    ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``. None = no condition."""
    threshold: float | None = None
    """Overrides the config's threshold on the calibrated relevance (``Hit.relevance``, [0, 1], the
    same scale in every preset, :mod:`retain.retrieval.calibration`); None = keep all.
    :data:`~retain.retrieval.calibration.NOTHING_RELEVANT` (0.05) returns [] for a query about
    nothing stored, at a cost in recall (``docs/benchmarks.md#calibrated-relevance``)."""
    mmr_lambda: float | None = None
    """Overrides the config's MMR trade-off."""
    state: AgentState | Mapping[str, Any] | None = None
    """The agent's task state (:class:`~retain.state.agent.AgentState` or a mapping in the scenario
    format). With a non-empty state the ranking is state-adaptive (:mod:`retain.state.scorer`): score =
    alpha * state_score + (1 - alpha) * content_score, alpha larger for terse queries; the pool also
    takes the records nearest to the state, the core tier and the newest records. Breakdowns then add
    ``content``, ``state``, ``prior``, ``importance``, ``alpha`` and ``phase_known``. A candidate stating
    another value for a slot the state's ``constraints`` hold is ranked below the one stating the
    current value and its hit is marked ``stale`` (:mod:`retain.state.evidence`)."""
    allow_raw: bool = False
    """Return records as stored. Default False: every hit's record is a redacted copy
    (:func:`retain.safety.redaction.redact_record`): secrets and personal data in its content and
    metadata become typed placeholders (``"[EMAIL]"``), and ``metadata["redacted"]`` lists the kinds
    withheld. Ranking always uses the stored text; redaction changes only what is returned, never what
    is stored."""
    time_aware: bool = True
    """When the query names a time range ("in May 2023", "last year"), add
    :func:`retain.text.temporal.time_boost` (0.1) to the learned-fusion score of records dated in it,
    by event time or a resolved time expression; shown as ``scores["time"]``. Only with the learned
    fusion (the "default" preset), whose scores are probabilities the weight was set on."""
    now: datetime | str | None = None
    """The time of asking (UTC) that relative query ranges ("last year") are read against; default
    the current time."""
    expand: int = 0
    """Graph expansion (:func:`retain.retrieval.graph.expand_hits`): the top ``expand`` hits pull in
    their one-hop neighbours of this namespace, score = parent score * decay (``config.graph.decay``,
    default 0.5) * edge weight, marked ``Hit.via_edge``; 0 (default) = off."""
    window: int = 0
    """Give each hit its neighbouring turns (same segment, ``seq`` within ``window``, any tier) as one
    context unit in ``Hit.window``, stream order (:func:`retain.sequence.segments.attach_windows`); 0
    (default) = none."""
    order: SearchOrder | str = SearchOrder.RANK
    """"rank" (default): best first. "time": for ordering questions ("list the order in which I
    brought up ..."): the topic of the query is searched over a wide pool, the best candidates of the
    pool are spread over sessions (one episode per session per round), and the ``k`` picked are
    returned in event order (:mod:`retain.sequence.episodes`); ``rank`` is then the position in time.
    "auto": "time" when :func:`retain.sequence.episodes.asks_order` reads the query as asking for an
    order, else "rank"."""


DEFAULT_REQUEST = SearchRequest()
"""A search with every option at its default."""


@observed("search", args=("namespace",), result=searched)
def search(core: Core, query: str, *, namespace: str, request: SearchRequest = DEFAULT_REQUEST) -> list[Hit]:
    """Hybrid search of ``core``'s store, one namespace; returns up to ``request.k`` hits, best first (or in
    event order with ``order="time"``).

    Args:
        query: free text, any language, at most :data:`~retain.text.lexical.MAX_QUERY_CHARS`
            (10,000) characters. Empty or whitespace-only returns [].
        request: the options (:class:`SearchRequest`, where each is described).

    Returns: list of :class:`~retain.retrieval.fusion.Hit`, scores higher = more relevant. Canary
    records (:mod:`retain.safety.canary`) are never returned.

    Raises:
        InvalidInput: bad namespace; query not a string or over ``MAX_QUERY_CHARS`` characters; k < 1;
            unknown preset, type, tier or order; ``allow_raw`` not a bool; ``expand`` not an int
            >= 0, or ``expand`` with ``order="time"``; a bad ``where`` condition.
    """
    annotate(k=request.k)
    r = request
    k, threshold, allow_raw, expand, window = r.k, r.threshold, r.allow_raw, r.expand, r.window
    validate_namespace(namespace)
    check_query(query)
    check_text(query, "query")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k < 2**62:
        raise InvalidInput("k: must be an int >= 1 (below 2**62)")
    if threshold is not None and (not isinstance(threshold, int | float) or threshold != threshold):
        raise InvalidInput(f"threshold: must be a number, got {threshold!r}")
    cfg = search_config(r.config, threshold, r.mmr_lambda)
    check_allow_raw(allow_raw)
    check_expand(expand)
    if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window <= 50:
        raise InvalidInput(f"window: must be an int in [0, 50], got {window!r}")
    ordered = by_time(r.order, query)
    if ordered and expand:
        raise InvalidInput("expand: graph expansion adds hits out of event order; not with order='time'")
    zone = core.config.naive_timezone
    now = caller_time(r.now, field_name="now", naive_zone=zone)  # refused up front, not only when needed
    if not query.strip():
        return []
    flt = replace(_filter(r.types, r.tiers, r.start, r.end, r.include_superseded, zone), where=parse_where(r.where))
    run = _request(core, query, k, flt, cfg, AgentState.from_dict(r.state), ordered)
    hits = _rank(core, namespace, run, allow_raw=allow_raw, time_aware=r.time_aware, now=now)
    if run.by_time:
        from retain.sequence.episodes import episodes_in_time

        hits = episodes_in_time(hits, run.ordering_query, run.asked_k)
    if expand:
        decay = core.config.graph.decay
        hits = expand_hits(core.store, namespace, hits, expand=expand, k=k, flt=flt, decay=decay, allow_raw=allow_raw)
    if window:
        from retain.sequence.segments import attach_windows

        hits = attach_windows(core.store, namespace, hits, window, allow_raw=allow_raw)
    return _with_conflicts(core, namespace, hits)


def _with_conflicts(core: Core, namespace: str, hits: list[Hit]) -> list[Hit]:
    """``hits`` with ``conflicts_with`` set on each hit in an open conflict (one store read)."""
    from retain.safety.conflicts import conflicts_of

    found = conflicts_of(core.store, namespace, [h.record.id for h in hits])
    return [replace(h, conflicts_with=found[h.record.id]) if h.record.id in found else h for h in hits]


def _filter(
    types: Sequence[MemoryType | str] | str | None,
    tiers: Sequence[Tier | str] | str | None,
    start: datetime | str | None,
    end: datetime | str | None,
    include_superseded: bool,
    zone: str = "UTC",
) -> RecordFilter:
    """The record filter of a search (``tiers`` default: the hot tiers). Raises InvalidInput for an
    unknown type or tier or a bad time."""
    if isinstance(types, str):
        types = [types]
    if isinstance(tiers, str):
        tiers = [tiers]
    for name, value in (("types", types), ("tiers", tiers)):
        if value is not None and (not isinstance(value, Sequence | set | frozenset) or isinstance(value, bytes)):
            raise InvalidInput(f"{name}: a list of names (or one name, or None), got {type(value).__name__}")
    return RecordFilter(
        types=None if types is None else tuple(parse_type(t) for t in types),
        tiers=HOT_TIERS if tiers is None else tuple(parse_tier(t) for t in tiers),
        start=caller_time(start, field_name="start", naive_zone=zone),
        end=caller_time(end, field_name="end", naive_zone=zone, day_end=True),
        include_superseded=include_superseded,
        live_at=utcnow(),  # expired records are never current hits, swept or not
    )


def _request(
    core: Core, query: str, k: int, flt: RecordFilter, cfg: SearchConfig, st: AgentState, ordered: bool
) -> _Request:
    """The search to run. Raises InvalidInput when a state is given and the state scorer's
    dimension is not the encoder's."""
    scorer = core.state_scorer if not st.empty else None
    use_state = scorer is not None
    if scorer is not None and scorer.dim != core.encoder.dim:
        raise InvalidInput(
            f"state: the state scorer works on {scorer.dim}-dim embeddings, this Memory's "
            f"encoder ({core.encoder.name}) gives {core.encoder.dim}; pass Memory(state_scorer=...) fitted "
            "for this encoder (retain.state.training.train_state_scorer), or state_scorer=False for content search"
        )
    asked_k, ordering_query = k, query
    if ordered:  # the topic over a wide pool; episodes are picked later (retain.sequence.episodes)
        from retain.sequence.episodes import EPISODE_POOL, ordering_topic

        query, k = ordering_topic(query), max(k, EPISODE_POOL)
    return _Request(query, k, asked_k, ordering_query, flt, cfg, st, use_state, ordered)


def _encode(core: Core, request: _Request) -> tuple[EncodedState | None, npt.NDArray[np.float32] | None]:
    """The encoded state (None without one) and, when the state brought texts to embed, the query
    vector embedded in the same batch (else None: the pool embeds the query)."""
    if not request.use_state:
        return None, None
    query_vector = None
    if request.cfg.mode is not SearchMode.LEXICAL and core.store.supports_vector:
        # the state's parts not embedded yet go in the query's forward pass: one batch costs less than
        # two encoder calls
        missing = core.state_encoder.missing(request.state)
        vectors = np.asarray(core.encoder.encode([request.query, *missing]))
        if vectors.shape != (1 + len(missing), core.encoder.dim):
            raise InvalidInput(
                f"encoder {core.encoder.name}: returned shape {vectors.shape} for the query and "
                f"{len(missing)} state texts, expected ({1 + len(missing)}, {core.encoder.dim})"
            )
        core.state_encoder.add_vectors(missing, vectors[1:])
        query_vector = vectors[0]
    return core.state_encoder.encode(request.state), query_vector


def _rank(
    core: Core, namespace: str, request: _Request, *, allow_raw: bool, time_aware: bool, now: datetime | str | None
) -> list[Hit]:
    """Gather, score and rank the pool of ``request`` into hits."""
    encoded, query_vector = _encode(core, request)
    cfg, flt, query = request.cfg, request.flt, request.query
    extra = state_pool(core.store, namespace, encoded, flt, core.config.retrieval) if encoded is not None else []
    pool = candidates(core.store, core.encoder, query, namespace, flt, cfg, extra=extra, query_vector=query_vector)
    annotate(k=request.k, n_candidates=len(pool.records))
    if not pool.records:
        return []
    scores = fuse(core.fusion, pool, cfg)
    asked = utc(now, field_name="now") or utcnow()
    learned = cfg.fusion is Fusion.LEARNED and cfg.mode is SearchMode.HYBRID and pool.query_vector is not None
    knobs = core.config.retrieval
    boost = (
        time_boost(pool.records, query, asked, when_weight=knobs.when_weight, range_weight=knobs.range_weight)
        if time_aware and learned
        else None
    )
    if boost is not None:
        scores = scores + boost
    sam_parts: dict[str, npt.NDArray[np.float64]] = {}
    scorer = core.state_scorer
    if encoded is not None and scorer is not None:
        cands, content, n_terms = sam_inputs(core.store, namespace, pool, scores, cfg, core.candidate_memo)
        scores, sam_parts, _ = scorer.score(
            encoded, request.state.phase, cands, content, query_terms=n_terms, terse=is_terse(query)
        )
        stale = stale_rows(request.state.constraints, pool.records)
        if stale:
            scores, sam_parts["stale"] = demote_stale(scores, stale)
    rel = _relevance(core, pool, cfg)
    return ranked_hits(pool, scores, cfg, request.k, boost=boost, parts=sam_parts, allow_raw=allow_raw, relevance=rel)


def _relevance(core: Core, pool: Pool, cfg: SearchConfig) -> npt.NDArray[np.float64]:
    """The calibrated relevance of the pool ((n,) in [0, 1]; :mod:`retain.retrieval.calibration`), the
    last step of every preset. The lexical preset has no query embedding; the query is embedded here
    (one encoder call) so that its relevance is the same number the other presets give."""
    qvec = pool.query_vector
    if qvec is None and cfg.mode is SearchMode.LEXICAL and core.store.supports_vector:
        qvec = np.asarray(core.encoder.encode([pool.query]))[0]
    return relevance(pool.records, pool.terms, qvec, core.encoder.name)


def fuse(fusion: LinearFusion, pool: Pool, cfg: SearchConfig) -> npt.NDArray[np.float64]:
    """Content scores of ``pool`` ((n,) float64, higher = more relevant): the learned ``fusion``
    (probabilities) for hybrid search with a query vector, else the pool's reciprocal rank fusion."""
    if cfg.fusion is Fusion.LEARNED and cfg.mode is SearchMode.HYBRID and pool.query_vector is not None:
        return fusion.score(pool.features())
    return pool.rrf


def search_config(config: SearchConfig | str, threshold: float | None, mmr_lambda: float | None) -> SearchConfig:
    """``config`` (a :class:`SearchConfig` or a preset name) with ``threshold`` / ``mmr_lambda`` set
    when given.

    Raises:
        InvalidInput: not a SearchConfig or a str, or an unknown preset name.
    """
    if not isinstance(config, SearchConfig | str):
        raise InvalidInput(f"config: a SearchConfig or a preset name, got {type(config).__name__}")
    if isinstance(config, str):
        if config not in PRESETS:
            raise InvalidInput(f"config: unknown preset {config!r}; one of {sorted(PRESETS)}")
        config = PRESETS[config]
    for name, value in (("threshold", threshold), ("mmr_lambda", mmr_lambda)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        ):
            raise InvalidInput(f"{name}: must be a finite number or None, got {type(value).__name__}")
    changes: dict[str, Any] = {}
    if threshold is not None:
        changes["threshold"] = threshold
    if mmr_lambda is not None:
        changes["mmr_lambda"] = mmr_lambda
    if not changes:
        return config
    return replace(config, **changes)


def by_time(order: SearchOrder | str, query: str) -> bool:
    """Whether ``search(order=...)`` returns episodes in event order for ``query``.

    Raises:
        InvalidInput: ``order`` is not one of :class:`~retain.retrieval.fusion.SearchOrder`.
    """
    if not isinstance(order, SearchOrder | str) or order not in tuple(SearchOrder):
        raise InvalidInput(f"order: one of {[o.value for o in SearchOrder]}, got {order!r}")
    order = SearchOrder(order)
    if order is SearchOrder.AUTO:
        from retain.sequence.episodes import asks_order

        return asks_order(query)
    return order is SearchOrder.TIME


def check_allow_raw(allow_raw: object) -> None:
    """Raises InvalidInput unless ``allow_raw`` is a bool."""
    if not isinstance(allow_raw, bool):
        raise InvalidInput(f"allow_raw: must be a bool, got {allow_raw!r}")

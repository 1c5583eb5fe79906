"""The candidate pool of one search: lexical, dense, state and neighbour hits, and the features the
content fusion scores them by.

:func:`candidates` gathers the pool (:class:`Pool`): the lexical and dense channels' hits, the ids a
state brings (:func:`state_pool`), the records a relation query finds, and the neighbouring turns of the
channel hits; canaries and index summaries never enter it. :meth:`Pool.features` is what
:class:`~retain.retrieval.fusion.LinearFusion` scores; :func:`sam_inputs` is what the state scorer
(:mod:`retain.state.scorer`) reads of the same pool. :func:`ranked_hits` turns the pool and the scores
:meth:`~retain.memory.Memory.search` gives it into hits (threshold, MMR, each hit's score breakdown).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from retain.config import RetrievalConfig
from retain.encoders.basis import Encoder
from retain.numeric.kernels import blocked_product
from retain.record import MemoryRecord, Tier, search_text, speaker_of
from retain.retrieval.fusion import (
    Fusion,
    Hit,
    SearchConfig,
    SearchMode,
    fusion_features,
    mmr,
    proper_nouns,
    relation_query,
    rrf,
)
from retain.safety.canary import drop_canaries, is_canary
from retain.safety.redaction import redact_record
from retain.sequence.segments import drop_index_summaries, is_index_summary
from retain.state.agent import EncodedState
from retain.state.candidates import CandidateMemo, Candidates, candidates_from_records
from retain.store import RecordFilter, ScoredId, Store
from retain.text.lexical import index_terms, query_terms

__all__ = [
    "Pool",
    "candidates",
    "ranked_hits",
    "sam_inputs",
    "state_pool",
]

_WORD_RE = re.compile(r"\w+", re.UNICODE)


@dataclass
class Pool:
    """Candidate pool of one search, with per-candidate channel scores (one entry per record, in
    pool order).

    ``bm25`` and ``dense`` are the channel scores ((n,) float64, 0 when a channel missed the record;
    higher = more relevant), ``bm25_rank`` / ``dense_rank`` the 0-based rank in each channel (the
    search depth when missed), ``rrf`` their reciprocal rank fusion; ``matrix`` the records'
    embeddings ((n, d) float32, zero rows for none), ``vectors`` the same rows as a list;
    ``relation_dense`` the dot product with the relation query's embedding ((n,) float64) when there
    is one; ``seen`` the (segment, seq) stream positions this search read.
    """

    records: list[MemoryRecord]
    via_neighbor: list[bool]
    bm25: npt.NDArray[np.float64]
    bm25_rank: npt.NDArray[np.float64]
    dense: npt.NDArray[np.float64]
    dense_rank: npt.NDArray[np.float64]
    rrf: npt.NDArray[np.float64]
    vectors: list[npt.NDArray[np.float32]]
    matrix: npt.NDArray[np.float32]
    query_vector: npt.NDArray[np.float32] | None
    terms: list[str]
    query: str
    relation_dense: npt.NDArray[np.float64] | None = None
    seen: frozenset[tuple[str | None, int]] = frozenset()

    @classmethod
    def build(
        cls,
        *,
        records: list[MemoryRecord],
        via_neighbor: list[bool],
        lexical: list[ScoredId],
        dense_hits: list[ScoredId],
        query_vector: npt.NDArray[np.float32] | None,
        terms: list[str],
        query: str,
        depth: int,
        rrf_k: int,
        relation_vector: npt.NDArray[np.float32] | None = None,
        seen: set[tuple[str | None, int]] | None = None,
    ) -> Pool:
        n = len(records)
        lex_score = {h.id: h.score for h in lexical}
        lex_rank = {h.id: i for i, h in enumerate(lexical)}
        dense_rank = {h.id: i for i, h in enumerate(dense_hits)}
        fused = rrf([[h.id for h in lexical], [h.id for h in dense_hits]], k=rrf_k)
        dim = 0 if query_vector is None else len(query_vector)
        vectors = [r.embedding if r.embedding is not None else np.zeros(dim, np.float32) for r in records]
        matrix = np.stack(vectors) if n and dim else np.zeros((n, dim), np.float32)  # (n, d) float32
        if query_vector is not None and n:
            dense = blocked_product(matrix.astype(np.float64), query_vector.astype(np.float64)[:, None])[:, 0]
        else:
            dense = np.zeros(n)
        relation_dense = None
        if relation_vector is not None and n:
            relation_dense = np.stack(vectors).astype(np.float64) @ relation_vector.astype(np.float64)
        return cls(
            records=records,
            via_neighbor=via_neighbor,
            bm25=np.array([lex_score.get(r.id, 0.0) for r in records], dtype=np.float64),
            bm25_rank=np.array([lex_rank.get(r.id, depth) for r in records], dtype=np.float64),
            dense=dense,
            dense_rank=np.array([dense_rank.get(r.id, depth) for r in records], dtype=np.float64),
            rrf=np.array([fused.get(r.id, 0.0) for r in records], dtype=np.float64),
            vectors=vectors,
            matrix=matrix,
            query_vector=query_vector,
            terms=terms,
            query=query,
            relation_dense=relation_dense,
            seen=frozenset(seen or ()),
        )

    def features(self) -> npt.NDArray[np.float64]:
        """Feature matrix for :class:`LinearFusion`, (n, F) float64."""
        records = self.records
        position = {(r.segment, r.seq): i for i, r in enumerate(records) if r.seq is not None}
        prev_index = np.array([position.get((r.segment, r.seq - 1), -1) if r.seq is not None else -1 for r in records])
        next_index = np.array([position.get((r.segment, r.seq + 1), -1) if r.seq is not None else -1 for r in records])
        first_names = [_first_name(r) for r in records]
        named = _named_speakers(self.query, first_names)
        mentions_speaker = np.array([f in named for f in first_names])
        mentions_other = np.array([bool(named - {f}) for f in first_names])
        term_set = set(self.terms)
        coverage = np.zeros(len(records))
        for i in np.flatnonzero(self.bm25 > 0):  # only lexical matches can cover query terms
            coverage[i] = len(term_set & set(index_terms(search_text(records[i])))) / max(1, len(term_set))
        length = [r.token_count or len(_WORD_RE.findall(r.content)) for r in records]
        earlier = np.array([self._earlier_turns(r) for r in records], dtype=np.intp)
        return fusion_features(
            bm25=self.bm25,
            bm25_rank=self.bm25_rank,
            dense=self.dense,
            dense_rank=self.dense_rank,
            prev_index=prev_index.astype(np.intp),
            next_index=next_index.astype(np.intp),
            segment=[r.segment for r in records],
            mentions_speaker=mentions_speaker,
            mentions_other=mentions_other,
            coverage=coverage,
            length_terms=np.array(length, dtype=np.float64),
            is_question=np.array([r.content.rstrip().endswith(("?", "？")) for r in records]),
            n_query_terms=len(term_set),
            earlier_turns=earlier,
            proper_noun_counts=np.array([proper_nouns(r.content) for r in records], dtype=np.float64),
            relation_dense=self.relation_dense,
        )

    def _earlier_turns(self, record: MemoryRecord) -> int:
        """Records of ``record``'s segment at the 2 stream positions before it that this search saw
        (0..2; stops at the first gap), or -1 when the record has no ``seq``."""
        if record.seq is None:
            return -1
        count = 0
        while count < 2 and (record.segment, record.seq - count - 1) in self.seen:
            count += 1
        return count


def candidates(
    store: Store,
    encoder: Encoder,
    query: str,
    namespace: str,
    flt: RecordFilter,
    cfg: SearchConfig,
    extra: Sequence[str] = (),
    query_vector: npt.NDArray[np.float32] | None = None,
) -> Pool:
    """The search pool of ``query`` in ``namespace``: lexical and dense hits (``cfg.candidates`` each,
    within ``flt``), ``extra`` ids, the hits of the relation query, neighbours; ``query_vector`` is the
    query's embedding by ``encoder`` when the caller already has it ((d,) float32). Canaries and index
    summaries are left out."""
    terms = query_terms(query)
    lexical: list[ScoredId] = []
    dense_hits: list[ScoredId] = []
    qvec: npt.NDArray[np.float32] | None = None
    relation_vector: npt.NDArray[np.float32] | None = None
    learned = cfg.fusion is Fusion.LEARNED and cfg.mode is SearchMode.HYBRID and store.supports_vector
    by_id: dict[str, MemoryRecord] = {}
    if cfg.mode is not SearchMode.DENSE and store.supports_lexical:
        lexical = store.search_lexical(namespace, terms, flt, cfg.candidates)
    relation = None
    if learned and lexical:  # the speakers the query names, read off the lexical hits (speakers are indexed)
        by_id = {r.id: r for r in store.get(namespace, [h.id for h in lexical])}
        relation = _relation_text(query, by_id.values())
    if cfg.mode is not SearchMode.LEXICAL and store.supports_vector:
        if query_vector is None:
            vectors = encoder.encode([query] if relation is None else [query, relation])  # one pass
            qvec = vectors[0]
            relation_vector = None if relation is None else vectors[1]
        else:
            qvec = query_vector
            relation_vector = None if relation is None else encoder.encode([relation])[0]
        dense_hits = store.search_vector(namespace, qvec, flt, cfg.candidates)
    learned = learned and qvec is not None
    ids = list(dict.fromkeys([h.id for h in lexical] + [h.id for h in dense_hits] + list(extra)))
    by_id |= {r.id: r for r in store.get(namespace, [i for i in ids if i not in by_id])}
    records = [by_id[i] for i in ids if i in by_id]
    relation_ids: list[str] = []
    if relation_vector is not None and cfg.relation_candidates:
        have = set(ids)
        found = store.search_vector(namespace, relation_vector, flt, cfg.relation_candidates)
        relation_ids = [h.id for h in found if h.id not in have]
        records.extend(store.get(namespace, relation_ids))
    if any(is_canary(r) for r in records):  # canaries never surface in results (retain.safety.canary)
        records, lexical, dense_hits = drop_canaries(records, lexical, dense_hits)
    if any(is_index_summary(r) for r in records):  # summaries of uncompressed segments (retain.sequence.segments)
        records, lexical, dense_hits = drop_index_summaries(records, lexical, dense_hits)
    seen = {(r.segment, r.seq) for r in records if r.seq is not None}
    via_neighbor = [False] * len(records)
    if records and (cfg.neighbors or learned):
        # channel hits bring their neighbours; a state's extras bring none
        content_ids = {h.id for h in lexical} | {h.id for h in dense_hits} | set(relation_ids)
        neighbours = _neighbours(store, namespace, flt, records, content_ids, seen, near=cfg.neighbors, before=learned)
        records.extend(neighbours)
        via_neighbor.extend([True] * len(neighbours))
    return Pool.build(
        records=records,
        via_neighbor=via_neighbor,
        lexical=lexical,
        dense_hits=dense_hits,
        query_vector=qvec,
        relation_vector=relation_vector,
        seen=seen,
        terms=terms,
        query=query,
        depth=cfg.candidates,
        rrf_k=cfg.rrf_k,
    )


def _neighbours(
    store: Store,
    namespace: str,
    flt: RecordFilter,
    records: Sequence[MemoryRecord],
    content_ids: set[str],
    seen: set[tuple[str | None, int]],
    *,
    near: bool,
    before: bool,
) -> list[MemoryRecord]:
    """The turns next to the channel hits (``content_ids``; seq +- 1, when ``near``) not in the pool
    yet. With ``before``, the up to 3 turns before each channel hit are read too (into ``seen``,
    updated in place: they tell how far into its segment a hit sits, the turn_position feature); a
    state's extras are not content matches, so their content score reads only the turns this search
    saw anyway (a lookup per extra saved)."""
    context = (
        {
            (r.segment, r.seq + d)
            for r in records
            if r.seq is not None and r.id in content_ids
            for d in (-1, 1)
            if r.seq + d >= 0
        }
        if near
        else set()
    )
    earlier = (
        {
            (r.segment, r.seq - d)
            for r in records
            if r.seq is not None and r.id in content_ids
            for d in (1, 2, 3)
            if r.seq - d >= 0
        }
        if before
        else set()
    )
    seqs = {seq for _, seq in (context | earlier) - seen}
    if not seqs:
        return []
    known = {r.id for r in records}
    fetched = [r for r in store.list_records(namespace, _with_seqs(flt, seqs)) if r.id not in known]
    seen.update((r.segment, r.seq) for r in fetched if r.seq is not None)
    return [r for r in fetched if (r.segment, r.seq) in context]


def state_pool(
    store: Store, namespace: str, encoded: EncodedState, flt: RecordFilter, settings: RetrievalConfig
) -> list[str]:
    """Ids the state brings into the pool: the records nearest to each of its parts
    (``settings.state_parts``, ``settings.state_pool`` per part); the core tier (mandatory records,
    at most ``settings.core_pool``, newest first); the ``settings.recent_pool`` newest records."""
    parts = [v for v in (getattr(encoded, name) for name in settings.state_parts) if v.any()]
    ids: list[str] = []
    if parts and settings.state_pool:  # one scan of the stored embeddings for all parts
        for hits in store.search_vectors(namespace, np.stack(parts), flt, settings.state_pool):
            ids += [h.id for h in hits]
    core = replace(flt, tiers=tuple(t for t in (flt.tiers or tuple(Tier)) if t is Tier.CORE))
    if core.tiers and settings.core_pool:
        ids += store.list_ids(namespace, core, limit=settings.core_pool, order="recent")
    if settings.recent_pool:
        ids += store.list_ids(namespace, flt, limit=settings.recent_pool, order="recent")
    return ids


def sam_inputs(
    store: Store,
    namespace: str,
    pool: Pool,
    scores: npt.NDArray[np.float64],
    cfg: SearchConfig,
    memo: CandidateMemo | None = None,
) -> tuple[Candidates, npt.NDArray[np.float64], int]:
    """(candidates, content scores in [0, 1], distinct query terms) for the state scorer, from the
    pool and its content fusion ``scores`` ((n,) float64, higher = more relevant); ``memo`` keeps each
    record's candidate inputs between searches (:class:`~retain.state.candidates.CandidateMemo`)."""
    raw = scores if cfg.fusion is Fusion.LEARNED else scores / max(float(scores.max()), 1e-12)
    content = np.clip(raw, 0.0, 1.0)  # the time boost may lift a fused score past 1
    newest_id = store.list_ids(namespace, RecordFilter(tiers=None), limit=1, order="recent")
    newest = store.get(namespace, newest_id)
    matrix = pool.matrix if pool.query_vector is not None and len(pool.matrix) == len(pool.records) else None
    cands = candidates_from_records(
        pool.records,
        newest_position=newest[0].seq if newest and newest[0].seq is not None else None,
        newest_time=newest[0].event_time if newest else None,
        vectors=matrix,
        memo=memo,
    )
    return cands, content, len(set(pool.terms))


def ranked_hits(
    pool: Pool,
    scores: npt.NDArray[np.float64],
    cfg: SearchConfig,
    k: int,
    *,
    boost: npt.NDArray[np.float64] | None = None,
    parts: Mapping[str, npt.NDArray[np.float64]] | None = None,
    allow_raw: bool = False,
    relevance: npt.NDArray[np.float64] | None = None,
) -> list[Hit]:
    """The ``k`` best of the pool by its final ``scores`` ((n,) float64, higher = more relevant) as
    hits, best first: those whose calibrated ``relevance`` ((n,) float64 in [0, 1],
    :func:`retain.retrieval.calibration.relevance`; None = all 0) is below ``cfg.threshold``
    dropped, then, with ``cfg.mmr_lambda``, the best max(3k, 30) re-ranked by MMR. Each hit's
    ``scores`` break its score down: ``bm25``, ``dense``, ``rrf``, ``fused`` (the final score),
    ``relevance``, ``neighbor`` (1 when it joined as a neighbour of a hit), ``time`` (the non-zero
    time ``boost``) and the state scorer's ``parts``. Records are redacted copies
    (:func:`~retain.safety.redaction.redact_record`) unless ``allow_raw``.
    """
    sam_parts = parts or {}
    rel = np.zeros(len(scores)) if relevance is None else relevance
    ranking = np.argsort(-scores, kind="stable")
    if cfg.threshold is not None:
        ranking = ranking[rel[ranking] >= cfg.threshold]
    if cfg.mmr_lambda is not None and len(ranking) > 0:
        head = ranking[: max(3 * k, 30)]
        vectors = np.stack([pool.vectors[i] for i in head])
        picked = mmr(vectors, scores[head], lam=cfg.mmr_lambda, k=k)
        ranking = head[picked]
    hits = []
    for rank, i in enumerate(ranking[:k], start=1):
        breakdown = {
            "bm25": float(pool.bm25[i]),
            "dense": float(pool.dense[i]),
            "rrf": float(pool.rrf[i]),
            "fused": float(scores[i]),
            "relevance": float(rel[i]),
        }
        if pool.via_neighbor[i]:
            breakdown["neighbor"] = 1.0
        if boost is not None and boost[i]:
            breakdown["time"] = float(boost[i])
        breakdown.update({name: float(values[i]) for name, values in sam_parts.items()})
        record = pool.records[i] if allow_raw else redact_record(pool.records[i]).record
        hits.append(Hit(record=record, score=float(scores[i]), rank=rank, scores=breakdown, relevance=float(rel[i])))
    return hits


def _with_seqs(flt: RecordFilter, seqs: Iterable[int]) -> RecordFilter:
    return replace(flt, seqs=tuple(sorted(seqs)))


def _first_name(record: MemoryRecord) -> str:
    return _first_word(speaker_of(record))


@functools.lru_cache(maxsize=4096)
def _first_word(speaker: str) -> str:
    words = speaker.split()
    return words[0].lower() if words else ""


def _relation_text(query: str, records: Iterable[MemoryRecord]) -> str | None:
    """:func:`~retain.retrieval.fusion.relation_query` of ``query`` without the speakers of ``records`` it
    names, or None when it names none or nothing else is left."""
    named = _named_speakers(query, map(_first_name, records))
    relation = relation_query(query, named)
    return relation if named and relation and relation != query else None


def _named_speakers(query: str, first_names: Iterable[str]) -> set[str]:
    """The lower-case speaker first names (:func:`_first_name` of records) that ``query`` mentions."""
    query_words = {w.lower() for w in _WORD_RE.findall(query)}
    return {f for f in first_names if f and f in query_words}

"""The candidate pool of one search: lexical, dense, state and neighbour hits, and the features the
content fusion scores them by.

:func:`candidates` gathers the pool (:class:`Pool`): the lexical and dense channels' hits, the ids a
state brings (:func:`state_pool`), the records a relation query finds, and the neighbouring turns of the
channel hits; canaries and index summaries never enter it. :meth:`Pool.features` is what
:class:`~retain.retrieval.fusion.LinearFusion` scores; :func:`sam_inputs` is what the state scorer
(:mod:`retain.state.sam`) reads of the same pool. :func:`ranked_hits` turns the pool and the scores
:meth:`~retain.memory.Memory.search` gives it into hits (threshold, MMR, each hit's score breakdown).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import Encoder
from retain.errors import InvalidInput
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
from retain.state.sam import CandidateMemo, Candidates, candidates_from_records
from retain.store import RecordFilter, ScoredId, Store
from retain.text.lexical import index_terms, query_terms

__all__ = [
    "CORE_POOL",
    "MAX_POOL_SETTING",
    "RECENT_POOL",
    "STATE_PARTS",
    "STATE_POOL",
    "STATE_VECTOR_PARTS",
    "Pool",
    "candidates",
    "ranked_hits",
    "sam_inputs",
    "state_parts",
    "state_pool",
]

STATE_POOL = 20
"""Records a state brings into a search pool per state vector (:data:`STATE_PARTS`). This and
:data:`CORE_POOL`, :data:`RECENT_POOL` are read by every search with a state, which raises
:class:`~retain.errors.InvalidInput` unless each is an int from 0 to :data:`MAX_POOL_SETTING`."""
STATE_PARTS: tuple[str, ...] = ("whole",)
"""The parts of an encoded state (:class:`~retain.state.agent.EncodedState` fields) whose nearest records join
a state-adaptive search's pool; each costs a scan of the namespace's embeddings when the state is new.
The whole state alone (the mean of subgoal, result and constraints) does as well as whole, subgoal and
result among 7,000 distractors (``benchmarks/sam_scale.py``: recall@5 0.655 against 0.658, recall@10
0.826 against 0.823) at a third of the scan. Names from :data:`STATE_VECTOR_PARTS`; () = none. Read
by every search with a state, which raises :class:`~retain.errors.InvalidInput` for any other value."""
STATE_VECTOR_PARTS: tuple[str, ...] = ("whole", "goal", "result", "phase")
"""The names :data:`STATE_PARTS` may hold: the :class:`~retain.state.agent.EncodedState` fields that are one
(dim,) vector (``constraints`` and ``open`` are matrices, ``omitted`` and ``texts`` no vectors)."""
CORE_POOL = 50
"""Most core-tier records (newest first) a state-adaptive search considers."""
RECENT_POOL = 8
"""Newest records a state-adaptive search considers."""
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
    via_neighbor = [False] * len(records)
    seen = {(r.segment, r.seq) for r in records if r.seq is not None}
    if records and (cfg.neighbors or learned):
        # channel hits bring their neighbours; a state's extras bring none
        content_ids = {h.id for h in lexical} | {h.id for h in dense_hits} | set(relation_ids)
        context = (
            {
                (r.segment, r.seq + d)
                for r in records
                if r.seq is not None and r.id in content_ids
                for d in (-1, 1)
                if r.seq + d >= 0
            }
            if cfg.neighbors
            else set()
        )
        # the up to 3 records before each channel hit tell how far into its segment it sits (the
        # turn_position feature); a state's extras are not content matches, so their content score
        # reads only the turns this search saw anyway (a lookup per extra saved)
        before = (
            {
                (r.segment, r.seq - d)
                for r in records
                if r.seq is not None and r.id in content_ids
                for d in (1, 2, 3)
                if r.seq - d >= 0
            }
            if learned
            else set()
        )
        seqs = {seq for _, seq in (context | before) - seen}
        known = {r.id for r in records}
        if seqs:
            fetched = [r for r in store.list_records(namespace, _with_seqs(flt, seqs)) if r.id not in known]
            seen.update((r.segment, r.seq) for r in fetched if r.seq is not None)
            neighbours = [r for r in fetched if (r.segment, r.seq) in context]
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


def state_pool(
    store: Store, namespace: str, encoded: EncodedState, flt: RecordFilter, names: Sequence[str] | None = None
) -> list[str]:
    """Ids the state brings into the pool: the records nearest to each of its parts ``names``
    (default :data:`STATE_PARTS`, checked); the core tier (mandatory records); the newest records."""
    names = state_parts() if names is None else names
    per_part, core_limit, recent = (_pool_size(n, v) for n, v in _pool_settings())
    parts = [v for v in (getattr(encoded, name) for name in names) if v.any()]
    ids: list[str] = []
    if parts and per_part:  # one scan of the stored embeddings for all parts
        for hits in store.search_vectors(namespace, np.stack(parts), flt, per_part):
            ids += [h.id for h in hits]
    core = replace(flt, tiers=tuple(t for t in (flt.tiers or tuple(Tier)) if t is Tier.CORE))
    if core.tiers and core_limit:
        ids += store.list_ids(namespace, core, limit=core_limit, order="recent")
    if recent:
        ids += store.list_ids(namespace, flt, limit=recent, order="recent")
    return ids


MAX_POOL_SETTING = 1_000_000
"""Largest value :data:`STATE_POOL`, :data:`CORE_POOL` and :data:`RECENT_POOL` may be set to."""


def _pool_settings() -> tuple[tuple[str, object], ...]:
    return (("STATE_POOL", STATE_POOL), ("CORE_POOL", CORE_POOL), ("RECENT_POOL", RECENT_POOL))


def _pool_size(name: str, value: object) -> int:
    """A pool-size setting as it is now (a caller may have set it), checked like :func:`state_parts`.

    Raises:
        InvalidInput: not an int (bool, float, str, None included) or outside 0 .. :data:`MAX_POOL_SETTING`.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_POOL_SETTING:
        raise InvalidInput(
            f"retain.retrieval.pool.{name}: must be an int from 0 to {MAX_POOL_SETTING:,} (records), got {value!r}"
        )
    return value


def state_parts() -> tuple[str, ...]:
    """:data:`STATE_PARTS` as it is now (a caller may have set it), checked against
    :data:`STATE_VECTOR_PARTS`.

    Raises:
        InvalidInput: not a tuple or list, or a name that is not a single-vector state part.
    """
    parts = STATE_PARTS
    if not isinstance(parts, tuple | list):
        raise InvalidInput(f"retain.retrieval.pool.STATE_PARTS: must be a tuple of part names, got {parts!r}")
    for name in parts:
        if name not in STATE_VECTOR_PARTS:
            close = difflib.get_close_matches(str(name), STATE_VECTOR_PARTS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidInput(
                f"retain.retrieval.pool.STATE_PARTS: {name!r} is not one of {', '.join(STATE_VECTOR_PARTS)} "
                f"(the state parts that are one vector){hint}"
            )
    return tuple(parts)


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
    record's candidate inputs between searches (:class:`~retain.state.sam.CandidateMemo`)."""
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
) -> list[Hit]:
    """The ``k`` best of the pool by its final ``scores`` ((n,) float64, higher = more relevant) as
    hits, best first: those below ``cfg.threshold`` dropped, then, with ``cfg.mmr_lambda``, the best
    max(3k, 30) re-ranked by MMR. Each hit's ``scores`` break its score down: ``bm25``, ``dense``,
    ``rrf``, ``fused`` (the final score), ``neighbor`` (1 when it joined as a neighbour of a hit), ``time`` (the
    non-zero time ``boost``) and the state scorer's ``parts``. Records are redacted copies
    (:func:`~retain.safety.redaction.redact_record`) unless ``allow_raw``.
    """
    sam_parts = parts or {}
    ranking = np.argsort(-scores, kind="stable")
    if cfg.threshold is not None:
        ranking = ranking[scores[ranking] >= cfg.threshold]
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
        }
        if pool.via_neighbor[i]:
            breakdown["neighbor"] = 1.0
        if boost is not None and boost[i]:
            breakdown["time"] = float(boost[i])
        breakdown.update({name: float(values[i]) for name, values in sam_parts.items()})
        record = pool.records[i] if allow_raw else redact_record(pool.records[i]).record
        hits.append(Hit(record=record, score=float(scores[i]), rank=rank, scores=breakdown))
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

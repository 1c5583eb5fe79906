"""Sequential memory: segment (session) summaries, segment relevance, context windows, compression.

Every record keeps its stream position (``seq``) and its segment (``segment``, e.g. a session).
This module works on whole segments:

* **Summaries.** :func:`summarize_segment` is extractive and needs no LLM: centroid-based sentence
  selection over sentence embeddings (Radev, Jing, Styś & Tam 2004, "Centroid-based summarization
  of multiple documents" (MEAD); with embeddings, Rossiello, Basile & Semeraro 2017). The segment
  centroid is the mean of its records' embeddings; each sentence is scored by cosine to the
  centroid (higher = more central), the best are taken greedily while skipping near-duplicates
  (cosine >= ``REDUNDANCY``) and returned in stream order. A :class:`Summariser` (for instance an
  LLM, which must run off-network or wherever the caller decides) can replace it.
* **Summary records.** :func:`summarize` stores a summary as a record with
  ``metadata["kind"] == "segment_summary"``, ``segment`` = the segment, and the summarised turn
  ids in ``metadata["summary_of"]``. Until the segment is compressed the summary is an index entry,
  not a memory: it lives in the archive tier (never counted by the budget) and plain search leaves
  it out (:func:`drop_index_summaries`), so turn-level figures stay comparable.
* **Compression.** :func:`compress` puts the summary into hot memory (``metadata["compressed"]``)
  and moves the segment's hot turns to the archive (``metadata["compressed_into"]`` = the summary
  id; audited "archive" with reason "compressed into summary <id>"), so a budget counts the segment
  as one record. Mandatory turns (hard constraints, pinned) stay hot and are listed in
  ``metadata["kept"]``. Nothing is deleted.
* **Segment relevance** (hierarchical retrieval). :class:`SegmentIndex` holds one centroid per
  segment; :meth:`SegmentIndex.similarity` gives the cosine of a query to each candidate's segment.
  The shipped fusion does not use it (``benchmarks/segment_features.py``).
* **Context windows.** :func:`attach_windows` gives each search hit its neighbouring turns (same
  segment, ``seq`` within ``window``) as one context unit, ``Hit.window``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import Encoder
from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, Tier, new_id, speaker_of, validate_namespace
from retain.retention.budget import is_mandatory
from retain.retrieval.fusion import Hit
from retain.safety.canary import is_canary
from retain.safety.redaction import redact_record
from retain.store import (
    ALL_RECORDS,
    HOT_TIERS,
    AuditEntry,
    RecordFilter,
    RequireUnchanged,
    ScoredId,
    Store,
    retry_on_conflict,
)

if TYPE_CHECKING:
    from retain.core import Core

__all__ = [
    "KIND_KEY",
    "REDUNDANCY",
    "SUMMARY_KIND",
    "CentroidSummariser",
    "SegmentIndex",
    "Summariser",
    "Summary",
    "attach_windows",
    "compress",
    "drop_index_summaries",
    "is_index_summary",
    "is_summary",
    "segment_turns",
    "split_sentences",
    "summarize",
    "summarize_segment",
]

KIND_KEY = "kind"
SUMMARY_KIND = "segment_summary"
REDUNDANCY = 0.95
"""A sentence whose cosine to an already chosen one is at least this is skipped (near-duplicate)."""
SUMMARY_ROLE = "summary"
MAX_WINDOW = 50
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


@dataclass(frozen=True, slots=True)
class Summary:
    """An extractive summary of one segment.

    Attributes:
        text: the chosen sentences, one per line, each as ``"<speaker>: <sentence>"``, stream order.
        sentences: the chosen sentences (without speaker), stream order.
        sentence_sources: id of the record each chosen sentence comes from (aligned with sentences).
        record_ids: ids of every record summarised, stream order.
        scores: cosine of each chosen sentence to the segment centroid (higher = more central).
        centroid: (dim,) float32, L2-normalised mean of the records' embeddings.
        method: how it was made (``"centroid"`` for :func:`summarize_segment`).
    """

    text: str
    sentences: tuple[str, ...]
    sentence_sources: tuple[str, ...]
    record_ids: tuple[str, ...]
    scores: tuple[float, ...]
    centroid: npt.NDArray[np.float32]
    method: str = "centroid"


@runtime_checkable
class Summariser(Protocol):
    """Makes the summary of one segment. ``records`` are the segment's turns in stream order (each
    with its embedding); ``encoder`` is the memory's encoder. Must not lose the record ids: the
    summary lists them in ``record_ids``. An LLM summariser plugs in here; retain itself never
    calls a network."""

    name: str

    def summarize(self, records: Sequence[MemoryRecord], encoder: Encoder) -> Summary:
        """The summary of ``records`` (non-empty, one segment, stream order)."""
        ...


@dataclass(frozen=True, slots=True)
class CentroidSummariser:
    """The default :class:`Summariser`: :func:`summarize_segment` with ``max_sentences``."""

    max_sentences: int = 3
    name: str = "centroid"

    def summarize(self, records: Sequence[MemoryRecord], encoder: Encoder) -> Summary:
        """See :func:`summarize_segment`."""
        return summarize_segment(records, encoder, max_sentences=self.max_sentences)


def split_sentences(text: str) -> list[str]:
    """Split ``text`` at sentence ends (. ! ? and their CJK forms, followed by space) and line
    breaks; empty pieces are dropped. A text without a sentence end is one sentence."""
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _centroid(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    mean = vectors.astype(np.float64).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    out: npt.NDArray[np.float32] = (mean / norm if norm > 0 else mean).astype(np.float32)
    return out


def summarize_segment(records: Sequence[MemoryRecord], encoder: Encoder, *, max_sentences: int = 3) -> Summary:
    """Extractive summary of one segment: the ``max_sentences`` sentences closest to the centroid.

    Method: centroid-based summarisation (Radev et al. 2004, MEAD; over sentence embeddings as in
    Rossiello et al. 2017). The centroid is the L2-normalised mean of the records' embeddings (the
    records are encoded with ``encoder`` when they have none). Each sentence of each record is
    embedded as ``"<speaker>: <sentence>"`` (a record of one sentence reuses its own embedding),
    scored by cosine to the centroid (higher = more central), and picked greedily best first,
    skipping sentences with cosine >= :data:`REDUNDANCY` to one already picked. The picks are
    returned in stream order (``seq``, then input order).

    Args:
        records: the segment's records (any order; ``seq`` orders them, None last).
        encoder: (n, dim) float32 L2-normalised embeddings.
        max_sentences: most sentences in the summary (>= 1).

    Raises:
        InvalidInput: no records, or ``max_sentences`` < 1.
    """
    if isinstance(max_sentences, bool) or not isinstance(max_sentences, int) or max_sentences < 1:
        raise InvalidInput(f"max_sentences: must be an int >= 1, got {max_sentences!r}")
    if not records:
        raise InvalidInput("records: a segment summary needs at least one record")
    ordered = sorted(enumerate(records), key=lambda p: (p[1].seq is None, p[1].seq or 0, p[0]))
    recs = [r for _, r in ordered]
    missing = [i for i, r in enumerate(recs) if r.embedding is None]
    if missing:
        fresh = encoder.encode([f"{speaker_of(recs[i])}: {recs[i].content}" for i in missing])
        for i, vec in zip(missing, fresh, strict=True):
            recs[i] = recs[i].evolve(embedding=vec)
    matrix = np.stack([np.asarray(r.embedding, dtype=np.float32) for r in recs])
    centroid = _centroid(matrix)
    sentences: list[tuple[int, str]] = []  # (record index, sentence)
    vectors: list[npt.NDArray[np.float32] | None] = []
    to_encode: list[int] = []
    for i, rec in enumerate(recs):
        parts = split_sentences(rec.content) or [rec.content.strip()]
        for part in parts:
            sentences.append((i, part))
            vectors.append(matrix[i] if len(parts) == 1 else None)
            if len(parts) > 1:
                to_encode.append(len(sentences) - 1)
    if to_encode:
        encoded = encoder.encode([f"{speaker_of(recs[sentences[j][0]])}: {sentences[j][1]}" for j in to_encode])
        for j, vec in zip(to_encode, encoded, strict=True):
            vectors[j] = vec
    sent_matrix = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
    scores = sent_matrix.astype(np.float64) @ centroid.astype(np.float64)
    picked: list[int] = []
    for j in np.argsort(-scores, kind="stable"):
        if len(picked) == max_sentences:
            break
        if picked and float(np.max(sent_matrix[picked] @ sent_matrix[j])) >= REDUNDANCY:
            continue
        picked.append(int(j))
    picked.sort()
    return Summary(
        text="\n".join(f"{speaker_of(recs[sentences[j][0]])}: {sentences[j][1]}" for j in picked),
        sentences=tuple(sentences[j][1] for j in picked),
        sentence_sources=tuple(recs[sentences[j][0]].id for j in picked),
        record_ids=tuple(r.id for r in recs),
        scores=tuple(round(float(scores[j]), 6) for j in picked),
        centroid=centroid,
        method="centroid",
    )


# --- summary records --------------------------------------------------------------------------


def is_summary(record: MemoryRecord) -> bool:
    """True when ``record`` is a segment summary (compressed or not)."""
    return record.metadata.get(KIND_KEY) == SUMMARY_KIND


def is_index_summary(record: MemoryRecord) -> bool:
    """True for a summary that is only an index entry (its segment is not compressed): plain search
    never returns it."""
    return is_summary(record) and not record.metadata.get("compressed", False)


def drop_index_summaries(
    records: Sequence[MemoryRecord], lexical: Sequence[ScoredId], dense: Sequence[ScoredId]
) -> tuple[list[MemoryRecord], list[ScoredId], list[ScoredId]]:
    """Remove index-only summaries from a search pool: the records and both channels' hits."""
    hidden = {r.id for r in records if is_index_summary(r)}
    return (
        [r for r in records if r.id not in hidden],
        [h for h in lexical if h.id not in hidden],
        [h for h in dense if h.id not in hidden],
    )


def segment_turns(
    store: Store, namespace: str, segment: str, *, tiers: tuple[Tier, ...] | None = None
) -> list[MemoryRecord]:
    """The current turns of ``segment`` (summaries and canaries left out), in stream order."""
    flt = RecordFilter(tiers=tiers, segments=(segment,))
    found = [r for r in store.list_records(namespace, flt, order="seq") if not is_summary(r) and not is_canary(r)]
    return sorted(found, key=lambda r: (r.seq is None, r.seq or 0))


def _check_segment(namespace: str, segment: object) -> str:
    validate_namespace(namespace)
    if not isinstance(segment, str) or not segment:
        raise InvalidInput(f"segment: must be a non-empty string, got {segment!r}")
    return segment


def _summary_record(
    core: Core, namespace: str, segment: str, turns: list[MemoryRecord], summary: Summary, summariser: str
) -> MemoryRecord:
    if not summary.text.strip():
        raise InvalidInput(f"summariser {summariser!r} returned an empty summary for segment {segment!r}")
    times = [t.event_time for t in turns if t.event_time is not None]
    record = MemoryRecord(
        id=new_id(),
        namespace=namespace,
        content=summary.text,
        type=MemoryType.FACT,
        role=SUMMARY_ROLE,
        source=f"summary:{segment}",
        event_time=max(times) if times else None,  # unknown when no turn has a time
        segment=segment,
        tier=Tier.ARCHIVE,
        metadata={
            KIND_KEY: SUMMARY_KIND,
            "summary_of": list(summary.record_ids),
            "sentence_sources": list(summary.sentence_sources),
            "method": summary.method,
            "summariser": summariser,
            "first_time": min(times).isoformat() if times else None,
            "last_time": max(times).isoformat() if times else None,
        },
    )
    (record,) = core.embed([record])
    return record


def _current_summary(store: Store, namespace: str, segment: str) -> MemoryRecord | None:
    flt = RecordFilter(tiers=None, segments=(segment,))
    found = [r for r in store.list_records(namespace, flt, order="created") if is_summary(r)]
    return found[-1] if found else None


def summarize(
    core: Core,
    namespace: str,
    segment: str,
    *,
    summariser: Summariser | None = None,
    actor: str = "system",
) -> MemoryRecord:
    """Summarise ``segment`` and store the summary record (see the module docstring); a previous
    summary of the segment is superseded by the new one. Returns the stored record.

    The previous summary and the turns summarised are re-checked in the write transaction
    (:class:`~retain.store.RequireUnchanged`): when another writer deletes or supersedes one in
    between, nothing is written and the summary is made again from the segment as it is now (up to
    :data:`~retain.store.WRITE_ATTEMPTS`).

    Raises:
        InvalidInput: bad namespace or segment; the segment holds no turns; the summariser returned
            an empty text.
        WriteConflict: other writers changed the segment on every attempt; nothing written.
    """
    segment = _check_segment(namespace, segment)
    return retry_on_conflict(lambda: _summarize_once(core, namespace, segment, summariser, actor))


def _summarize_once(
    core: Core, namespace: str, segment: str, summariser: Summariser | None, actor: str
) -> MemoryRecord:
    turns = segment_turns(core.store, namespace, segment)
    if not turns:
        raise InvalidInput(f"segment {segment!r}: no records in namespace {namespace!r}")
    model = summariser if summariser is not None else CentroidSummariser()
    # sensitive records never feed a summary (it is a plain fact, shown in search and handoff), and
    # what remains is redacted before the summariser sees it
    from retain.safety.redaction import redact_record

    source = [redact_record(r).record for r in turns if r.type is not MemoryType.SENSITIVE]
    if not source:
        raise InvalidInput(f"segment {segment!r}: only sensitive records, nothing to summarise")
    record = _summary_record(core, namespace, segment, turns, model.summarize(source, core.encoder), model.name)
    old = _current_summary(core.store, namespace, segment)
    retired: list[MemoryRecord] = []
    if old is not None:
        record = record.evolve(supersedes=old.id)
        retired = [old.evolve(superseded_by=record.id, tier=Tier.ARCHIVE)]
    entry = AuditEntry(
        namespace,
        "summarize",
        record.id,
        actor,
        f"summary of segment {segment!r} ({len(turns)} records)",
        details={
            "turns": len(turns),
            "method": record.metadata["method"],
            "supersedes": old.id if old else None,
            "content_hash": record.content_hash,
        },
    )
    # the summary is made from these turns and supersedes this old summary: a turn deleted or superseded
    # by another writer since must not live on in it, an old summary deleted or superseded since must not
    # come back from the stale copy
    guards = [
        *([RequireUnchanged(namespace, old.id, old.tier)] if old is not None else []),
        *(RequireUnchanged(namespace, t.id) for t in turns),
    ]
    core.store.put([record, *retired], [entry], require=guards)
    if old is not None and old.tier is not Tier.ARCHIVE:
        core.invalidate(namespace)
    return record


def compress(
    core: Core,
    namespace: str,
    segment: str,
    *,
    actor: str = "system",
    summariser: Summariser | None = None,
) -> MemoryRecord:
    """Replace the hot turns of ``segment`` by its summary record (see the module docstring).

    The summary covers every current turn of the segment (hot and archived); it enters hot memory
    (dynamic tier, ``metadata["compressed"] = True``, ``metadata["compressed_ids"]`` = turns moved);
    the segment's hot, non-mandatory turns move to the archive tier in the same transaction, each
    audited as "archive" with reason "compressed into summary <id>". Returns the summary record.

    The turns moved, the turns summarised and the previous summary are re-checked in the write
    transaction (:class:`~retain.store.RequireUnchanged`): when another writer deletes,
    supersedes or moves one in between, nothing is written and the compression runs again on the
    segment as it is now (up to :data:`~retain.store.WRITE_ATTEMPTS`).

    Raises:
        InvalidInput: bad namespace or segment; the segment has no hot turn that may move.
        WriteConflict: other writers changed the segment on every attempt; nothing written.
    """
    segment = _check_segment(namespace, segment)
    return retry_on_conflict(lambda: _compress_once(core, namespace, segment, summariser, actor))


def _compress_once(core: Core, namespace: str, segment: str, summariser: Summariser | None, actor: str) -> MemoryRecord:
    hot = segment_turns(core.store, namespace, segment, tiers=HOT_TIERS)
    movable = [t for t in hot if not is_mandatory(t) and not t.pinned]
    if not movable:
        raise InvalidInput(
            f"segment {segment!r}: no hot turn to compress in namespace {namespace!r} "
            f"({len(hot)} hot, all mandatory or pinned)"
        )
    turns = segment_turns(core.store, namespace, segment, tiers=None)
    model = summariser if summariser is not None else CentroidSummariser()
    # sensitive records never feed a summary (it is a plain fact, shown in search and handoff), and
    # what remains is redacted before the summariser sees it
    from retain.safety.redaction import redact_record

    source = [redact_record(r).record for r in turns if r.type is not MemoryType.SENSITIVE]
    if not source:
        raise InvalidInput(f"segment {segment!r}: only sensitive records, nothing to summarise")
    record = _summary_record(core, namespace, segment, turns, model.summarize(source, core.encoder), model.name)
    movable_ids = {t.id for t in movable}
    kept = [t.id for t in hot if t.id not in movable_ids]
    record = record.evolve(
        tier=Tier.DYNAMIC,
        metadata={**record.metadata, "compressed": True, "compressed_ids": [t.id for t in movable], "kept": kept},
    )
    old = _current_summary(core.store, namespace, segment)
    retired: list[MemoryRecord] = []
    if old is not None:
        record = record.evolve(supersedes=old.id)
        retired = [old.evolve(superseded_by=record.id, tier=Tier.ARCHIVE)]
    moved = [t.evolve(tier=Tier.ARCHIVE, metadata={**t.metadata, "compressed_into": record.id}) for t in movable]
    reason = f"compressed into summary {record.id}"
    audit = [
        AuditEntry(
            namespace,
            "compress",
            record.id,
            actor,
            f"segment {segment!r}: {len(moved)} turns into one summary",
            details={
                "moved": len(moved),
                "kept": len(kept),
                "supersedes": old.id if old else None,
                "content_hash": record.content_hash,
            },
        ),
        *(
            AuditEntry(
                namespace, "archive", t.id, actor, reason, details={"tier_before": t.tier.value, "summary": record.id}
            )
            for t in movable
        ),
    ]
    # written back whole (moved) or summarised: none deleted, superseded or moved by another writer since
    # it was read may come back from a stale copy or live on in the summary
    guards = [
        *([RequireUnchanged(namespace, old.id, old.tier)] if old is not None else []),
        *(RequireUnchanged(namespace, t.id, t.tier) for t in movable),
        *(RequireUnchanged(namespace, t.id) for t in turns if t.id not in movable_ids),
    ]
    core.invalidate(namespace)
    try:
        core.store.put([record, *retired, *moved], audit, require=guards)
    finally:
        core.invalidate(namespace)  # the hot set is rebuilt from the store on the next add
    return record


# --- segment relevance ------------------------------------------------------------------------


class SegmentIndex:
    """One L2-normalised centroid per segment of a namespace (mean embedding of its current turns,
    all tiers; summaries and canaries left out). Built from the store, cached by ``Memory``
    and rebuilt when the namespace's record count changes.

    Attributes:
        segments: segment ids, aligned with ``matrix`` rows.
        matrix: (S, dim) float32, L2-normalised rows.
        count: the namespace's record count (all records, history included) when it was built.
    """

    def __init__(self, segments: list[str], matrix: npt.NDArray[np.float32], count: int) -> None:
        self.segments = segments
        self.matrix = matrix
        self.count = count
        self._row = {s: i for i, s in enumerate(segments)}

    @classmethod
    def build(cls, store: Store, namespace: str) -> SegmentIndex:
        """Read every current record of ``namespace`` once and average the embeddings per segment."""
        count = store.count(namespace, ALL_RECORDS)
        sums: dict[str, npt.NDArray[np.float64]] = {}
        for rec in store.list_records(namespace, RecordFilter(tiers=None)):
            if rec.segment is None or rec.embedding is None or is_summary(rec) or is_canary(rec):
                continue
            vec = np.asarray(rec.embedding, dtype=np.float64)
            sums[rec.segment] = sums[rec.segment] + vec if rec.segment in sums else vec.copy()
        names = sorted(sums)
        if not names:
            return cls([], np.zeros((0, 0), dtype=np.float32), count)
        matrix = np.stack([sums[s] for s in names])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.where(norms > 0, matrix / np.maximum(norms, 1e-12), 0.0)
        return cls(names, matrix.astype(np.float32), count)

    def similarity(
        self, query_vector: npt.NDArray[np.float32] | None, segments: Sequence[str | None]
    ) -> npt.NDArray[np.float64]:
        """(n,) float64: cosine of the query (L2-normalised, (dim,)) to the centroid of each given
        segment (higher = more relevant); 0 for None or unknown segments, or without a query vector."""
        out = np.zeros(len(segments))
        if query_vector is None or not self.segments:
            return out
        sims = self.matrix.astype(np.float64) @ np.asarray(query_vector, dtype=np.float64)
        for i, seg in enumerate(segments):
            row = self._row.get(seg) if seg is not None else None
            if row is not None:
                out[i] = sims[row]
        return out


# --- context windows --------------------------------------------------------------------------


def attach_windows(store: Store, namespace: str, hits: list[Hit], window: int, *, allow_raw: bool) -> list[Hit]:
    """Give each hit its context unit: the current records of the same segment with ``seq`` within
    ``window`` of the hit's (any tier; the hit itself included), in stream order, as ``Hit.window``.
    A hit without ``seq`` gets a window of itself only. Records are redacted unless ``allow_raw``;
    canaries and index-only summaries never appear.

    Raises:
        InvalidInput: ``window`` not an int in [0, :data:`MAX_WINDOW`].
    """
    if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window <= MAX_WINDOW:
        raise InvalidInput(f"window: must be an int in [0, {MAX_WINDOW}], got {window!r}")
    if window == 0 or not hits:
        return hits
    wanted = {h.record.seq + d for h in hits if h.record.seq is not None for d in range(-window, window + 1)}
    segments = {h.record.segment for h in hits if h.record.seq is not None and h.record.segment is not None}
    by_pos: dict[tuple[str | None, int], list[MemoryRecord]] = {}
    if wanted:
        flt = RecordFilter(tiers=None, seqs=tuple(sorted(s for s in wanted if s >= 0)))
        for rec in store.list_records(namespace, flt, order="seq"):
            if rec.seq is None or is_canary(rec) or is_index_summary(rec):
                continue
            if rec.segment in segments or rec.segment is None:
                by_pos.setdefault((rec.segment, rec.seq), []).append(rec)
    out = []
    for hit in hits:
        seq = hit.record.seq
        if seq is None:
            out.append(replace(hit, window=(hit.record,)))
            continue
        unit: list[MemoryRecord] = []
        for pos in range(seq - window, seq + window + 1):
            for rec in by_pos.get((hit.record.segment, pos), []):
                unit.append(hit.record if rec.id == hit.record.id else rec if allow_raw else redact_record(rec).record)
        out.append(replace(hit, window=tuple(unit) or (hit.record,)))
    return out

"""How :func:`retain.safety.context.pack` fills a token budget: sections, degradation, chatter.

A context is filled section by section (:class:`Filling`): the hard constraints, then any number
of record sections (the working tier; a caller may add its own, e.g. records to confirm), then
search hits. Every candidate that does not go in is reported (:class:`LeftOut`), never dropped
silently.

**Constraints over budget** (:func:`fit_constraints`). When the current hard constraints alone need
more than the budget, they degrade instead of failing:

1. *merge same-slot duplicates*: of two constraints on the same slot (subject-term overlap >=
   :data:`MERGE_OVERLAP` and embedding cosine >= :data:`MERGE_COSINE`), the older is left out
   (reason ``merged``, detail names the newer one it duplicates);
2. *rank by relevance* to the query and the state: cosine of the constraint's embedding to the
   embedding of ``query`` + the rendered state (higher = more relevant); ties keep stored order;
3. *fill greedily* best first: a constraint that fits goes in whole; one that does not is
   *compressed* with the summariser (:class:`~retain.sequence.segments.Summariser`, default the
   centroid summariser: its most central sentence) and goes in compressed when that fits (reason
   ``compressed`` in the left-out list: the rest of its text is out); else it is left out
   (``budget``).

The included constraints keep their stored order in the context.

**Chatter** (:func:`is_chatter`): records typed ``chatter`` with at most :data:`CHATTER_MAX_TERMS`
content terms and no number ("ok", "Nice, thanks!", "Anything else left to book?") never take a
working-tier slot (reason ``chatter``); they stay searchable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from retain.ingest.signals import stem, subject_terms, term_overlap
from retain.record import MemoryRecord, MemoryType
from retain.sequence.segments import CentroidSummariser, Summariser
from retain.state.agent import AgentState
from retain.text.classify import classify_with_reason

if TYPE_CHECKING:
    from retain.encoders.basis import Encoder
    from retain.retrieval.fusion import Hit

__all__ = [
    "ACK_WORDS",
    "CHATTER_MAX_TERMS",
    "MERGE_COSINE",
    "MERGE_OVERLAP",
    "ContextItem",
    "Filling",
    "LeftOut",
    "fit_constraints",
    "is_chatter",
    "render_line",
    "state_text",
]

MERGE_OVERLAP = 0.8
"""Subject-term overlap (share of the smaller set) at or above which two constraints share a slot."""
MERGE_COSINE = 0.9
"""Embedding cosine at or above which two constraints of one slot are duplicates."""
CHATTER_MAX_TERMS = 5
"""Most content terms of a chatter record the working tier skips; longer chatter may carry content."""
_DIGIT = re.compile(r"\d")
ACK_WORDS = frozenset(
    {
        "ok",
        "okay",
        "k",
        "sure",
        "yes",
        "yeah",
        "yep",
        "yup",
        "great",
        "nice",
        "cool",
        "perfect",
        "good",
        "sounds",
        "sound",
        "got",
        "go",
        "ahead",
        "do",
        "please",
        "alright",
        "fine",
        "awesome",
        "lovely",
        "noted",
        "understood",
        "agreed",
        "right",
        "thanks",
        "thank",
        "continue",
        "proceed",
        "excellent",
        "wonderful",
        "brilliant",
        "makes",
        "sense",
        "hmm",
        "hm",
        "ah",
        "oh",
        "wow",
        "好",
        "好的",
        "的",
        "嗯",
        "行",
        "可以",
        "收到",
        "收",
        "到",
        "明白",
        "明",
        "白",
        "谢谢",
        "谢",
        "没问题",
        "问题",
        "没问",
        "题",
    }
)
"""Words (stemmed as :func:`~retain.ingest.signals.subject_terms` stems them) of a bare acknowledgement."""
_ACK_STEMS = frozenset(stem(w) for w in ACK_WORDS)
_ACK_CUES = frozenset({"chatter:thanks", "chatter:laughter", "chatter:emoji", "chatter:exclaim", "chatter:greeting",
                       "chatter:question", "empty"})  # fmt: skip


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One record packed into a context.

    Attributes:
        record_id: the record.
        why: "hard_constraint" (mandatory), "compressed" (a hard constraint shortened to fit),
            "working" (the working tier), "retrieved" (a search hit of the hot tier that fit),
            "archive" (a search hit from the archive tier), or the name of a caller's section.
        tokens: tokens of its rendered line (encoder tokenizer).
        score: fused search score (higher = more relevant), None for a record the search did not return.
        scores: the search's score breakdown (``bm25``, ``dense``, ``rrf``, ``fused``), {} if none.
        rank: the search rank (1 = best), None if not retrieved.
        source: the record's provenance (e.g. "chat:42"), None if unknown.
        type: the record's memory type.
    """

    record_id: str
    why: str
    tokens: int
    score: float | None = None
    scores: dict[str, float] = field(default_factory=dict)
    rank: int | None = None
    source: str | None = None
    type: str = MemoryType.FACT.value


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A candidate not packed (or packed only in part): ``reason`` is one of
    :data:`~retain.safety.context.LEFT_OUT_REASONS`; ``detail`` explains (tokens needed and left,
    the superseding id, the duplicated id)."""

    record_id: str
    reason: str
    score: float | None = None
    rank: int | None = None
    tokens: int | None = None
    detail: str = ""


def render_line(record: MemoryRecord, content: str | None = None) -> str:
    """The line a record contributes: ``"[constraint] <content>"`` for a hard constraint, else
    ``"[memory] <content>"``; ``content`` replaces the record's (a compressed constraint)."""
    tag = "constraint" if record.type is MemoryType.HARD_CONSTRAINT else "memory"
    return f"[{tag}] {record.content if content is None else content}"


def is_chatter(record: MemoryRecord) -> bool:
    """True for an acknowledgement or small talk: typed ``chatter``, no digit, at most
    :data:`CHATTER_MAX_TERMS` content terms, and either a chatter cue of the classifier (thanks,
    laughter, emoji, greeting, a bare question; :mod:`retain.text.classify`) or only
    acknowledgement words (:data:`ACK_WORDS`: "ok", "sounds good", "go ahead", 好的, ...)."""
    if record.type is not MemoryType.CHATTER or _DIGIT.search(record.content):
        return False
    terms = subject_terms(record.content)
    if len(terms) > CHATTER_MAX_TERMS:
        return False
    cue = classify_with_reason(record.content, record.role)[1]
    return cue in _ACK_CUES or terms <= _ACK_STEMS


def _item(record: MemoryRecord, why: str, tokens: int, hit: Hit | None) -> ContextItem:
    return ContextItem(
        record_id=record.id,
        why=why,
        tokens=tokens,
        score=hit.score if hit is not None else None,
        scores=dict(hit.scores) if hit is not None else {},
        rank=hit.rank if hit is not None else None,
        source=record.source,
        type=record.type.value,
    )


class Filling:
    """The context being filled within ``budget`` tokens: lines, items, left-out candidates, tokens used.

    ``tokens`` maps each candidate record id to the tokens of its rendered line.
    """

    def __init__(self, budget: int, threshold: float | None, tokens: Mapping[str, int]) -> None:
        self.budget, self.threshold, self.tokens = budget, threshold, tokens
        self.items: list[ContextItem] = []
        self.lines: list[str] = []
        self.left: list[LeftOut] = []
        self.used = 0
        self.held: dict[str, str] = {}  # content hash -> record id packed
        self.seen: set[str] = set()  # ids packed or already reported left out

    def put(
        self, rec: MemoryRecord, why: str, hit: Hit | None = None, line: str | None = None, tokens: int = 0
    ) -> None:
        """Pack ``rec`` (its rendered line, or ``line`` of ``tokens`` tokens)."""
        need = self.tokens[rec.id] if line is None else tokens
        self.used += need
        self.held[rec.content_hash] = rec.id
        self.seen.add(rec.id)
        self.lines.append(render_line(rec) if line is None else line)
        self.items.append(_item(rec, why, need, hit))

    def leave(self, rec_id: str, reason: str, detail: str, hit: Hit | None = None, tokens: int | None = None) -> None:
        """Report ``rec_id`` left out for ``reason``."""
        self.seen.add(rec_id)
        score, rank = (hit.score, hit.rank) if hit is not None else (None, None)
        self.left.append(LeftOut(rec_id, reason, score, rank, tokens, detail))

    def add_section(self, records: Sequence[MemoryRecord], why: str, *, skip_chatter: bool = False) -> None:
        """A section of records in the given order, each one that fits (the working tier, or a
        caller's section); chatter is left out when ``skip_chatter``."""
        for rec in records:
            if rec.id in self.seen:
                continue
            if skip_chatter and is_chatter(rec):
                self.leave(rec.id, "chatter", f"{why}: acknowledgement or small talk", tokens=self.tokens[rec.id])
            elif self.used + self.tokens[rec.id] > self.budget:
                self.leave(rec.id, "budget", f"{why}: did not fit", tokens=self.tokens[rec.id])
            else:
                self.put(rec, why)

    def add_hits(self, candidates: Sequence[Hit], archived: frozenset[str] = frozenset()) -> None:
        """The search hits best first, each current, new, above the threshold and fitting; a hit
        whose id is in ``archived`` is packed as "archive"."""
        for hit in candidates:
            rec = hit.record
            if rec.id in self.seen:
                continue  # already in, or already reported
            need = self.tokens[rec.id]
            if rec.superseded_by is not None:
                reason, detail = "superseded", f"superseded by {rec.superseded_by}"
            elif rec.content_hash in self.held:
                reason, detail = "duplicate", f"same content as {self.held[rec.content_hash]}"
            elif self.threshold is not None and hit.score < self.threshold:
                reason, detail = "below_threshold", f"score below {self.threshold:g}"
            elif self.used + need > self.budget:
                reason, detail = "budget", f"needs {need} tokens, {self.budget - self.used} left"
            else:
                self.put(rec, "archive" if rec.id in archived else "retrieved", hit)
                continue
            self.leave(rec.id, reason, detail, hit, need)


def _compress(rec: MemoryRecord, encoder: Encoder, summariser: Summariser | None) -> tuple[str, int] | None:
    """(line, tokens) of ``rec`` shortened by the summariser (its summary's sentences), or None
    when that is no shorter."""
    model = summariser if summariser is not None else CentroidSummariser(max_sentences=1)
    summary = model.summarize([rec], encoder)
    text = " ".join(summary.sentences).strip()
    if not text or len(text) >= len(rec.content.strip()):
        return None
    line = render_line(rec, text)
    return line, encoder.count_tokens([line])[0]


def _merged(mandatory: Sequence[MemoryRecord], vectors: np.ndarray) -> dict[str, str]:
    """Older constraint id -> the newer one of the same slot it duplicates (see the module docstring)."""
    terms = [subject_terms(r.content) for r in mandatory]
    out: dict[str, str] = {}
    for j in range(len(mandatory) - 1, -1, -1):  # newest first: a newer record absorbs older ones
        if mandatory[j].id in out:
            continue
        for i in range(j):
            if mandatory[i].id in out:
                continue
            if term_overlap(terms[i], terms[j]) >= MERGE_OVERLAP and float(vectors[i] @ vectors[j]) >= MERGE_COSINE:
                out[mandatory[i].id] = mandatory[j].id
    return out


def _vectors(records: Sequence[MemoryRecord], encoder: Encoder) -> np.ndarray:
    """(n, dim) float32 embeddings of ``records`` (encoded when a record carries none)."""
    missing = [i for i, r in enumerate(records) if r.embedding is None]
    by_index = dict(zip(missing, encoder.encode([records[i].content for i in missing]), strict=True)) if missing else {}
    return np.stack([np.asarray(by_index.get(i, r.embedding), dtype=np.float32) for i, r in enumerate(records)])


def fit_constraints(
    filling: Filling,
    mandatory: Sequence[MemoryRecord],
    hits: Mapping[str, Hit],
    *,
    encoder: Encoder,
    query: str,
    state_text: str,
    summariser: Summariser | None = None,
) -> None:
    """Pack the hard constraints ``mandatory`` (stored order): all of them when they fit, else
    degraded as the module docstring says (merged, ranked by relevance to ``query`` and
    ``state_text``, compressed), every one not packed whole reported in ``filling.left``."""
    need = sum(filling.tokens[r.id] for r in mandatory)
    if filling.used + need <= filling.budget:
        for rec in mandatory:
            filling.put(rec, "hard_constraint", hits.get(rec.id))
        return
    vectors = _vectors(mandatory, encoder)
    merged = _merged(mandatory, vectors)
    for old, new in merged.items():
        filling.leave(old, "merged", f"same slot as {new}", hits.get(old), filling.tokens[old])
    kept = [(i, r) for i, r in enumerate(mandatory) if r.id not in merged]
    probe = " | ".join(p for p in (query.strip(), state_text.strip()) if p)
    target = encoder.encode([probe])[0] if probe else None
    relevance = {r.id: float(vectors[i] @ target) if target is not None else 0.0 for i, r in kept}
    chosen: dict[str, tuple[str, int] | None] = {}  # id -> (compressed line, tokens) or None (whole)
    room = filling.budget - filling.used
    for _, rec in sorted(kept, key=lambda p: (-relevance[p[1].id], p[0])):
        whole = filling.tokens[rec.id]
        if whole <= room:
            chosen[rec.id], room = None, room - whole
            continue
        small = _compress(rec, encoder, summariser)
        if small is not None and small[1] <= room:
            chosen[rec.id], room = small, room - small[1]
            filling.leave(
                rec.id, "compressed", f"{small[1]} of {whole} tokens packed (summary)", hits.get(rec.id), whole
            )
        else:
            filling.leave(
                rec.id, "budget", f"hard constraint: needs {whole} tokens, {room} left", hits.get(rec.id), whole
            )
    for _, rec in kept:
        if rec.id not in chosen:
            continue
        packed = chosen[rec.id]
        if packed is None:
            filling.put(rec, "hard_constraint", hits.get(rec.id))
        else:
            filling.put(rec, "compressed", hits.get(rec.id), line=packed[0], tokens=packed[1])


def state_text(state: Mapping[str, Any] | None) -> str:
    """The state rendered as one line (:meth:`~retain.state.agent.AgentState.render`), '' for none."""
    return AgentState.from_dict(state).render() if state else ""

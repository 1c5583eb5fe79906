"""Features of a candidate (new, old) pair for the learned conflict model (:mod:`retain.ingest.conflict_model`).

Computed by this code from the two texts, their embeddings, roles and types, and the candidate pool
the old record was found in; no model. What each record says is read once per text and memoised
(:func:`read_text`); a pair's features are then a few set operations:

* similarity: cosine of the embeddings, its gap to the best candidate's cosine and its rank; overlap
  and Jaccard of the content terms with the values masked (numbers are never terms), shared entities;
* values (numbers that label a thing, "Day 4:", "order 12", left out): an aligned value change in
  the same slot (:func:`retain.ingest.signals.aligned_change`), a
  number whose context words the other's number shares (same slot), canonical values
  (:func:`retain.text.values.canonical_values`) of one kind (date, time, amount) that differ, the share
  of the old record's canonical values the new one repeats;
* cue words in several languages: the correction cues of :mod:`retain.text.cues` (and the explicit
  ones), update words ("now", "takes over", "slips", "追加", "改为", "verschoben", ...), a negation
  flip, a retraction, authoritative data against a cached copy, hedges and questions;
* roles and types: one-hot roles of both records, same role, hard constraints, the agent's recaps;
* recency: how many candidates of the pool are newer than the old record;
* the shipped rules' decision (:func:`retain.ingest.conflict.decide` without a model) as a prior.

:data:`FEATURES` names the columns, in order.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from retain.ingest.conflict_cues import CUE_PATTERNS, cue_flags, is_question, is_recap, is_short_choice
from retain.ingest.signals import (
    aligned_change,
    names_retracted,
    negated_terms,
    retracted_items,
    stem,
    subject_terms,
    term_overlap,
    value_slots,
)
from retain.text.cues import correction_cues, explicit_cues
from retain.text.entities import extract_entities
from retain.text.values import canonical_values

__all__ = [
    "FEATURES",
    "ROLES",
    "PairContext",
    "TextReading",
    "pair_features",
    "pool_contexts",
    "pool_rows",
    "read_text",
]

ROLES = ("user", "agent_thought", "agent_action", "tool", "system")
"""Roles with a one-hot column each; any other role has none set."""

# Words that state a change without the old value, in the languages of the scenarios.
_UPDATE = re.compile(
    r"\b(?:now|no longer|from now on|instead|takes? over|took over|steps? in|replac\w*|switch\w*|mov(?:e|ed|es|ing)"
    r"|slip\w*|push\w*|postpon\w*|delay\w*|extend\w*|bump\w*|rais\w*|lower\w*|increas\w*|cut|cuts|reduc\w*|drop\w*"
    r"|revis\w*|updat\w*|chang\w*|new|latest|go with|going with|forget|scrap\w*|cancel\w*|brought forward|pulled in"
    r"|on leave|takes? the|handover|hand(?:s|ed)? over|chipped in|all-in|total now|up to|down to"
    r"|jetzt|neu\w*|verschoben|statt|übernimmt|ab sofort|maintenant|désormais|nouveau|nouvelle|reporté\w*|remplac\w*"
    r"|passe à|ahora|nuevo|nueva|cambi\w*|pospuest\w*|aplaz\w*|sustitu\w*|agora|novo|nova|adiad\w*|ora|nuovo|nuova"
    r"|rinviat\w*|spostat\w*|sostitu\w*)\b"
    r"|改[成为到]|换[成到]|变[成为更]|调[整到]|追加|增加到|提高到|降到|降低到|延[期长后到]|推迟|往后[挪推]|提前|取消|不再|现在|改由|接手|接替|转给|换人"
    r"|定[成为了]|落到|放宽|收紧|上调|下调|最新|更新"
    r"|変更|延期|に変わ|から.{0,6}に|今は|新しい|引き継|代わり|取り消|キャンセル"
    r"|변경|연기|으로 바|대신|새로|취소|이제",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|might|could we|should we|would|i guess|not sure|wondering|what if|if we|possibly"
    r"|vielleicht|peut-être|quizás|quizá|talvez|forse)\b|也许|或许|可能|要不要|是不是|能不能|吗|かもしれ|ませんか",
    re.IGNORECASE,
)
_AUTHORITY = re.compile(
    r"authoritative|official|source of truth|verified|live|signed|权威|官方|核验|正式|verbindlich|officiel|offiziell"
    r"|amtlich|ufficiale|oficial|signiert|公式|정식",
    re.I,
)
_CACHE = re.compile(
    r"\bcach\w*|stale|outdated|may be out of date|snapshot|export|copy|copia|copie|kopie|locale|缓存|过期|旧数据|副本"
    r"|キャッシュ|veraltet|캐시",
    re.IGNORECASE,
)
_RECAP = re.compile(
    r"^\s*(?:recap|summary|so far|summary so far|小结|总结|汇总|まとめ|zusammenfassung|résumé|resumen)", re.I
)
# A word naming a numbered thing ("turn 5", "Note number 0:", "room 12."): not a subject word.
_NUMBER_WORDS = frozenset({"numbe"})
_LABEL = re.compile(r"([^\W\d_]+)\s+(?:(?:number|no\.?|nr\.?)\s+|#)?\d+\b(?![.,]?\d|\s*[%€$£]|\s*[^\W\d_])", re.I)


@dataclass(frozen=True, slots=True)
class TextReading:
    """What the features read of one text (:func:`read_text`), worked out once per text."""

    terms: frozenset[str]
    slots: dict[str, set[str]]
    canon: frozenset[str]
    cues: tuple[str, ...]
    explicit: tuple[str, ...]
    negated: frozenset[str]
    retracted: dict[str, set[str]]
    entities: frozenset[str]
    update_words: int
    hedged: bool
    question: bool
    authoritative: bool
    cached: bool
    recap: bool
    length: int
    flags: tuple[float, ...]
    choice: bool
    values: int
    unlabelled: frozenset[str]


@functools.lru_cache(maxsize=1 << 14)
def read_text(text: str) -> TextReading:
    """The :class:`TextReading` of ``text`` (memoised by text: a record is a candidate of many new ones)."""
    slots = value_slots(text)
    labels = {v for v, ctx in slots.items() if "#id" in ctx}  # "Day 4:", "order 12": names, not values
    return TextReading(
        terms=frozenset(subject_terms(text)),
        slots=slots,
        canon=frozenset(c for c in canonical_values(text) if not (c.startswith("n:") and c[2:] in labels)),
        cues=tuple(correction_cues(text)),
        explicit=tuple(explicit_cues(text)),
        negated=frozenset(negated_terms(text)),
        retracted=retracted_items(text),
        entities=extract_entities(text),
        update_words=len(_UPDATE.findall(text)),
        hedged=_HEDGE.search(text) is not None,
        question=is_question(text),
        authoritative=_AUTHORITY.search(text) is not None,
        cached=_CACHE.search(text) is not None,
        recap=_RECAP.search(text) is not None or is_recap(text),
        length=len(text),
        flags=cue_flags(text),
        choice=is_short_choice(text),
        values=len(slots),
        unlabelled=frozenset(subject_terms(text)) - _labels(text),
    )


def _labels(text: str) -> set[str]:
    """Stemmed words that only name a numbered thing in ``text`` ("turn 5", "Note number 0")."""
    return {stem(m.group(1).lower()) for m in _LABEL.finditer(text)} | _NUMBER_WORDS


@dataclass(frozen=True, slots=True)
class PairContext:
    """Where the old record stands in the candidate pool of the new one.

    Attributes:
        cos_best: the highest cosine of any candidate in the pool (-1..1).
        cos_rank: 1-based rank of this candidate's cosine in the pool (1 = most similar).
        newer: number of candidates in the pool stated after this one (0 = the most recent).
        rule: the shipped rules' relation for this pair: 1.0 update, 0.5 update refused for a hard
            constraint, 0.0 otherwise.
    """

    cos_best: float
    cos_rank: int
    newer: int
    rule: float


_BASE = (
    "bias",
    "cos",
    "cos_gap",
    "cos_top",
    "overlap",
    "jaccard",
    "entities",
    "aligned",
    "slot_match",
    "date_change",
    "time_change",
    "amount_change",
    "restated",
    "cue",
    "explicit",
    "cue_overlap",
    "update_words",
    "update_overlap",
    "flip",
    "retraction",
    "authority",
    "new_hedged",
    "new_question",
    "old_question",
    "same_role",
    "old_hard",
    "new_hard",
    "old_recap",
    "newest",
    "recency",
    "rule_update",
    "rule_refused",
    "len_new",
    "len_old",
)
_ROLE_COLUMNS = tuple(f"new_{r}" for r in ROLES) + tuple(f"old_{r}" for r in ROLES)
_CROSS = (
    "cue_x_overlap",
    "aligned_x_cos",
    "slot_x_overlap",
    "update_x_cos",
    "change_x_overlap",
    "recap_x_change",
    "hard_x_hedged",
    "tool_x_authority",
)
_CUES = (
    *(f"new_{name}" for name in CUE_PATTERNS),
    "old_choice",
    "new_choice",
    "unlabelled_overlap",
    "both_values",
    "new_values",
    "old_values",
    "same_kind",
    "self_x_cos",
    "news_x_values",
    "relative_x_overlap",
    "drop_x_overlap",
    "handover_x_cos",
    "switch_x_choice",
    "recap_x_cue",
    "cue_any_x_cos",
)
_PAIR = _BASE + _ROLE_COLUMNS + _CROSS + _CUES
_RANKED = ("overlap", "unlabelled_overlap", "cue_any_x_cos", "change_x_overlap")
_POOL = tuple(f"{name}_rank" for name in _RANKED) + tuple(f"{name}_gap" for name in _RANKED)
FEATURES: tuple[str, ...] = _PAIR + _POOL
"""Names of the columns of a feature row (:func:`pair_features`, then :func:`pool_rows`), in order."""


def _kind_change(new: frozenset[str], old: frozenset[str], kind: str) -> float:
    a = {v for v in new if v.startswith(kind)}
    b = {v for v in old if v.startswith(kind)}
    return 1.0 if a and b and not a <= b else 0.0


def _slot_match(new: dict[str, set[str]], old: dict[str, set[str]]) -> float:
    """1 when a number of the new text and a different number of the old one share a context word."""
    for v, ctx in new.items():
        if "#id" in ctx:
            continue
        for w, octx in old.items():
            if w != v and "#id" not in octx and ctx & octx:
                return 1.0
    return 0.0


def pair_features(
    new: TextReading,
    old: TextReading,
    *,
    cos: float,
    new_role: str,
    old_role: str,
    new_hard: bool,
    old_hard: bool,
    context: PairContext,
) -> npt.NDArray[np.float64]:
    """The pair's own columns of one (new, old) pair: (len(FEATURES) - len(_POOL),) float64, in the order of
    :data:`FEATURES`; :func:`pool_rows` adds the columns that compare it with the rest of its pool.

    ``cos``: cosine of the two embeddings (-1..1); roles as stored; ``*_hard``: the record's type is
    ``hard_constraint``. Pure; raises nothing for any texts.
    """
    overlap = term_overlap(new.terms, old.terms)
    union = len(new.terms | old.terms)
    jaccard = len(new.terms & old.terms) / union if union else 0.0
    aligned = 1.0 if aligned_change(new.slots, old.slots) else 0.0
    slot = _slot_match(new.slots, old.slots)
    changes = [_kind_change(new.canon, old.canon, k) for k in ("d:", "t:", "n:")]
    restated = len(new.canon & old.canon) / len(old.canon) if old.canon else 0.0
    flip = 1.0 if new.negated & old.terms else 0.0
    retraction = 1.0 if new.retracted and names_retracted(new.retracted, old.slots) else 0.0
    authority = 1.0 if new.authoritative and old.cached else 0.0
    cue = 1.0 if new.cues else 0.0
    upd = min(new.update_words, 3) / 3
    change = max(aligned, slot, *changes)
    base = [
        1.0,
        cos,
        context.cos_best - cos,
        1.0 / context.cos_rank,
        overlap,
        jaccard,
        min(len(new.entities & old.entities), 3) / 3,
        aligned,
        slot,
        *changes,
        restated,
        cue,
        1.0 if new.explicit else 0.0,
        cue * overlap,
        upd,
        upd * overlap,
        flip,
        retraction,
        authority,
        1.0 if new.hedged else 0.0,
        1.0 if new.question else 0.0,
        1.0 if old.question else 0.0,
        1.0 if new_role == old_role else 0.0,
        1.0 if old_hard else 0.0,
        1.0 if new_hard else 0.0,
        1.0 if old.recap else 0.0,
        1.0 if context.newer == 0 else 0.0,
        1.0 / (1.0 + context.newer),
        1.0 if context.rule == 1.0 else 0.0,
        1.0 if context.rule == 0.5 else 0.0,
        math.log1p(new.length) / 8,
        math.log1p(old.length) / 8,
    ]
    roles = [1.0 if new_role == r else 0.0 for r in ROLES] + [1.0 if old_role == r else 0.0 for r in ROLES]
    cross = [
        cue * overlap * cos,
        aligned * cos,
        slot * overlap,
        upd * cos,
        change * overlap,
        (1.0 if old.recap or old_role == "agent_thought" else 0.0) * change,
        (1.0 if old_hard else 0.0) * (1.0 if new.hedged else 0.0),
        (1.0 if new_role == "tool" else 0.0) * authority,
    ]
    return np.asarray(base + roles + cross + _cue_columns(new, old, cos, overlap), dtype=np.float64)


def _cue_columns(new: TextReading, old: TextReading, cos: float, overlap: float) -> list[float]:
    """The columns of ``_CUES``: the new text's cue families (:mod:`retain.ingest.conflict_cues`), short
    choices, subject overlap without the words that only label numbers ("turn number 5"), values."""
    self_correct, news, relative, drop, handover, switch = new.flags
    both = 1.0 if new.values and old.values else 0.0
    kinds = {c[:2] for c in new.canon} & {c[:2] for c in old.canon}
    any_cue = max(new.flags)
    return [
        *new.flags,
        1.0 if old.choice else 0.0,
        1.0 if new.choice else 0.0,
        term_overlap(new.unlabelled, old.unlabelled),
        both,
        min(new.values, 5) / 5,
        min(old.values, 5) / 5,
        1.0 if kinds else 0.0,
        self_correct * cos,
        news * both,
        relative * overlap,
        drop * overlap,
        handover * cos,
        switch * (1.0 if old.choice else 0.0),
        (1.0 if old.recap else 0.0) * max(self_correct, news, relative),
        any_cue * cos,
    ]


def pool_rows(rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The full feature rows of one new record's candidate pool: ``rows`` (n, len(FEATURES) - len(_POOL))
    from :func:`pair_features` -> (n, len(FEATURES)) float64, with each candidate's rank (1 / rank, 1 =
    highest in the pool) and gap to the pool's best on a few columns (overlap, overlap without number
    labels, cue x cosine, value change x overlap)."""
    x = np.atleast_2d(np.asarray(rows, dtype=np.float64)).reshape(-1, len(_PAIR))
    cols = x[:, [_PAIR.index(name) for name in _RANKED]]
    order = np.argsort(np.argsort(-cols, axis=0, kind="stable"), axis=0, kind="stable")
    gaps = cols.max(axis=0, initial=0.0) - cols if len(x) else cols
    return np.hstack([x, 1.0 / (1.0 + order), gaps])


def pool_contexts(cosines: Sequence[float], order: Sequence[int], rules: Sequence[float]) -> list[PairContext]:
    """The :class:`PairContext` of each candidate of a pool: ``cosines`` to the new record, ``order``
    each candidate's position in time (higher = stated later; any comparable integers), ``rules`` the
    shipped rules' relation per candidate (1.0 / 0.5 / 0.0, see :class:`PairContext`)."""
    best = max(cosines, default=0.0)
    ranked = sorted(range(len(cosines)), key=lambda i: -cosines[i])
    rank = {i: r + 1 for r, i in enumerate(ranked)}
    return [
        PairContext(
            cos_best=best,
            cos_rank=rank[i],
            newer=sum(1 for o in order if o > order[i]),
            rule=rules[i],
        )
        for i in range(len(cosines))
    ]

"""Conflicts between a new record and what is already stored: duplicate, paraphrase, update, or new.

No LLM is needed. A new record is compared with its nearest current records (dense and lexical
neighbours within the namespace) on three signals:

* **subject overlap** — do they talk about the same slot? Share of content terms in common
  (stopwords removed, Latin words truncated to 5 characters as a crude stemmer, CJK as character
  bigrams), plus shared identifiers (codes with digits such as "CR-22741", "payments.spec.ts");
* **value change** — do their numbers, amounts or dates differ ("5 years" -> "6 years",
  "12000元" -> "15000元")?
* **correction cues** — "correction:", "actually", "not X", "switched to", "changed to", "moved",
  "new ceiling", "scratch that", "my bad", "改成", "计划有变", "放宽到", ... (:data:`CORRECTION_CUES`).

Decision (first that applies):

1. **paraphrase** — cosine >= ``paraphrase_cos`` with no value change and no cue: the same fact said
   again; the caller merges it into the existing record (both sources kept).
2. **update** — subject overlap >= ``min_overlap`` and (a correction cue or a value change), and the
   candidate is not chatter: the new record supersedes the candidate. With several candidates the
   one with the highest ``overlap + cosine`` wins.
3. **new** — otherwise.

An optional :class:`ConflictJudge` (e.g. an LLM) may be plugged in to confirm or veto update and
paraphrase decisions; none is configured by default.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from retain.lexical import STOPWORDS, index_terms
from retain.record import MemoryRecord, MemoryType

__all__ = [
    "CORRECTION_CUES",
    "ConflictDecision",
    "ConflictJudge",
    "ConflictPolicy",
    "Relation",
    "correction_cues",
    "decide",
    "subject_terms",
    "values",
]


class Relation(enum.StrEnum):
    """How a new record relates to an existing one."""

    NEW = "new"
    PARAPHRASE = "paraphrase"
    UPDATE = "update"


CORRECTION_CUES: tuple[str, ...] = (
    r"\bcorrection\b",
    r"\bactually\b",
    r"\bmy bad\b",
    r"\bi swapped\b",
    r"\bscratch (?:that|the)\b",
    r"\bnot [\w.\-/]+\s*$",
    r"\b(?:is|are|it's|its) [\w.\-/ ]{1,30}, not\b",
    r",? not [\w.\-/]+[.!]",
    r"\binstead\b",
    r"\bswitch(?:ed|ing)? (?:to|my|the)\b",
    r"\bchange of plan\b",
    r"\bmoved (?:the|it|to|our)\b",
    r"\bnow (?:it'?s|is|are|goes)\b",
    r"\bi can do [\w ]+ now\b",
    r"\b(?:raised|lowered|increased|decreased|narrow(?:ed)?|widen(?:ed)?|extended|reduced)\b[^.]{0,40}\bto\b",
    r"\bgoes (?:up |down )?to\b",
    r"\bnew (?:ceiling|limit|budget|cap|deadline|date|address|number|endpoint|plan|window)\b",
    r"\bno longer\b",
    r"\bcleared (?:me|us) for\b",
    r"\bretracted\b",
    r"\bsupersed",
    "改成",
    "改为",
    "改到",
    "计划有变",
    "更正",
    "放宽到",
    "调整为",
    "变成",
)
_CUES = re.compile("|".join(CORRECTION_CUES), re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_IDENT = re.compile(r"\b(?=[\w.\-/]*\d)(?=[\w.\-/]*[A-Za-z])[\w][\w.\-/]{2,}\b|\b[\w\-]+\.[a-z]{1,4}\b")
_LATIN = re.compile(r"[a-z]")


def correction_cues(text: str) -> list[str]:
    """The correction / update cue phrases found in ``text`` (lower-cased), in order."""
    return [m.group(0).strip().lower() for m in _CUES.finditer(text)]


def values(text: str) -> set[str]:
    """Numbers in ``text`` with separators removed ("4,200" -> "4200"); the value-change signal."""
    return {re.sub(r"[.,](?=\d{3}\b)", "", m.group(0)) for m in _NUMBER.finditer(text)}


def subject_terms(text: str) -> set[str]:
    """Content terms: index terms minus stopwords and bare numbers; Latin words cut to 5 characters
    (truncation stemming: "registration" and "registering" meet as "regis"); identifiers kept whole."""
    out = set()
    for term in index_terms(text):
        if term in STOPWORDS or term.isdigit() or len(term) < 2:
            continue
        out.add(term[:5] if _LATIN.match(term) else term)
    out.update(m.group(0).lower() for m in _IDENT.finditer(text))
    return out


@dataclass(frozen=True, slots=True)
class ConflictPolicy:
    """Thresholds of :func:`decide`.

    Attributes:
        paraphrase_cos: cosine (dense) at or above which an unchanged statement is a paraphrase.
        min_overlap: subject overlap (share of the smaller term set) needed for an update.
        min_cos_update: cosine needed for a cue-marked update when the overlap is below
            ``strong_overlap``.
        strong_overlap: overlap that suffices for a cue-marked update whatever the cosine.
        value_cos, value_overlap: a value change without any cue is an update only above both
            (the same sentence with another number: "for 5 years" -> "for 6 years").
        passive_roles: roles whose records report rather than state (tool output, the agent's
            actions); they never supersede anything.
    """

    paraphrase_cos: float = 0.93
    min_overlap: float = 0.2
    min_cos_update: float = 0.35
    strong_overlap: float = 0.34
    value_cos: float = 0.6
    value_overlap: float = 0.4
    passive_roles: frozenset[str] = frozenset({"tool", "agent_action", "assistant_action", "function"})


DEFAULT_POLICY = ConflictPolicy()


@dataclass(frozen=True, slots=True)
class ConflictDecision:
    """Outcome for one new record: the relation, the existing record concerned (None for ``new``),
    the evidence (overlap, cosine, cues, values before/after) and a one-line reason."""

    relation: Relation
    target: MemoryRecord | None
    overlap: float
    cosine: float
    cues: tuple[str, ...]
    reason: str


class ConflictJudge(Protocol):
    """Optional second opinion (e.g. an LLM) on a proposed update or paraphrase; off by default."""

    def confirm(self, new: MemoryRecord, old: MemoryRecord, relation: Relation) -> bool:
        """True to accept the proposed relation between ``new`` and ``old``."""
        ...


def _overlap(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def decide(
    new: MemoryRecord,
    candidates: Sequence[tuple[MemoryRecord, float]],
    *,
    policy: ConflictPolicy = DEFAULT_POLICY,
    judge: ConflictJudge | None = None,
) -> ConflictDecision:
    """Classify ``new`` against ``candidates`` (current records of its namespace with their cosine
    to ``new``, any order). See the module docstring for the rules. Pure; no I/O."""
    cues = tuple(correction_cues(new.content))
    can_update = new.role not in policy.passive_roles and not new.content.rstrip().endswith(("?", "？"))
    new_terms = subject_terms(new.content)
    new_values = values(new.content)
    best: tuple[float, ConflictDecision] | None = None
    for old, cos in candidates:
        if old.id == new.id or old.namespace != new.namespace or not old.is_current:
            continue
        old_values = values(old.content)
        changed = bool(new_values and old_values and new_values != old_values)
        overlap = _overlap(new_terms, subject_terms(old.content))
        if cos >= policy.paraphrase_cos and not changed and not cues:
            decision = ConflictDecision(Relation.PARAPHRASE, old, overlap, cos, cues, f"paraphrase (cos {cos:.2f})")
            rank = 10.0 + cos
        elif (
            can_update
            and old.type is not MemoryType.CHATTER
            and (
                (
                    cues
                    and overlap >= policy.min_overlap
                    and (overlap >= policy.strong_overlap or cos >= policy.min_cos_update)
                )
                or (changed and cos >= policy.value_cos and overlap >= policy.value_overlap)
            )
        ):
            why = f"cues {list(cues)}" if cues else f"values {sorted(old_values)} -> {sorted(new_values)}"
            decision = ConflictDecision(
                Relation.UPDATE, old, overlap, cos, cues, f"update: {why}; overlap {overlap:.2f}, cos {cos:.2f}"
            )
            rank = overlap + cos
        else:
            continue
        if judge is not None and not judge.confirm(new, old, decision.relation):
            continue
        if best is None or rank > best[0]:
            best = (rank, decision)
    if best is None:
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, cues, "no conflicting record")
    return best[1]

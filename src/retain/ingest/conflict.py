"""Conflicts between a new record and what is already stored: paraphrase, update, or new.

No LLM is needed. A new record is compared with its nearest current records (dense and lexical
neighbours within the namespace) on four signals (:mod:`retain.ingest.signals`): subject overlap,
an aligned value change, correction cues and a negation flip.

Decision (first that applies):

1. **paraphrase**: cosine >= ``paraphrase_cos`` with no value change and no cue: the same fact said
   again; the caller may merge it into the existing record (both sources kept).
2. **update**: the new record states something (not a question, not tool output; an agent's
   thought revises only agent thoughts), the old record did not itself propose the new state
   ("switch to X" where X is what it said), and one of
   (a) a correction cue whose sentence overlaps the old record's subject, or a negation flip;
   (b) an aligned value change with high cosine and subject overlap;
   (c) a retraction: a sentence saying an item was retracted, withdrawn, cancelled or recalled names
   it by a value the old record holds in the same context ("Lindqvist 2022 is retracted" against
   "Included: ... Lindqvist 2022 (n=88) ..."): the old record reported the item as current (a record
   that itself reports the retraction is not superseded by it).
   The new record supersedes the candidate; with several, the highest ``overlap + cosine`` (plus
   0.5 for an aligned value change or a negation flip, 0.25 when both have the same role) wins.
   **Hard constraints** are superseded only by an *explicit correction*
   (:func:`retain.text.cues.explicit_cues`: "Actually, ...", "infra raised the budget to 12 minutes")
   whose sentence overlaps the constraint's subject or which comes with an aligned value change. A
   mid-clause marker ("somewhere Marta can actually relax"), a value change or a negation flip alone
   never retires one. When such a refused proposal would have won, no other candidate is superseded
   instead: the decision is ``new`` and carries the proposal as :attr:`ConflictDecision.held` for
   the caller to audit.
3. **new**: otherwise.

An optional :class:`ConflictJudge` (e.g. an LLM) may be plugged in to confirm or veto update and
paraphrase decisions; none is configured by default. Every decision carries its reason and scores.
Measured by ``benchmarks/supersede_detection.py`` (replaying scenario files through ``Memory.add``).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from retain.ingest.signals import (
    adopted,
    aligned_change,
    candidate_terms,
    cue_sentences,
    destinations,
    explicit_sentences,
    is_latin,
    may_update,
    names_retracted,
    negated_terms,
    retracted_items,
    stem,
    subject_terms,
    term_overlap,
    value_slots,
)
from retain.record import MemoryRecord, MemoryType
from retain.store import RecordFilter, Store
from retain.text.cues import correction_cues, explicit_cues
from retain.text.lexical import query_terms

__all__ = [
    "DEFAULT_POLICY",
    "ConflictDecision",
    "ConflictJudge",
    "ConflictPolicy",
    "Relation",
    "decide",
    "find_updates",
]


class Relation(enum.StrEnum):
    """How a new record relates to an existing one."""

    NEW = "new"
    PARAPHRASE = "paraphrase"
    UPDATE = "update"


# Cues naming an event the old record may itself report (then they echo it rather than correct it).
_ECHO = re.compile(r"^(retract|switch|moved|changed|cleared)", re.IGNORECASE)
_RETRACTION_NEWS = re.compile(r"\b(?:retract|withdr[ae]w|cancel|recall|discontinu)\w*", re.IGNORECASE)
_ARITHMETIC = re.compile(r"\d\s*[×x*=]\s*\d|\d\s*\+\s*\d")


@dataclass(frozen=True, slots=True)
class ConflictPolicy:
    """Thresholds of :func:`decide` (tuned on ``scenarios/dev``).

    Attributes:
        paraphrase_cos: cosine (dense) at or above which an unchanged statement is a paraphrase.
        min_overlap: subject overlap (share of the smaller term set) needed for a cue-marked update
            (overlap of the cue's sentence with the old record, or of the whole texts).
        min_cos_update: cosine needed for a cue-marked update when the overlap is below
            ``strong_overlap``.
        strong_overlap: overlap that suffices for a cue-marked update whatever the cosine.
        value_cos, value_overlap: an aligned value change without any cue is an update only above
            both (the same sentence with another number: "for 5 years" -> "for 6 years").
        max_new_terms: ... and only when the two records differ in at most this many subject terms
            (symmetric difference): "Bob is 31 years old" does not update "Alice is 30 years old".
        passive_roles: roles whose records report rather than state (tool output, the agent's
            actions); they never supersede anything.
        reflective_roles: roles of the agent's own reasoning; they supersede only records of a
            reflective role (a thought revises a thought, never what the user or a tool said).
    """

    paraphrase_cos: float = 0.93
    min_overlap: float = 0.2
    min_cos_update: float = 0.42
    strong_overlap: float = 0.34
    value_cos: float = 0.6
    value_overlap: float = 0.4
    max_new_terms: int = 1
    passive_roles: frozenset[str] = frozenset({"tool", "agent_action", "assistant_action", "function"})
    reflective_roles: frozenset[str] = frozenset({"agent_thought", "assistant_thought"})


DEFAULT_POLICY = ConflictPolicy()


@dataclass(frozen=True, slots=True)
class ConflictDecision:
    """Outcome for one new record.

    Attributes:
        relation: paraphrase, update or new.
        target: the existing record concerned (None for ``new``).
        overlap: subject overlap with the target, 0..1 (share of the smaller term set).
        cosine: cosine of the two embeddings, -1..1 (higher = more similar).
        cues: correction cues found in the new record (lower-cased).
        reason: one line naming the rule that fired and its evidence.
        signals: the update rules that fired: "cue", "negation", "value".
        rank: the winning candidate's score among the candidates (higher = stronger).
        held: for a ``new`` decision, the update of a hard constraint that the explicit-correction
            rule refused (its target stays current) and that would have won; None otherwise. The
            caller audits it (``Memory.add``: a refused "supersede" entry).
    """

    relation: Relation
    target: MemoryRecord | None
    overlap: float
    cosine: float
    cues: tuple[str, ...]
    reason: str
    signals: tuple[str, ...] = ()
    rank: float = 0.0
    held: ConflictDecision | None = None

    def scores(self) -> dict[str, float]:
        """The numeric evidence, rounded to 4 places: overlap, cosine, rank (for audit entries)."""
        return {"overlap": round(self.overlap, 4), "cosine": round(self.cosine, 4), "rank": round(self.rank, 4)}


class ConflictJudge(Protocol):
    """Optional second opinion (e.g. an LLM) on a proposed update or paraphrase; off by default."""

    def confirm(self, new: MemoryRecord, old: MemoryRecord, relation: Relation) -> bool:
        """True to accept the proposed relation between ``new`` and ``old``."""
        ...


@dataclass(frozen=True, slots=True)
class _NewRecord:
    """What :func:`decide` reads of the new record, worked out once and shared by every candidate.

    Attributes:
        cues: its live correction cues (emptied for a thought repeating a change already stated).
        can_update: it states something (not a passive role, not a question).
        reflective: it is the agent's own reasoning (``policy.reflective_roles``).
        terms: :func:`subject_terms` of the whole text; cue_terms: of its cue sentences.
        negated: :func:`negated_terms`; slots: :func:`value_slots`; computed: it shows arithmetic.
        cue_values: the values its cue sentences state.
        explicit: its explicit cues; explicit_terms: subject terms of their sentences.
        retracted: value slots of its retraction sentences (:func:`retracted_items`).
        destinations: what its cue sentences switch to (:func:`destinations`).
    """

    cues: tuple[str, ...]
    can_update: bool
    reflective: bool
    terms: set[str]
    cue_terms: set[str]
    negated: set[str]
    slots: dict[str, set[str]]
    computed: bool
    cue_values: set[str]
    explicit: tuple[str, ...]
    explicit_terms: set[str]
    retracted: dict[str, set[str]]
    destinations: list[set[str]]


def _read_new(
    new: MemoryRecord, candidates: Sequence[tuple[MemoryRecord, float]], policy: ConflictPolicy
) -> _NewRecord:
    """The :class:`_NewRecord` of ``new``; ``candidates`` tell whether a thought's change was already stated."""
    text = new.content
    cues = tuple(correction_cues(text))
    reflective = new.role in policy.reflective_roles
    cue_text = cue_sentences(text)
    cue_terms = subject_terms(cue_text) if cues else set()
    cue_values = set(value_slots(cue_text)) if cues else set()
    explicit = tuple(explicit_cues(text)) if cues else ()
    if reflective and cue_values:  # a thought repeating a change someone else already stated
        stated = (set(value_slots(o.content)) for o, _ in candidates if o.role not in policy.reflective_roles)
        if any(cue_values <= vals for vals in stated):
            cues = ()
    return _NewRecord(
        cues=cues,
        can_update=new.role not in policy.passive_roles and not text.rstrip().endswith(("?", "？")),
        reflective=reflective,
        terms=subject_terms(text),
        cue_terms=cue_terms,
        negated=negated_terms(text),
        slots=value_slots(text),
        computed=bool(_ARITHMETIC.search(text)),
        cue_values=cue_values,
        explicit=explicit,
        explicit_terms=subject_terms(explicit_sentences(text)) if explicit else set(),
        retracted=retracted_items(text),
        destinations=destinations(cue_text),
    )


def decide(
    new: MemoryRecord,
    candidates: Sequence[tuple[MemoryRecord, float]],
    *,
    policy: ConflictPolicy = DEFAULT_POLICY,
    judge: ConflictJudge | None = None,
) -> ConflictDecision:
    """Classify ``new`` against ``candidates`` (current records of its namespace with their cosine
    to ``new``, any order). See the module docstring for the rules. Pure; no I/O apart from what
    ``judge`` does. Candidates of another namespace, superseded ones and ``new`` itself are ignored."""
    facts = _read_new(new, candidates, policy)
    best: ConflictDecision | None = None
    held: ConflictDecision | None = None  # the best update the hard-constraint rule refused
    for old, cos in candidates:
        if old.id == new.id or old.namespace != new.namespace or not old.is_current:
            continue
        decision, refused = _classify(new, facts, old, cos, policy)
        if decision is None:
            continue
        if refused:
            if held is None or decision.rank > held.rank:
                held = dataclasses.replace(
                    decision, reason=f"refused, hard constraint without an explicit correction: {decision.reason}"
                )
            continue
        if best is not None and decision.rank <= best.rank:
            continue
        if judge is not None and not judge.confirm(new, old, decision.relation):
            continue
        best = decision
    if held is not None and (best is None or held.rank > best.rank):
        # The proposal was about the constraint: no weaker candidate takes its place.
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, facts.cues, "hard constraint kept", held=held)
    if best is None:
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, facts.cues, "no conflicting record")
    return best


def _classify(
    new: MemoryRecord, facts: _NewRecord, old: MemoryRecord, cos: float, policy: ConflictPolicy
) -> tuple[ConflictDecision | None, bool]:
    """The paraphrase or update decision of ``new`` against one current candidate ``old`` (None when
    neither applies), and whether the hard-constraint rule refused that update."""
    old_terms = candidate_terms(old.content)
    old_slots = value_slots(old.content)
    overlap = term_overlap(facts.terms, old_terms)
    changed = bool(facts.slots and old_slots and set(facts.slots) != set(old_slots))
    if cos >= policy.paraphrase_cos and not changed and not facts.cues:
        reason = f"paraphrase (cos {cos:.2f})"
        return ConflictDecision(Relation.PARAPHRASE, old, overlap, cos, facts.cues, reason, (), 10.0 + cos), False
    if (
        not facts.can_update
        or (facts.reflective and old.role not in policy.reflective_roles)
        or adopted(facts.destinations, old_terms)
    ):
        return None, False
    return _update(new, facts, old, cos, old_terms, old_slots, overlap, policy)


def _update(
    new: MemoryRecord,
    facts: _NewRecord,
    old: MemoryRecord,
    cos: float,
    old_terms: frozenset[str],
    old_slots: dict[str, set[str]],
    overlap: float,
    policy: ConflictPolicy,
) -> tuple[ConflictDecision | None, bool]:
    """The update rules of :func:`decide` for one candidate: the decision when a signal fires (None
    otherwise), and whether a hard constraint refuses it for want of an explicit correction."""
    old_terms_all = old_terms | {w[:2] for w in old_terms if is_latin(w)} | set(old_slots)
    live = [c for c in facts.cues if not (_ECHO.match(c) and stem(c.split()[0]) in old_terms)]
    flip = sorted(w for w in facts.negated if w in old_terms_all)
    aligned = [] if facts.computed else aligned_change(facts.slots, old_slots)
    restated = bool(facts.cue_values) and facts.cue_values <= set(old_slots)
    cue_overlap = max(overlap, term_overlap(facts.cue_terms, old_terms)) if live else 0.0
    signals: list[str] = []
    if live and _cue_rule(cue_overlap, cos, restated=restated, policy=policy):
        signals.append("cue")
    if flip and overlap >= policy.min_overlap:
        signals.append("negation")
    same_subject = len(facts.terms ^ old_terms) <= policy.max_new_terms  # "Bob is 31" is not "Alice is 30"
    if aligned and (
        (cos >= policy.value_cos and overlap >= policy.value_overlap and same_subject)
        or (live and cos >= policy.min_cos_update)
    ):
        signals.append("value")
    reports_it = bool(_RETRACTION_NEWS.search(old.content))  # the notice itself, not the item
    retracts = facts.retracted and not facts.reflective and not reports_it
    named = names_retracted(facts.retracted, old_slots) if retracts else []
    if named:
        signals.append("retraction")
    if not signals:
        return None, False
    # A hard constraint yields only to an explicit correction: a cue opening a sentence or
    # clause whose sentence is about it, or such a cue with an aligned value change.
    live_set = set(live)
    refused = old.type is MemoryType.HARD_CONSTRAINT and not _explicit_correction(
        [c for c in facts.explicit if c in live_set],
        max(overlap, term_overlap(facts.explicit_terms, old_terms)),
        cos,
        restated=restated,
        value="value" in signals,
        policy=policy,
    )
    evidence = _evidence(named, live, flip, aligned)
    rank = overlap + cos + (0.5 if aligned else 0.0) + (0.5 if flip else 0.0) + 0.25 * (old.role == new.role)
    reason = f"update ({'+'.join(signals)}): {'; '.join(evidence)}; overlap {overlap:.2f}, cos {cos:.2f}"
    return ConflictDecision(Relation.UPDATE, old, overlap, cos, facts.cues, reason, tuple(signals), rank), refused


def _evidence(
    named: Sequence[str], live: Sequence[str], flip: Sequence[str], aligned: Sequence[tuple[str, str]]
) -> list[str]:
    """The evidence clauses of an update's reason: retracted items, cues, negated terms, value changes."""
    evidence = []
    if named:
        evidence.append(f"retracts {named}")
    if live:
        evidence.append(f"cues {live}")
    if flip:
        evidence.append(f"negates {flip}")
    if aligned:
        evidence.append("values " + ", ".join(f"{o} -> {n}" for o, n in aligned[:3]))
    return evidence


def _explicit_correction(
    live_explicit: Sequence[str],
    overlap: float,
    cos: float,
    *,
    restated: bool,
    value: bool,
    policy: ConflictPolicy,
) -> bool:
    """True when explicit cues (:func:`explicit_cues`, echoes removed) correct the old record: the
    "cue" rule of :func:`decide` holds for them (``overlap``: that of their sentences, or of the whole
    texts), or an aligned value change comes with them at the cosine a cue-marked update needs."""
    if not live_explicit:
        return False
    if value and cos >= policy.min_cos_update:
        return True
    return _cue_rule(overlap, cos, restated=restated, policy=policy)


def _cue_rule(overlap: float, cos: float, *, restated: bool, policy: ConflictPolicy) -> bool:
    """The "cue" signal of :func:`decide` for live cues: they do not merely restate the old values,
    and the texts overlap enough (``strong_overlap`` alone, or ``min_overlap`` with the cosine of a
    cue-marked update)."""
    return (
        not restated
        and overlap >= policy.min_overlap
        and (overlap >= policy.strong_overlap or cos >= policy.min_cos_update)
    )


def find_updates(
    store: Store,
    namespace: str,
    records: Sequence[MemoryRecord],
    *,
    policy: ConflictPolicy = DEFAULT_POLICY,
    judge: ConflictJudge | None = None,
    window: int = 10,
) -> list[tuple[MemoryRecord, ConflictDecision]]:
    """The updates among ``records`` (new, embedded, not yet stored; in arrival order).

    Each record is compared (:func:`decide`) with the current records of ``namespace`` (any tier)
    that are among its ``window`` dense neighbours or its ``window`` best BM25 matches, and with the
    records before it in ``records``: all of them while they are at most ``4 * window``, else, the same
    way as the stored ones, its ``window`` nearest by cosine and its ``window`` best term matches among
    them (:class:`_Earlier`), so the rule evaluations of a batch grow linearly with its size, not with
    its square. A record is superseded at most once per call.

    Returns:
        (new record, decision) pairs with ``decision.relation == Relation.UPDATE``; the superseded
        record is ``decision.target``. Also, in the same order, the pairs whose decision holds a
        refused update of a hard constraint (``decision.held``, any relation): the caller audits
        them; their hard constraint stays current. Split parts (``metadata["split_group"]``) never
        take part.
    """
    out: list[tuple[MemoryRecord, ConflictDecision]] = []
    earlier = _Earlier(window)
    retired: set[str] = set()
    everywhere = RecordFilter(tiers=None)
    for rec in records:
        if rec.embedding is None or "split_group" in rec.metadata:
            continue
        if not may_update(rec.content):  # no cue, number or negation: no rule of decide() can fire
            earlier.append(rec)
            continue
        terms = query_terms(rec.content)
        ids = [h.id for h in store.search_vector(namespace, rec.embedding, everywhere, limit=window)]
        if store.supports_lexical:
            ids += [h.id for h in store.search_lexical(namespace, terms, everywhere, limit=window)]
        pool = store.get(namespace, list(dict.fromkeys(ids))) + earlier.candidates(rec, terms)
        candidates = [(r, _cosine(rec, r)) for r in pool if r.id not in retired and r.embedding is not None]
        decision = decide(rec, candidates, policy=policy, judge=judge)
        if decision.relation is Relation.UPDATE and decision.target is not None:
            retired.add(decision.target.id)
            out.append((rec, decision))
        elif decision.held is not None:
            out.append((rec, decision))
        earlier.append(rec)
    return out


class _Earlier:
    """The records of a :func:`find_updates` batch seen so far, and which of them a new record is
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


def _cosine(a: MemoryRecord, b: MemoryRecord) -> float:
    assert a.embedding is not None and b.embedding is not None
    x, y = a.embedding.astype(np.float64), b.embedding.astype(np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0

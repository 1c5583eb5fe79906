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
import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from retain.ingest.conflict_cues import is_question
from retain.ingest.conflict_features import (
    FEATURES,
    TextReading,
    pair_features,
    pool_contexts,
    pool_rows,
    read_text,
)
from retain.ingest.conflict_guards import (
    TRUSTED_ROLES,
    another_quantity,
    asks_without_value,
    evidence_of_change,
    same_slot,
)
from retain.ingest.conflict_model import ConflictModel
from retain.ingest.signals import (
    adopted,
    aligned_change,
    candidate_terms,
    cue_sentences,
    destinations,
    explicit_sentences,
    is_latin,
    names_retracted,
    negated_terms,
    retracted_items,
    stem,
    subject_terms,
    term_overlap,
    value_slots,
)
from retain.record import MemoryRecord, MemoryType
from retain.text.cues import correction_cues, explicit_cues

__all__ = [
    "DEFAULT_POLICY",
    "ConflictDecision",
    "ConflictJudge",
    "ConflictPolicy",
    "Relation",
    "decide",
    "decide_all",
    "rule_relations",
]

_log = logging.getLogger("retain.conflict")


class Relation(enum.StrEnum):
    """How a new record relates to an existing one."""

    NEW = "new"
    PARAPHRASE = "paraphrase"
    UPDATE = "update"
    CONFLICT = "conflict"


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
        probability: the learned model's calibrated P(update) for the pair (0..1, higher = more
            likely an update), or None for a decision of the rules alone.
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
    probability: float | None = None

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
        can_update=new.role not in policy.passive_roles and not is_question(text),
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
    model: ConflictModel | None = None,
) -> ConflictDecision:
    """Classify ``new`` against ``candidates`` (current records of its namespace with their cosine
    to ``new``, any order). See the module docstring for the rules. Pure; no I/O apart from what
    ``judge`` does. Candidates of another namespace, superseded ones and ``new`` itself are ignored.
    With a ``model``, the learned decision of :func:`decide_all` (its strongest update, else its
    first conflict, else new)."""
    if model is not None:
        found = decide_all(new, candidates, model=model, policy=policy, judge=judge)
        for relation in (Relation.UPDATE, Relation.CONFLICT):
            for d in found:
                if d.relation is relation:
                    return d
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, (), "no conflicting record")
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


def decide_all(
    new: MemoryRecord,
    candidates: Sequence[tuple[MemoryRecord, float]],
    *,
    model: ConflictModel,
    policy: ConflictPolicy = DEFAULT_POLICY,
    judge: ConflictJudge | None = None,
    batch: Collection[str] = (),
) -> list[ConflictDecision]:
    """The learned decision of ``new`` against every candidate (current records of its namespace with
    their cosine to ``new``): the updates (every candidate whose calibrated probability,
    :meth:`ConflictModel.probability`, reaches ``model.threshold``: a correction retires each current
    statement of its slot, the agent's recaps included) and the open conflicts, strongest first.

    Asymmetric caution for a hard constraint: it is updated only at ``model.hard_threshold`` or above,
    by a same-slot change (:func:`~retain.ingest.conflict_guards.same_slot`), from a new record of a
    trusted role (user, system) that is neither hedged nor a question nor a hard constraint of the same
    call (``batch``: ids of the records added with ``new``); anything less that reaches
    ``model.conflict_threshold``, or states another value in its slot, is a :attr:`Relation.CONFLICT`
    (both stay current). A hedged or asking text without a value updates nothing and opens nothing. A
    paraphrase candidate (the rules of :func:`decide`) means no update. A ``judge`` veto turns an
    update of a hard constraint into a conflict and drops any other; a judge that raises leaves the
    decision as it is. Pure apart from the judge."""
    live = [
        (old, cos) for old, cos in candidates if old.id != new.id and old.namespace == new.namespace and old.is_current
    ]
    rules = rule_relations(new, live, policy)
    if not live or rules is None:
        return []
    cues = tuple(correction_cues(new.content))
    order = sorted(range(len(live)), key=lambda i: live[i][0].id)  # ULIDs sort by creation time
    position = {i: rank for rank, i in enumerate(order)}
    contexts = pool_contexts([c for _, c in live], [position[i] for i in range(len(live))], rules)
    reading = read_text(new.content)
    new_hard = new.type is MemoryType.HARD_CONSTRAINT
    rows = pool_rows(
        np.vstack(
            [
                pair_features(
                    reading,
                    read_text(old.content),
                    cos=cos,
                    new_role=new.role,
                    old_role=old.role,
                    new_hard=new_hard,
                    old_hard=old.type is MemoryType.HARD_CONSTRAINT,
                    context=ctx,
                )
                for (old, cos), ctx in zip(live, contexts, strict=True)
            ]
        )
    )
    probability = model.probability(rows)
    out: list[ConflictDecision] = []
    for (old, cos), p, row in zip(live, probability, rows, strict=True):
        if not evidence_of_change(row) or another_quantity(reading, read_text(old.content), row):
            continue
        relation = _learned_relation(new, reading, old, float(p), row, model, batch)
        if relation is None:
            continue
        if judge is not None and relation is Relation.UPDATE and not _judged(judge, new, old, relation):
            if old.type is not MemoryType.HARD_CONSTRAINT:
                continue
            relation = Relation.CONFLICT
        overlap = float(row[_COL["overlap"]])
        reason = f"{relation.value} (model p {p:.2f}, overlap {overlap:.2f}, cos {cos:.2f})"
        signals = tuple(name for name in _SIGNALS if row[_COL[name]] > 0)
        out.append(ConflictDecision(relation, old, overlap, cos, cues, reason, signals, float(p), probability=float(p)))
    out.sort(key=lambda d: (d.relation is not Relation.UPDATE, -d.rank))
    return _second_targets(out, model.threshold + _SECOND_MARGIN)


_COL = {name: i for i, name in enumerate(FEATURES)}
_SECOND_MARGIN = 0.2
"""How much more than ``threshold`` an update beyond the likeliest one needs: most corrections retire
one statement, and the pool holds many records with a value of the same kind."""


def _second_targets(found: list[ConflictDecision], floor: float) -> list[ConflictDecision]:
    """``found`` (updates first, strongest first) with each update after the first kept only at
    probability ``floor`` or above, or when its target is the agent's own restatement (a thought or a
    recap: a correction retires those too); a hard constraint below it becomes an open conflict."""
    out: list[ConflictDecision] = []
    updates = 0
    for d in found:
        if d.relation is Relation.UPDATE:
            updates += 1
            restatement = d.target is not None and (
                d.target.role in DEFAULT_POLICY.reflective_roles or read_text(d.target.content).recap
            )
            if updates > 1 and d.rank < floor and not restatement:
                if d.target is None or d.target.type is not MemoryType.HARD_CONSTRAINT:
                    continue
                d = dataclasses.replace(d, relation=Relation.CONFLICT)
        out.append(d)
    return out


_SIGNALS = (
    "cue",
    "aligned",
    "slot_match",
    "date_change",
    "time_change",
    "amount_change",
    "update_words",
    "flip",
    "retraction",
    "authority",
)


def rule_relations(
    new: MemoryRecord, candidates: Sequence[tuple[MemoryRecord, float]], policy: ConflictPolicy = DEFAULT_POLICY
) -> list[float] | None:
    """The shipped rules' verdict on each candidate, the prior of the learned model: 1.0 update, 0.5
    an update of a hard constraint refused for want of an explicit correction, 0.0 neither; None
    when a candidate is a paraphrase of ``new`` (then nothing is updated)."""
    facts = _read_new(new, candidates, policy)
    out: list[float] = []
    for old, cos in candidates:
        decision, refused = _classify(new, facts, old, cos, policy)
        if decision is not None and decision.relation is Relation.PARAPHRASE:
            return None
        out.append(0.0 if decision is None else (0.5 if refused else 1.0))
    return out


def _learned_relation(
    new: MemoryRecord,
    reading: TextReading,
    old: MemoryRecord,
    p: float,
    row: npt.NDArray[np.float64],
    model: ConflictModel,
    batch: Collection[str],
) -> Relation | None:
    """Update, conflict or nothing for one candidate of :func:`decide_all` at calibrated probability ``p``.

    A hedged or asking text without a value (:func:`asks_without_value`) is nothing. A record that is
    not a hard constraint is updated at ``model.threshold``. A hard constraint is updated only when the
    pair is the same slot (:func:`same_slot`), the new record's role is trusted (:data:`TRUSTED_ROLES`),
    it is neither hedged nor a question nor a hard constraint of the same call, and ``p`` reaches
    ``model.hard_threshold``; anything less at ``model.conflict_threshold``, or stating another value of
    the slot, is an open conflict."""
    if asks_without_value(reading):
        return None
    if old.type is not MemoryType.HARD_CONSTRAINT:
        return Relation.UPDATE if p >= model.threshold else None
    if reading.hedged or reading.question:
        return None
    slot = same_slot(row)
    both_new = old.id in batch and new.type is MemoryType.HARD_CONSTRAINT
    if p >= model.hard_threshold and slot and new.role in TRUSTED_ROLES and not both_new:
        return Relation.UPDATE
    value_claim = slot and row[_COL["overlap"]] >= _SLOT_OVERLAP
    if p >= model.conflict_threshold or value_claim:
        return Relation.CONFLICT
    return None


_SLOT_OVERLAP = 0.2  # a new value of a hard constraint's kind in a text sharing this much of its subject


def _judged(judge: ConflictJudge, new: MemoryRecord, old: MemoryRecord, relation: Relation) -> bool:
    """The judge's verdict; True (the decision stands) when the judge raises (logged)."""
    try:
        return bool(judge.confirm(new, old, relation))
    except Exception as exc:  # a judge's failure never loses or changes a decision
        _log.warning("conflict judge failed (%s); the decision stands", type(exc).__name__)
        return True


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

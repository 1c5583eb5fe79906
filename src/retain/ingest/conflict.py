"""Conflicts between a new record and what is already stored: paraphrase, update, or new.

No LLM is needed. A new record is compared with its nearest current records (dense and lexical
neighbours within the namespace) on four signals:

* **subject overlap**: do they talk about the same slot? Share of content terms in common
  (stopwords removed, Latin words truncated to 5 characters as a crude stemmer, CJK as character
  bigrams), plus shared identifiers (codes with digits such as "CR-22741", "payments.spec.ts");
* **aligned value change**: a number of the old record is gone and a new number stands in the
  same slot, i.e. the words around the two numbers overlap ("for 5 years" -> "for 6 years",
  "budget is 35,000" -> "budget is 38,500", "一共5个人" -> "一共6个人"). Numbers that merely
  appear in one record and not the other (a computation, a listing) are no change;
* **correction cues** in the new record: "actually", "switched to", "改成", ...
  (:func:`retain.text.cues.correction_cues`). A cue that the old record already carries ("retracted"
  after a retraction notice) is an echo, not a correction of it;
* **negation flip**: "X, not Y" / "not Y:" where Y is said in the old record ("it's orders.spec.ts,
  not payments" against "the payments tests flake").

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
import functools
import math
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from retain.record import MemoryRecord, MemoryType
from retain.store import RecordFilter, Store
from retain.text.cues import correction_cues, explicit_cues, has_cue, mentions_cue
from retain.text.lexical import STOPWORDS, index_terms, query_terms

__all__ = [
    "DEFAULT_POLICY",
    "ConflictDecision",
    "ConflictJudge",
    "ConflictPolicy",
    "Relation",
    "decide",
    "find_updates",
    "negated_terms",
    "subject_terms",
    "value_slots",
    "values",
]


class Relation(enum.StrEnum):
    """How a new record relates to an existing one."""

    NEW = "new"
    PARAPHRASE = "paraphrase"
    UPDATE = "update"


# Cues naming an event the old record may itself report (then they echo it rather than correct it).
_ECHO = re.compile(r"^(retract|switch|moved|changed|cleared)", re.IGNORECASE)
_NEGATION = re.compile(
    r"(?:^|[,;(]\s*|\bit'?s\s+)not ([\w.\-/]+)(?:\s+[a-z]{1,3})?(?=\s*[.,:;!)]|\s*$)", re.IGNORECASE | re.MULTILINE
)
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*(?:月\d+[日号])?")
_DATE = re.compile(r"^\d+月\d+[日号]$")
# A number right after one of these names a thing (parcel number 137, order #12), or right after the
# one word that opens the text ("Note 4: ..."), it is no value.
_ID_BEFORE = re.compile(
    r"(?:\b(?:number|no|nr|id|ticket|order|parcel|case|issue|invoice|room|flight|seat|step|item|part|page|row|"
    r"line|chapter|version|v|note|entry|task|option|lesson|section|figure|table|question|point|episode|"
    r"platform|gate|test|run|build|job|batch|ref)\.?|#|第)\s*$|^\s*[A-Z][a-z]+\s*$|\d-$",
    re.IGNORECASE,
)
_CJK_STOP = frozenset("的了是在我你他她它们和也都就要吧呢啊吗这那有还")
_DESTINATION = re.compile(r"\b(?:to|for)\s+([^\d.,;:!?\n]{2,40})(?=[.,;:!?\n]|$)")
_IDENT = re.compile(r"\b(?=[\w.\-/]*\d)(?=[\w.\-/]*[A-Za-z])[\w][\w.\-/]{2,}\b|\b[\w\-]+\.[a-z]{1,4}\b")
_LATIN = re.compile(r"[a-z]")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_LABEL_END = re.compile(r"\s*(?:$|[:;,)\]]|[.!?](?:\s|$)|\s+[^\W\d_]+=)")
_RETRACTION = re.compile(r"\b(?:retracted|withdrawn|cancell?ed|recalled|discontinued)\b", re.IGNORECASE)
_RETRACTION_NEWS = re.compile(r"\b(?:retract|withdr[ae]w|cancel|recall|discontinu)\w*", re.IGNORECASE)
_ARITHMETIC = re.compile(r"\d\s*[×x*=]\s*\d|\d\s*\+\s*\d")


def negated_terms(text: str) -> set[str]:
    """Stemmed words a negation in ``text`` rejects: "orders.spec.ts, not payments." -> {"payme"};
    "Not TZ: ..." -> {"tz"}. Only a negated word at a clause end or before a colon counts."""
    return {_stem(m.group(1).lower()) for m in _NEGATION.finditer(text)}


def values(text: str) -> set[str]:
    """Numbers in ``text`` with thousands separators removed ("4,200" -> "4200")."""
    return {_norm(m.group(0)) for m in _NUMBER.finditer(text)}


def value_slots(text: str, window: int = 3) -> dict[str, set[str]]:
    """Each number of ``text`` (normalised as in :func:`values`) with its slot: the stemmed words
    within ``window`` words on either side (CJK: the characters within ``window`` characters), plus
    "#date" for a CJK month-day date and "#id" for a number naming a thing ("parcel number 137")."""
    slots: dict[str, set[str]] = {}
    for m in _NUMBER.finditer(text):
        left = text[max(0, m.start() - 60) : m.start()]
        right = text[m.end() : m.end() + 60]
        ctx = set(_context_words(left)[-window:]) | set(_context_words(right)[:window])
        ctx |= set(_CJK_CHAR.findall(left[-window:])) | set(_CJK_CHAR.findall(right[:window]))
        ctx -= _CJK_STOP  # function characters (了, 的, ...) share no slot
        if _DATE.match(m.group(0)):
            ctx.add("#date")
        if _ID_BEFORE.search(left) or _is_label(left, right):
            ctx.add("#id")
        slots.setdefault(_norm(m.group(0)), set()).update(ctx)
    return slots


def _is_label(left: str, right: str) -> bool:
    """A number right after a content word and closing its clause ("distractor turn 5", "Tracking check
    3: ...") labels a thing; a quantity is followed by its unit or object ("for 6 years")."""
    before = _WORD.findall(left[-40:])
    if not before or left[-1:] not in (" ",) or before[-1].lower() in STOPWORDS:
        return False
    return bool(_LABEL_END.match(right))


def subject_terms(text: str) -> set[str]:
    """Content terms: index terms minus stopwords and bare numbers; Latin words cut to 5 characters
    (truncation stemming: "registration" and "registering" meet as "regis"); identifiers kept whole."""
    out = set()
    for term in index_terms(text):
        if term in STOPWORDS or term.isdigit() or term in _CJK_STOP or (len(term) < 2 and not _CJK_CHAR.match(term)):
            continue
        out.add(_stem(term))
    out.update(m.group(0).lower() for m in _IDENT.finditer(text))
    return out


def _norm(number: str) -> str:
    return re.sub(r"[.,](?=\d{3}\b)", "", number)


def _stem(term: str) -> str:
    return term[:5] if _LATIN.match(term) else term


def _context_words(text: str) -> list[str]:
    return [_stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in STOPWORDS and not _CJK_CHAR.match(w)]


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


def _overlap(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _aligned_change(new: dict[str, set[str]], old: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(old value, new value) pairs where an old number is gone and a new one shares its slot;
    none when the two name different things (parcel number 136 vs parcel number 137)."""
    new_ids = {v for v, ctx in new.items() if "#id" in ctx}
    old_ids = {v for v, ctx in old.items() if "#id" in ctx}
    if new_ids and old_ids and not new_ids & old_ids:
        return []
    gone = [v for v in old if v not in new]
    came = [v for v in new if v not in old]
    return [(o, n) for o in gone for n in came if old[o] & new[n] and "#id" not in old[o] | new[n]]


def _destinations(cue_text: str) -> list[set[str]]:
    """Subject terms of what the cue sentences ``cue_text`` (:func:`_cue_sentences`) switch *to*
    ("switch to the oiled oak block"); :func:`decide` drops an old record that already says one of
    them (:func:`_adopted`)."""
    return [dest for m in _DESTINATION.finditer(cue_text) if (dest := subject_terms(m.group(1)))]


def _adopted(destinations: Sequence[set[str]], old_terms: AbstractSet[str]) -> bool:
    """True when the old record already says what the new one switches to (``destinations``, from
    :func:`_destinations`): it proposed the new state rather than contradicting it."""
    return any(dest <= old_terms for dest in destinations)


@functools.lru_cache(maxsize=1 << 14)
def _old_terms(text: str) -> frozenset[str]:
    """:func:`subject_terms` of a candidate's text, memoised: a record is a candidate of many new ones."""
    return frozenset(subject_terms(text))


@functools.lru_cache(maxsize=1024)
def _retracted_items(text: str) -> dict[str, set[str]]:
    """Value slots (:func:`value_slots`) of the sentences of ``text`` that report a retraction."""
    sentences = [m.group(0) for m in _SENTENCE.finditer(text) if _RETRACTION.search(m.group(0))]
    return value_slots(" ".join(sentences)) if sentences else {}


def _names_retracted(retracted: dict[str, set[str]], old_slots: dict[str, set[str]]) -> list[str]:
    """Values the old record holds in a context sharing a term with the retraction's context."""
    return sorted(v for v, ctx in retracted.items() if v in old_slots and ctx & old_slots[v])


def _cue_sentences(text: str) -> str:
    return " ".join(s.group(0) for s in _SENTENCE.finditer(text) if has_cue(s.group(0)))


def _explicit_sentences(text: str) -> str:
    return " ".join(s.group(0) for s in _SENTENCE.finditer(text) if explicit_cues(s.group(0)))


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
    text = new.content
    cues = tuple(correction_cues(text))
    can_update = new.role not in policy.passive_roles and not text.rstrip().endswith(("?", "？"))
    reflective = new.role in policy.reflective_roles
    new_terms = subject_terms(text)
    cue_text = _cue_sentences(text)
    cue_terms = subject_terms(cue_text) if cues else set()
    negated = negated_terms(text)
    new_slots = value_slots(text)
    computed = bool(_ARITHMETIC.search(text))
    cue_values = set(value_slots(cue_text)) if cues else set()
    explicit = tuple(explicit_cues(text)) if cues else ()
    explicit_terms = subject_terms(_explicit_sentences(text)) if explicit else set()
    retracted = _retracted_items(text)
    if reflective and cue_values:  # a thought repeating a change someone else already stated
        stated = (set(value_slots(o.content)) for o, _ in candidates if o.role not in policy.reflective_roles)
        if any(cue_values <= vals for vals in stated):
            cues = ()
    best: ConflictDecision | None = None
    held: ConflictDecision | None = None  # the best update the hard-constraint rule refused
    destinations = _destinations(cue_text)  # once, not per candidate
    for old, cos in candidates:
        if old.id == new.id or old.namespace != new.namespace or not old.is_current:
            continue
        old_terms = _old_terms(old.content)
        old_slots = value_slots(old.content)
        overlap = _overlap(new_terms, old_terms)
        changed = bool(new_slots and old_slots and set(new_slots) != set(old_slots))
        if cos >= policy.paraphrase_cos and not changed and not cues:
            decision = ConflictDecision(
                Relation.PARAPHRASE, old, overlap, cos, cues, f"paraphrase (cos {cos:.2f})", (), 10.0 + cos
            )
        elif (
            not can_update
            or (reflective and old.role not in policy.reflective_roles)
            or _adopted(destinations, old_terms)
        ):
            continue
        else:
            old_terms_all = old_terms | {w[:2] for w in old_terms if _LATIN.match(w)} | set(old_slots)
            live = [c for c in cues if not (_ECHO.match(c) and _stem(c.split()[0]) in old_terms)]
            live_set = set(live)
            flip = sorted(w for w in negated if w in old_terms_all)
            aligned = [] if computed else _aligned_change(new_slots, old_slots)
            restated = bool(cue_values) and cue_values <= set(old_slots)
            cue_overlap = max(overlap, _overlap(cue_terms, old_terms)) if live else 0.0
            signals: list[str] = []
            if live and _cue_rule(cue_overlap, cos, restated=restated, policy=policy):
                signals.append("cue")
            if flip and overlap >= policy.min_overlap:
                signals.append("negation")
            same_subject = len(new_terms ^ old_terms) <= policy.max_new_terms  # "Bob is 31" is not "Alice is 30"
            if aligned and (
                (cos >= policy.value_cos and overlap >= policy.value_overlap and same_subject)
                or (live and cos >= policy.min_cos_update)
            ):
                signals.append("value")
            reports_it = bool(_RETRACTION_NEWS.search(old.content))  # the notice itself, not the item
            named = _names_retracted(retracted, old_slots) if retracted and not reflective and not reports_it else []
            if named:
                signals.append("retraction")
            if not signals:
                continue
            # A hard constraint yields only to an explicit correction: a cue opening a sentence or
            # clause whose sentence is about it, or such a cue with an aligned value change.
            refused = old.type is MemoryType.HARD_CONSTRAINT and not _explicit_correction(
                [c for c in explicit if c in live_set],
                max(overlap, _overlap(explicit_terms, old_terms)),
                cos,
                restated=restated,
                value="value" in signals,
                policy=policy,
            )
            evidence = []
            if named:
                evidence.append(f"retracts {named}")
            if live:
                evidence.append(f"cues {live}")
            if flip:
                evidence.append(f"negates {flip}")
            if aligned:
                evidence.append("values " + ", ".join(f"{o} -> {n}" for o, n in aligned[:3]))
            rank = overlap + cos + (0.5 if aligned else 0.0) + (0.5 if flip else 0.0) + 0.25 * (old.role == new.role)
            decision = ConflictDecision(
                Relation.UPDATE,
                old,
                overlap,
                cos,
                cues,
                f"update ({'+'.join(signals)}): {'; '.join(evidence)}; overlap {overlap:.2f}, cos {cos:.2f}",
                tuple(signals),
                rank,
            )
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
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, cues, "hard constraint kept", held=held)
    if best is None:
        return ConflictDecision(Relation.NEW, None, 0.0, 0.0, cues, "no conflicting record")
    return best


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
    them (:class:`_Earlier`; comparing with every earlier one made a batch of n records cost
    O(n^2) rule evaluations: minutes for a few thousand turns). A record is superseded at most once per call.

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
        if not _may_update(rec.content):  # no cue, number or negation: no rule of decide() can fire
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


def _may_update(text: str) -> bool:
    """True when ``text`` carries something an update needs: a correction cue, a number (a value
    change) or a negated term. The three signals of :func:`decide` each need one of these."""
    return bool(mentions_cue(text) or _NUMBER.search(text) or _NEGATION.search(text))


def _cosine(a: MemoryRecord, b: MemoryRecord) -> float:
    assert a.embedding is not None and b.embedding is not None
    x, y = a.embedding.astype(np.float64), b.embedding.astype(np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y) / norm if norm else 0.0

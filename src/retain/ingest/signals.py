"""The text signals supersede detection reads (:func:`retain.ingest.conflict.decide`).

No LLM is needed. A new record is compared with an existing one on four signals:

* **subject overlap**: do they talk about the same slot? Share of content terms in common
  (:func:`subject_terms`: stopwords removed, Latin words truncated to 5 characters as a crude
  stemmer, CJK as character bigrams), plus shared identifiers (codes with digits such as
  "CR-22741", "payments.spec.ts"); :func:`term_overlap`;
* **aligned value change**: a number of the old record is gone and a new number stands in the
  same slot, i.e. the words around the two numbers overlap ("for 5 years" -> "for 6 years",
  "budget is 35,000" -> "budget is 38,500", "一共5个人" -> "一共6个人"); :func:`value_slots`,
  :func:`aligned_change`. Numbers that merely appear in one record and not the other (a
  computation, a listing) are no change;
* **correction cues** in the new record: "actually", "switched to", "改成", ...
  (:func:`retain.text.cues.correction_cues`); :func:`cue_sentences` are the sentences carrying one.
  A cue that the old record already carries ("retracted" after a retraction notice) is an echo,
  not a correction of it;
* **negation flip**: "X, not Y" / "not Y:" where Y is said in the old record ("it's orders.spec.ts,
  not payments" against "the payments tests flake"); :func:`negated_terms`.

and for retractions, :func:`retracted_items` / :func:`names_retracted`: a sentence saying an item
was retracted, withdrawn, cancelled or recalled, and the values it names the item by.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from retain.text.cues import explicit_cues, has_cue, mentions_cue
from retain.text.lexical import STOPWORDS, index_terms

__all__ = [
    "adopted",
    "aligned_change",
    "candidate_terms",
    "cue_sentences",
    "destinations",
    "explicit_sentences",
    "is_latin",
    "may_update",
    "names_retracted",
    "negated_terms",
    "retracted_items",
    "stem",
    "subject_terms",
    "term_overlap",
    "value_slots",
    "values",
]

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


def negated_terms(text: str) -> set[str]:
    """Stemmed words a negation in ``text`` rejects: "orders.spec.ts, not payments." -> {"payme"};
    "Not TZ: ..." -> {"tz"}. Only a negated word at a clause end or before a colon counts."""
    return {stem(m.group(1).lower()) for m in _NEGATION.finditer(text)}


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
        out.add(stem(term))
    out.update(m.group(0).lower() for m in _IDENT.finditer(text))
    return out


def _norm(number: str) -> str:
    return re.sub(r"[.,](?=\d{3}\b)", "", number)


def stem(term: str) -> str:
    """``term`` cut to 5 characters when it is a Latin word (truncation stemming), else unchanged."""
    return term[:5] if _LATIN.match(term) else term


def _context_words(text: str) -> list[str]:
    return [stem(w.lower()) for w in _WORD.findall(text) if w.lower() not in STOPWORDS and not _CJK_CHAR.match(w)]


def is_latin(term: str) -> bool:
    """True when ``term`` starts with a lower-case Latin letter (the terms :func:`stem` truncates)."""
    return _LATIN.match(term) is not None


def term_overlap(a: AbstractSet[str], b: AbstractSet[str]) -> float:
    """Share of the smaller term set that the other holds, 0..1 (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def aligned_change(new: dict[str, set[str]], old: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(old value, new value) pairs where an old number is gone and a new one shares its slot;
    none when the two name different things (parcel number 136 vs parcel number 137)."""
    new_ids = {v for v, ctx in new.items() if "#id" in ctx}
    old_ids = {v for v, ctx in old.items() if "#id" in ctx}
    if new_ids and old_ids and not new_ids & old_ids:
        return []
    gone = [v for v in old if v not in new]
    came = [v for v in new if v not in old]
    return [(o, n) for o in gone for n in came if old[o] & new[n] and "#id" not in old[o] | new[n]]


def destinations(cue_text: str) -> list[set[str]]:
    """Subject terms of what the cue sentences ``cue_text`` (:func:`cue_sentences`) switch *to*
    ("switch to the oiled oak block"); :func:`~retain.ingest.conflict.decide` drops an old record that
    already says one of them (:func:`adopted`)."""
    return [dest for m in _DESTINATION.finditer(cue_text) if (dest := subject_terms(m.group(1)))]


def adopted(destinations: Sequence[set[str]], old_terms: AbstractSet[str]) -> bool:
    """True when the old record already says what the new one switches to (``destinations``, from
    :func:`destinations`): it proposed the new state rather than contradicting it."""
    return any(dest <= old_terms for dest in destinations)


@functools.lru_cache(maxsize=1 << 14)
def candidate_terms(text: str) -> frozenset[str]:
    """:func:`subject_terms` of a candidate's text, memoised: a record is a candidate of many new ones."""
    return frozenset(subject_terms(text))


@functools.lru_cache(maxsize=1024)
def retracted_items(text: str) -> dict[str, set[str]]:
    """Value slots (:func:`value_slots`) of the sentences of ``text`` that report a retraction."""
    sentences = [m.group(0) for m in _SENTENCE.finditer(text) if _RETRACTION.search(m.group(0))]
    return value_slots(" ".join(sentences)) if sentences else {}


def names_retracted(retracted: dict[str, set[str]], old_slots: dict[str, set[str]]) -> list[str]:
    """Values the old record holds in a context sharing a term with the retraction's context."""
    return sorted(v for v, ctx in retracted.items() if v in old_slots and ctx & old_slots[v])


def cue_sentences(text: str) -> str:
    """The sentences of ``text`` that carry a correction cue (:func:`retain.text.cues.has_cue`), joined."""
    return " ".join(s.group(0) for s in _SENTENCE.finditer(text) if has_cue(s.group(0)))


def explicit_sentences(text: str) -> str:
    """The sentences of ``text`` that carry an explicit correction (:func:`retain.text.cues.explicit_cues`), joined."""
    return " ".join(s.group(0) for s in _SENTENCE.finditer(text) if explicit_cues(s.group(0)))


def may_update(text: str) -> bool:
    """True when ``text`` carries something an update needs: a correction cue, a number (a value
    change) or a negated term. The three signals of :func:`~retain.ingest.conflict.decide` each need one of these."""
    return bool(mentions_cue(text) or _NUMBER.search(text) or _NEGATION.search(text))

"""Named entities of a text by cheap deterministic rules (no NLP model): names, quantities and ids.

:func:`extract_entities` gives the normalised keys the memory graph links records by
(``same_entity`` edges, :mod:`retain.retrieval.graph`).
"""

from __future__ import annotations

import functools
import re

__all__ = ["extract_entities"]

_WORD = re.compile(r"[^\W\d_][\w'’-]*\.?")
_LEADING = frozenset(
    "the a an my our your his her their its this that these those in on at for to from and but or if when "  # noqa: SIM905
    "then so yes no hi hello hey dear i we you he she they it mr mrs ms dr prof merged see".split()
)
_UNITS = {
    "eur": "eur", "euro": "eur", "euros": "eur", "usd": "usd", "dollar": "usd", "dollars": "usd",
    "gbp": "gbp", "chf": "chf", "jpy": "jpy", "yen": "jpy", "%": "%", "percent": "%",
    "km": "km", "m": "m", "cm": "cm", "mm": "mm", "mi": "mi", "miles": "mi", "mile": "mi",
    "kg": "kg", "g": "g", "mg": "mg", "lb": "lb", "lbs": "lb", "ml": "ml", "l": "l",
    "tb": "tb", "gb": "gb", "mb": "mb", "kb": "kb", "ms": "ms", "s": "s", "sec": "s",
    "second": "s", "seconds": "s", "min": "min", "minute": "min", "minutes": "min",
    "h": "h", "hour": "h", "hours": "h", "day": "day", "days": "day", "week": "week",
    "weeks": "week", "month": "month", "months": "month", "year": "year", "years": "year",
    "km/h": "km/h", "mph": "mph", "people": "people", "persons": "people", "guests": "guests",
}  # fmt: skip
_CURRENCY = {"€": "eur", "$": "usd", "£": "gbp", "¥": "jpy"}
_NUMBER = r"\d+(?:[.,]\d{3})*(?:[.,]\d+)?"
_QTY = re.compile(rf"(?<![\w.])({_NUMBER})\s?(km/h|%|[a-zA-Z]+)(?![\w])")
_MONEY = re.compile(rf"([€$£¥])\s?({_NUMBER})(?![\w])")
_REF = re.compile(r"\b(pr|mr|issue|ticket|bug|pull request)\s?#\s?(\d+)\b", re.IGNORECASE)
_HASH = re.compile(r"(?<![\w&])#(\d{2,})\b")
_TAG = re.compile(r"\b([A-Z]{2,}[-_]?\d{2,}[A-Z0-9]*)\b")


@functools.lru_cache(maxsize=8192)  # candidates are re-read on every add: memoise by text
def extract_entities(text: str) -> frozenset[str]:
    """Named entities of ``text`` by cheap deterministic rules (no NLP model), as normalised keys.

    Three kinds, each key prefixed by its kind:

    * ``name:`` two or more consecutive capitalised words (Unicode letters; all-capital acronyms
      break a run), leading function words and titles dropped ("The Brennick Airport" ->
      ``name:brennick airport``); a run of three or more also yields itself without its first word
      ("Ask Caroline Smith" -> ``name:ask caroline smith`` and ``name:caroline smith``); lower-cased.
    * ``qty:`` a number with a unit or currency ("5000 EUR", "€5,000", "6 years", "3.5 km",
      "20%") -> ``qty:5000 eur``, ``qty:6 year``; thousands separators dropped, units canonical.
    * ``id:`` references and tags: "PR #884" / "issue #12" -> ``id:pr#884``, a bare "#884" ->
      ``id:#884``, "PC118232" / "ABC-123" (two or more capitals then two or more digits) as written.

    Single capitalised words are not names (every sentence starts with one). Returns an empty set
    when nothing matches.
    """
    found: set[str] = set()
    run: list[str] = []
    end = 0
    for match in _WORD.finditer(text):
        word = match.group(0)
        capital = word[0].isupper() and not (len(word.rstrip(".")) > 1 and word.isupper())  # not acronyms
        if capital and run and text[end : match.start()] == " " and not run[-1].endswith("."):
            run.append(word)
        else:
            _flush(run, found)
            run = [word] if capital else []
        end = match.end()
    _flush(run, found)
    for number, unit in _QTY.findall(text):
        canonical = _UNITS.get(unit.lower())
        if canonical is not None:
            found.add(f"qty:{_number(number)} {canonical}")
    for symbol, number in _MONEY.findall(text):
        found.add(f"qty:{_number(number)} {_CURRENCY[symbol]}")
    referenced = set()
    for kind, number in _REF.findall(text):
        label = "pr" if kind.lower() == "pull request" else kind.lower()
        found.add(f"id:{label}#{number}")
        referenced.add(number)
    found.update(f"id:#{n}" for n in _HASH.findall(text) if n not in referenced)
    found.update(f"id:{tag}" for tag in _TAG.findall(text))
    return frozenset(found)


def _flush(run: list[str], found: set[str]) -> None:
    words = [re.sub(r"['’]s$", "", w.rstrip(".")) for w in run]
    while words and words[0].lower() in _LEADING:
        words.pop(0)
    if len(words) >= 2:
        found.add("name:" + " ".join(w.lower() for w in words))
    if len(words) >= 3:  # "Ask Caroline Smith": the first word may just open the sentence
        found.add("name:" + " ".join(w.lower() for w in words[1:]))


def _number(text: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:[.,]\d{3})+", text):  # 5,000 / 5.000: thousands
        return re.sub(r"[.,]", "", text)
    return text.replace(",", ".")

"""Canonical values in text: dates, clock times and amounts, so "Aug 8" matches "2026-08-08".

:func:`canonical_values` turns the values a text states into short tokens that compare equal across
the ways people and programs write them:

* dates -> ``"d:M-D"`` (month, day; the year is dropped so "Aug 18" matches "2026-08-18"): ISO dates
  (``2026-08-08``, a range's tail ``..08-17`` or ``..17``), an English, German, French or Spanish month
  name (or abbreviation) before or after the day (``Aug 8``, ``8th of August``, ``8. August``, ``8 de
  agosto``), day ranges ``Aug 8-17`` / ``8-17 Aug``, CJK ``8月8日``, and day-first numeric dates with a
  two-digit month and a closing dot or year (``17.03.``, ``17.03.2026``; ``17.03 EUR`` stays an amount);
* clock times -> ``"t:MINUTES"`` after midnight: ``07:00``, ``7am``, ``7:30 p.m.``, ``19h30``,
  ``19h``, ``noon``, ``midnight``, CJK ``下午3点``;
* amounts -> ``"n:DIGITS"`` in a canonical decimal form: ``4,800`` / ``4800`` / ``4.8k`` -> ``n:4800``,
  ``12.50`` -> ``n:12.5``. Whole numbers below 13 alone are left out: they are counts more often
  than values ("2 stops", "3 kids") and would match almost every text; so are ordinals ("the 19th")
  and dotted version numbers ("1.2.3").

A date or time is not read again as an amount. Pure regular expressions (no dateparser: microseconds
per text); :func:`canonical_values` is memoised by text. SAM (:mod:`retain.state.scorer`) scores how many of a
confirmed constraint's values a memory states.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

__all__ = ["canonical_values"]

_MONTH_NAMES: dict[str, int] = {}
for _month, _names in enumerate(
    (
        "jan january januar janvier enero ene",
        "feb february februar fevrier février febrero",
        "mar march märz maerz mars marzo",
        "apr april avril abril",
        "may mai mayo",
        "jun june juni juin junio",
        "jul july juli juillet julio",
        "aug august aout août agosto ago",
        "sep sept september septembre septiembre setiembre",
        "oct october oktober okt octobre octubre",
        "nov november novembre noviembre",
        "dec december dezember dez decembre décembre diciembre dic",
    ),
    start=1,
):
    for _name in _names.split():
        _MONTH_NAMES[_name] = _month
# "may" is a verb as often as a month: only "May" / "MAY" count.
_MONTH = "|".join("(?-i:May|MAY)" if m == "may" else m for m in sorted(_MONTH_NAMES, key=len, reverse=True))
_DAY = r"(?:[12]\d|3[01]|0?[1-9])"
_ORD = r"(?:st|nd|rd|th|er|\.)?"
_TO = r"\s*(?:-|–|—|to|until|till|through|thru|bis|au|al)\s*"

_DATES = re.compile(
    "|".join(
        [
            # ISO date, optionally a range tail: 2026-08-08..08-17, 2026-08-08..17
            rf"(?<!\d)(?P<iy>\d{{4}})-(?P<im>0?[1-9]|1[0-2])-(?P<id>{_DAY})(?!\d)"
            rf"(?:\s*(?:\.\.|/|–|—)\s*(?:(?P<tm>0?[1-9]|1[0-2])-)?(?P<td>{_DAY})(?![\d-]))?",
            # month name, day, optional day range: Aug 8, August 8th, Aug 8-17, Aug 8 to Aug 17 (the
            # second date is matched on its own)
            rf"\b(?P<mn>{_MONTH})\.?\s+(?P<md>{_DAY}){_ORD}(?!\d|:)(?:{_TO}(?P<md2>{_DAY}){_ORD}(?![\d:]|\s*(?:am|pm|h)\b))?",
            # day (range) before month name: 8 Aug, 8th of August, 8. August, 8 de agosto, 8-17 Aug
            rf"(?<![\d:.])(?:(?P<dd0>{_DAY}){_ORD}{_TO})?(?P<dd>{_DAY}){_ORD}\s*(?:of\s+|de\s+)?(?P<dn>{_MONTH})\b",
            # CJK: 8月8日 / 8月8号
            r"(?P<cm>0?[1-9]|1[0-2])\s*月\s*(?P<cd>[12]\d|3[01]|0?[1-9])\s*[日号]",
            # day-first numeric (German, French, ...): 17.03., 17.03.2026, 1.12.26; a two-digit month and
            # a closing dot or year, so "17.03 EUR" and "version 1.2" stay numbers
            rf"(?<![\d.,:])(?P<ed>{_DAY})\.(?P<em>0[1-9]|1[0-2])\.(?:\d{{4}}|\d{{2}})?(?![\d.,:]?\d)",
        ]
    ),
    re.IGNORECASE,
)
_TIMES = re.compile(
    "|".join(
        [
            r"(?<![\d:.])(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?!\d)(?::[0-5]\d)?\s*(?P<ap>[ap]\.?m\.?\b)?",
            r"(?<![\d:.])(?P<h2>1[0-2]|0?[1-9])\s*(?P<ap2>[ap]\.?m\.?)(?!\w)",
            r"(?<![\d:.])(?P<h3>[01]?\d|2[0-3])h(?P<m3>[0-5]\d)(?!\d)",
            r"(?<![\d:.])(?P<h4>1[3-9]|2[0-3])h(?!\w)",
            r"\b(?P<noon>noon|midday|midnight)\b",
            r"(?P<zp>上午|早上|凌晨|中午|下午|晚上)?\s*(?P<zh>[01]?\d|2[0-3])\s*[点點时](?:\s*(?P<zm>[0-5]?\d)\s*分|(?P<zhalf>半))?",
        ]
    ),
    re.IGNORECASE,
)
_NUMBERS = re.compile(
    r"(?<![\w.,:])(?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.(?P<frac>\d+))?(?:\s*(?P<k>[kK])(?![a-zA-Z]))?(?!\d|[,.:]\d|st\b|nd\b|rd\b|th\b)"
)
_DIGIT = re.compile(r"\d")
_NOON = re.compile(r"\b(?:noon|midday|midnight)\b", re.IGNORECASE)
_K_DIGITS = 30
"""Longest number (digits) that a ``k`` suffix multiplies; longer ones are read as written."""


def _date(month: str | int, day: str) -> str:
    return f"d:{int(month)}-{int(day)}"


def _dates(match: re.Match[str]) -> list[str]:
    g = match.groupdict()
    if g["iy"]:
        out = [_date(g["im"], g["id"])]
        if g["td"]:
            out.append(_date(g["tm"] or g["im"], g["td"]))
        return out
    if g["mn"]:
        month = _MONTH_NAMES[g["mn"].lower()]
        return [_date(month, g["md"])] + ([_date(month, g["md2"])] if g["md2"] else [])
    if g["dn"]:
        month = _MONTH_NAMES[g["dn"].lower()]
        return [_date(month, g["dd"])] + ([_date(month, g["dd0"])] if g["dd0"] else [])
    if g["ed"]:
        return [_date(g["em"], g["ed"])]
    return [_date(g["cm"], g["cd"])]


def _time(match: re.Match[str]) -> str:
    g = match.groupdict()
    if g["noon"]:
        return "t:0" if g["noon"].lower() == "midnight" else "t:720"
    if g["zh"] is not None:
        hour = int(g["zh"])
        if g["zp"] in ("下午", "晚上") and hour < 12:
            hour += 12
        minute = 30 if g["zhalf"] else int(g["zm"] or 0)
        return f"t:{hour * 60 + minute}"
    hour_s, minute_s, ap = (
        (g["h"], g["m"], g["ap"])
        if g["h"] is not None
        else (g["h2"], "0", g["ap2"])
        if g["h2"] is not None
        else (g["h3"], g["m3"], None)
        if g["h3"] is not None
        else (g["h4"], "0", None)
    )
    hour = int(hour_s)
    if ap and hour <= 12:
        hour = hour % 12 + (12 if ap[0].lower() == "p" else 0)
    return f"t:{hour * 60 + int(minute_s)}"


def _number(match: re.Match[str]) -> str | None:
    whole = match["int"].replace(",", "").lstrip("0") or "0"
    frac = (match["frac"] or "").rstrip("0")
    if match["k"] and len(whole) + len(frac) <= _K_DIGITS:
        try:
            value = Decimal(f"{whole}.{frac or 0}") * 1000
        except InvalidOperation:  # pragma: no cover - the pattern admits digits only
            return None
        text = format(value, "f")
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0")
    if not frac and len(whole) <= 2 and int(whole) < 13:
        return None
    return f"n:{whole}.{frac}" if frac else f"n:{whole}"


@lru_cache(maxsize=1 << 16)
def canonical_values(text: str) -> frozenset[str]:
    """The dates, clock times and amounts that ``text`` states, as canonical tokens (see the module
    docstring): ``"d:8-18"`` (month-day), ``"t:420"`` (minutes after midnight), ``"n:4800"``.

    Memoised by text (the last 65,536 texts). Never raises on text; an empty set when nothing is found.
    """
    if not _DIGIT.search(text):  # every value but noon / midnight has a digit: the common case is cheap
        return frozenset("t:0" if m.group().lower() == "midnight" else "t:720" for m in _NOON.finditer(text))
    found: set[str] = set()
    taken = bytearray(len(text))  # 1 at the characters a date or time was read from: linear, not a scan per match
    for match in _DATES.finditer(text):
        found.update(_dates(match))
        taken[match.start() : match.end()] = b"\1" * (match.end() - match.start())
    for match in _TIMES.finditer(text):
        if taken[match.start()]:
            continue
        found.add(_time(match))
        taken[match.start() : match.end()] = b"\1" * (match.end() - match.start())
    for match in _NUMBERS.finditer(text):
        if taken[match.start()]:
            continue
        token = _number(match)
        if token is not None:
            found.add(token)
    return frozenset(found)

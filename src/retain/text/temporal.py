"""Time expressions: resolve relative dates in a turn against its event time, and read time ranges
out of a query.

A regular expression finds the time expressions (English and Chinese: "yesterday", "last week",
"two days ago", "May 7, 2023", "in 2022", "上周", "三天前", ...) and dateparser resolves each one
(``DateDataParser.get_date_data``, which also gives its period: day, week, month or year) with
``RELATIVE_BASE`` set to the anchor, the event time of the record's session. The expression is cheap
to run on every turn; dateparser (about 1 ms a call) only sees the expressions found, never a turn
without one, and reads each distinct expression once per anchor (memoised). Expressions dateparser
cannot read ("a few days ago") are left out, not guessed.

Rules:

* An unknown anchor resolves nothing: the expression is kept with ``start = end = None`` and
  granularity ``"unknown"`` (never guessed from the clock).
* A resolved expression is a half-open range [start, end) in UTC: the day, the ISO week (Monday to
  Monday), the calendar month or the calendar year containing the date dateparser returns; "last
  weekend" is Saturday to Monday (dateparser reads "last saturday"; "last night" is read as
  "yesterday"; "next weekend", ambiguous, is not resolved).
* dateparser reads times without a zone; the anchor is converted to UTC first and results are UTC.
* A query is read for its first :data:`MAX_QUERY_TIME_EXPRESSIONS` time expressions (a question
  names one or two). The rest are not read and not dropped unseen: :func:`read_query_time` returns
  them (``QueryTime.left_out``) and a search counts them (``n_left_out`` of its ``search`` log event,
  :mod:`retain.safety.observe`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.record import MemoryRecord, utc
from retain.safety.observe import annotate

__all__ = [
    "DEFAULT_LANGUAGES",
    "MAX_QUERY_TIME_EXPRESSIONS",
    "QueryTime",
    "TimeRef",
    "asks_when",
    "has_time_words",
    "overlaps",
    "parse_query_time",
    "read_query_time",
    "resolve_times",
    "time_boost",
    "time_features",
    "time_refs_metadata",
]

Granularity = Literal["day", "weekend", "week", "month", "year", "unknown"]
# Phrases dateparser 1.5 does not read, handed to it in words it does: (phrase, granularity).
_ALIASES: dict[str, tuple[str, str]] = {
    "last night": ("yesterday", "day"),
    "last weekend": ("last saturday", "weekend"),
    "past weekend": ("last saturday", "weekend"),
    "this weekend": ("this saturday", "weekend"),
}
DEFAULT_LANGUAGES: tuple[str, ...] = ("en", "zh")
MAX_QUERY_TIME_EXPRESSIONS = 16
"""Time expressions of one query that are read (handed to dateparser), the first in order of
appearance; the rest are left out of the query's range and reported (:class:`QueryTime`). LoCoMo dev
questions hold at most two (1,161 none, 182 one, 4 two); a 10,000-character query can hold about
1,700, each a dateparser call of about 1-2 ms when distinct."""

_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|(?-i:May)|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_NUMBER = r"\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_YEAR = r"(?:19|20)\d\d"
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
# Where time expressions are (group "t" is the expression). dateparser resolves each one; they are
# found by this pattern rather than dateparser's search_dates, which splits "June 2023", misses
# "before June 2023" and reads "we" as a date.
_EXPRESSIONS = re.compile(
    "|".join(
        [
            r"\b(?P<t>(?:the\s+day\s+(?:before|after)\s+)?(?:yesterday|tomorrow)|today|tonight|last\s+night)\b",
            rf"\b(?P<t2>(?:last|next|this|past|coming)\s+(?:week|month|year|{_DAYS}|{_MONTHS})|"
            r"(?:last|past|this)\s+weekend)\b",
            rf"\b(?P<t3>(?:{_NUMBER})\s+(?:days?|weeks?|months?|years?)\s+(?:ago|later|from\s+now))\b",
            rf"\b(?P<t4>(?:{_MONTHS})\.?\s+{_ORD}(?:,?\s+{_YEAR})?)\b",
            rf"\b(?P<t5>{_ORD}\s+(?:of\s+)?(?:{_MONTHS})\.?(?:,?\s+{_YEAR})?)\b",
            rf"\b(?P<t6>(?:{_MONTHS})\.?,?\s+(?:of\s+)?{_YEAR})\b",
            rf"\b(?P<t7>{_YEAR}[-/]\d{{1,2}}(?:[-/]\d{{1,2}})?)\b",
            rf"\b(?:in|since|during|until|till|before|after|by|from)\s+(?P<t8>(?:{_MONTHS})(?:,?\s+{_YEAR})?|{_YEAR})\b",
            r"(?P<t9>昨天|今天|明天|前天|后天|上周|下周|本周|这周|上个?星期|下个?星期|上个?月|下个?月|这个月|本月|"
            r"去年|明年|今年|前年|(?:\d+|[一二三四五六七八九十两])\s*(?:天|周|个星期|个月|年)(?:前|后)|"
            r"\d{4}\s*年(?:\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*[日号])?)?)",
        ]
    ),
    re.IGNORECASE,
)
_BEFORE = re.compile(r"\b(?:before|until|till|prior\s+to|earlier\s+than)\s*$", re.IGNORECASE)
_AFTER = re.compile(r"\b(?:after|later\s+than)\s*$", re.IGNORECASE)
_SINCE = re.compile(r"\b(?:since|from)\s*$", re.IGNORECASE)
_BEFORE_ZH = re.compile(r"^\s*(?:之前|以前)")
_AFTER_ZH = re.compile(r"^\s*(?:之后|以后)")
_SINCE_ZH = re.compile(r"^\s*以来")
_CJK = re.compile(r"[\u3400-\u9fff]")
_WHEN = re.compile(
    r"^\W*(?:when\b|what\s+(?:date|day|year|month|time)\b|which\s+(?:date|day|year|month)\b|how\s+long\s+ago\b)"
    r"|什么时候|哪一?天|哪一?年|几月|何时",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class TimeRef:
    """One time expression found in a text.

    Attributes:
        text: the expression as written.
        begin, end_char: its character offsets in the text (``text == source[begin:end_char]``).
        start, end: the range it denotes, [start, end) as UTC datetimes; both None when unresolved
            (unknown anchor).
        granularity: "day", "weekend", "week", "month", "year", or "unknown" when unresolved.
    """

    text: str
    begin: int
    end_char: int
    start: datetime | None
    end: datetime | None
    granularity: Granularity

    @property
    def resolved(self) -> bool:
        """True when the expression was resolved to a range."""
        return self.start is not None

    def to_dict(self) -> dict[str, Any]:
        """``{"text", "span": [begin, end_char], "start", "end", "granularity"}``; times ISO 8601 UTC or None."""
        return {
            "text": self.text,
            "span": [self.begin, self.end_char],
            "start": None if self.start is None else self.start.isoformat(),
            "end": None if self.end is None else self.end.isoformat(),
            "granularity": self.granularity,
        }


def has_time_words(text: str) -> bool:
    """Cheap test (one regular expression) for time-like words in English or Chinese."""
    return _EXPRESSIONS.search(text) is not None


def resolve_times(
    text: str, anchor: datetime | str | None, languages: Sequence[str] = DEFAULT_LANGUAGES
) -> list[TimeRef]:
    """Time expressions of ``text`` ("yesterday", "last week", "two days ago", "in May 2023", "上周")
    resolved against ``anchor``, the event time of the text (UTC), in order of appearance.

    Args:
        text: any text.
        anchor: when the text was said; aware datetime or ISO string (converted to UTC). None =
            unknown: expressions are returned unresolved (``start``/``end`` None, granularity
            "unknown"), never resolved against the clock.
        languages: dateparser language codes to try; Chinese and Japanese only for expressions with
            CJK characters, the others only for expressions without.

    Returns: list of :class:`TimeRef`; [] when the text has no time-like word.

    Raises:
        InvalidInput: ``text`` is not a string, ``anchor`` is naive or not a time, or a language
            code is unknown to dateparser.

    Source: dateparser (scrapinghub/dateparser) ``DateDataParser.get_date_data``.
    """
    return _resolve(text, anchor, languages, None)[0]


def time_refs_metadata(text: str, anchor: datetime | None) -> list[dict[str, Any]]:
    """:func:`resolve_times` as JSON-ready dicts (``TimeRef.to_dict``), for ``metadata["time_refs"]``."""
    return [ref.to_dict() for ref in resolve_times(text, anchor)]


@dataclass(frozen=True, slots=True)
class QueryTime:
    """The time range a query names, as :func:`read_query_time` read it.

    Attributes:
        span: [start, end) in UTC (a None bound is open), or None when the query names no range
            (:func:`parse_query_time`).
        refs: the expressions read (the first :data:`MAX_QUERY_TIME_EXPRESSIONS`), in order of
            appearance, as :func:`resolve_times` gives them (unreadable ones left out, unresolved
            ones kept).
        left_out: the expressions after those, as written, in order: not read, no part of ``span``.
    """

    span: tuple[datetime | None, datetime | None] | None
    refs: tuple[TimeRef, ...]
    left_out: tuple[str, ...]


def read_query_time(query: str, now: datetime | str | None) -> QueryTime:
    """The time range ``query`` asks about (:func:`parse_query_time`), with the expressions read
    and those left out beyond :data:`MAX_QUERY_TIME_EXPRESSIONS` (each distinct expression is one
    dateparser call, about 1-2 ms).

    Raises:
        InvalidInput: ``query`` is not a string, or ``now`` is naive or not a time.
    """
    read, left_out = _resolve(query, now, DEFAULT_LANGUAGES, MAX_QUERY_TIME_EXPRESSIONS)
    return QueryTime(_span(query, [r for r in read if r.resolved]), tuple(read), tuple(left_out))


def parse_query_time(query: str, now: datetime | str | None) -> tuple[datetime | None, datetime | None] | None:
    """The time range a query asks about, [start, end) in UTC, or None when it names none.

    "in May 2023" -> [2023-05-01, 2023-06-01); "last year" (now in 2023) -> [2022-01-01, 2023-01-01);
    "before June 2023" -> (None, 2023-06-01); "after 2022" -> [2023-01-01, None); "since May 2023"
    -> [2023-05-01, None). Several
    expressions give the smallest range covering them all. ``now`` anchors relative expressions;
    None resolves nothing (returns None). Only the first :data:`MAX_QUERY_TIME_EXPRESSIONS`
    expressions are read; :func:`read_query_time` also returns the ones left out.

    Raises:
        InvalidInput: ``query`` is not a string, or ``now`` is naive or not a time.
    """
    return read_query_time(query, now).span


def asks_when(query: str) -> bool:
    """True when ``query`` asks for a time ("When did ...", "What year ...", "什么时候 ...")."""
    return _WHEN.search(query) is not None


def time_features(
    records: Sequence[MemoryRecord], query: str, now: datetime | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Two (n,) float64 indicators for time-aware ranking of ``records`` against ``query``.

    ``dated``: 1.0 when the query asks when (:func:`asks_when`) and the record holds a resolved time
    expression (``metadata["time_refs"]``). ``in_range``: 1.0 when the query names a time range
    (:func:`parse_query_time` with ``now``) and the record's event time lies in it or one of its
    resolved time expressions overlaps it. All zeros when the query does neither.

    The query's expressions beyond :data:`MAX_QUERY_TIME_EXPRESSIONS` are not read; their number is
    set as ``n_left_out`` on the running operation (:func:`retain.safety.observe.annotate`: the ``search``
    log event).
    """
    n = len(records)
    dated = np.zeros(n)
    in_range = np.zeros(n)
    if asks_when(query):
        dated[:] = [any(ref.get("start") for ref in r.metadata.get("time_refs", ())) for r in records]
    reading = read_query_time(query, now) if now is not None else None
    if reading is not None and reading.left_out:
        annotate(n_left_out=len(reading.left_out))
    span = None if reading is None else reading.span
    if span is not None:
        low, high = span
        for i, rec in enumerate(records):
            t = rec.event_time
            hit = t is not None and (low is None or t >= low) and (high is None or t < high)
            if not hit:
                hit = any(
                    ref.get("start") and overlaps(_iso(ref["start"]), _iso(ref["end"]), low, high)
                    for ref in rec.metadata.get("time_refs", ())
                )
            in_range[i] = float(hit)
    return dated, in_range


def time_boost(
    records: Sequence[MemoryRecord], query: str, now: datetime | None, *, when_weight: float, range_weight: float
) -> npt.NDArray[np.float64]:
    """(n,) float64 added to the fused scores (probabilities in [0, 1]) of ``records`` for ``query``:
    ``when_weight * dated + range_weight * in_range`` (:func:`time_features`); higher = more relevant.
    The weights are :class:`~retain.config.RetrievalConfig` fields (chosen in-sample on LoCoMo dev
    with ``benchmarks/temporal_boost.py``)."""
    dated, in_range = time_features(records, query, now)
    out: npt.NDArray[np.float64] = when_weight * dated + range_weight * in_range
    return out


def overlaps(start: datetime | None, end: datetime | None, low: datetime | None, high: datetime | None) -> bool:
    """True when [start, end) meets [low, high) (None bounds of the query range are open)."""
    if start is None or end is None:
        return False
    return (high is None or start < high) and (low is None or end > low)


# --- internals ----------------------------------------------------------------------------------


def _resolve(
    text: str, anchor: datetime | str | None, languages: Sequence[str], limit: int | None
) -> tuple[list[TimeRef], list[str]]:
    """:func:`resolve_times` of the first ``limit`` expressions (None = all), and the expressions
    after them as written (not read)."""
    if not isinstance(text, str):
        raise InvalidInput(f"text: must be a string, got {type(text).__name__}")
    base = utc(anchor, field_name="anchor")
    base_naive = None if base is None else base.replace(tzinfo=None)
    refs: list[TimeRef] = []
    left_out: list[str] = []
    for n, match in enumerate(_EXPRESSIONS.finditer(text)):
        group = next(g for g, v in match.groupdict().items() if v is not None)
        begin, end = match.span(group)
        phrase = text[begin:end]
        if limit is not None and n >= limit:
            left_out.append(phrase)
            continue
        if base_naive is None:
            refs.append(TimeRef(phrase, begin, end, None, None, "unknown"))
            continue
        alias, period = _ALIASES.get(" ".join(phrase.lower().split()), (phrase, ""))
        data = _date_data(_languages(phrase, tuple(languages)), alias, base_naive)
        if data is None:  # dateparser cannot read it: kept out rather than guessed
            continue
        start, stop, granularity = _range(data[0], period or data[1])
        refs.append(TimeRef(phrase, begin, end, start, stop, granularity))
    return refs, left_out


def _span(query: str, refs: Sequence[TimeRef]) -> tuple[datetime | None, datetime | None] | None:
    """The smallest range covering the resolved ``refs`` of ``query``, each read with the words
    around it ("before", "after", "since", "之前", ...)."""
    if not refs:
        return None
    lows: list[datetime | None] = []
    highs: list[datetime | None] = []
    for ref in refs:
        assert ref.start is not None and ref.end is not None
        prefix, suffix = query[: ref.begin], query[ref.end_char :]
        if _BEFORE.search(prefix) or _BEFORE_ZH.search(suffix):
            lows.append(None)
            highs.append(ref.start)
        elif _AFTER.search(prefix) or _AFTER_ZH.search(suffix):
            lows.append(ref.end)
            highs.append(None)
        elif _SINCE.search(prefix) or _SINCE_ZH.search(suffix):
            lows.append(ref.start)
            highs.append(None)
        else:
            lows.append(ref.start)
            highs.append(ref.end)
    low = None if any(x is None for x in lows) else min(x for x in lows if x is not None)
    high = None if any(x is None for x in highs) else max(x for x in highs if x is not None)
    return low, high


def _iso(value: object) -> datetime | None:
    try:
        return utc(value if isinstance(value, str) else None)
    except InvalidInput:
        return None


def _languages(text: str, languages: tuple[str, ...]) -> tuple[str, ...]:
    cjk = _CJK.search(text) is not None
    return tuple(lang for lang in languages if (lang in ("zh", "ja")) == cjk) or languages


def _settings(base: datetime) -> dict[str, Any]:
    return {"RELATIVE_BASE": base, "RETURN_AS_TIMEZONE_AWARE": False, "TIMEZONE": "UTC", "TO_TIMEZONE": "UTC"}


@lru_cache(maxsize=64)
def _parser(languages: tuple[str, ...], base: datetime) -> Any:
    """One dateparser parser per (languages, anchor): the turns of a session share their anchor."""
    from dateparser.date import DateDataParser

    return DateDataParser(languages=list(languages), settings=_settings(base))


@lru_cache(maxsize=4096)
def _date_data(languages: tuple[str, ...], phrase: str, base: datetime) -> tuple[datetime, str] | None:
    """dateparser's date and period of ``phrase`` against ``base``, memoised: a text (or query) that
    repeats an expression ("May 3 ... May 3") costs one dateparser call per distinct expression."""
    try:
        data = _parser(languages, base).get_date_data(phrase)
    except ValueError as exc:  # dateparser refuses unknown language codes (on first use)
        raise InvalidInput(f"languages: {list(languages)} ({exc})") from exc
    if data.date_obj is None:
        return None
    return data.date_obj, str(data.period or "day")


def _range(date: datetime, period: str) -> tuple[datetime, datetime, Granularity]:
    day = datetime(date.year, date.month, date.day, tzinfo=UTC)
    if period == "weekend":
        return day, day + timedelta(days=2), "weekend"
    if period == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=7), "week"
    if period == "month":
        first = day.replace(day=1)
        following = first.replace(year=first.year + first.month // 12, month=first.month % 12 + 1)
        return first, following, "month"
    if period == "year":
        first = day.replace(month=1, day=1)
        return first, first.replace(year=first.year + 1), "year"
    return day, day + timedelta(days=1), "day"

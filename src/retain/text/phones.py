"""Phone numbers in text: libphonenumber's matcher over the digit runs of a text, memoised by window.

:func:`find_phones` is a detector (:data:`retain.text.findings.Detector`); see :mod:`retain.text.privacy`
for what it finds and leaves alone. ``phonenumbers`` is imported on first use.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from retain.text.findings import Finding

__all__ = [
    "PHONE_REGIONS",
    "find_phones",
    "window_phones",
]

PHONE_REGIONS: tuple[str, ...] = ("US", "GB", "DE", "FR", "CN", "JP", "KR", "IT", "ES")
LONG_ONLY_REGIONS = frozenset({"JP", "KR", "IT", "ES"})
"""Regions whose national numbers are taken only with at least :data:`LONG_ONLY_DIGITS` digits (their
mobile numbers: JP 11, KR 10-11, IT 10, ES 9): their short fixed-line ranges make dates ("06/2026")
and part numbers ("0424-072") valid numbers."""
LONG_ONLY_DIGITS = 9
"""Regions (ISO 3166-1 alpha-2) whose national formats are tried; ``+CC`` numbers need none.

Each region added finds that country's national numbers and adds false alarms (an 8-11 digit run
that is valid somewhere); with these five no national-format match in the shared scenarios, nor
in the LoCoMo and BEAM texts under shared/data, was anything but a phone number."""


_DECIMAL = re.compile(r"\d+[.,]\d+")
_MINUS = re.compile(r"\s-\s?\d")


def _is_decimal(text: str, start: int, end: int) -> bool:
    """A number with one decimal point, or the digits either side of one: "0.268435456"."""
    if _DECIMAL.fullmatch(text[start:end]):
        return True
    before = text[max(0, start - 2) : start]
    after = text[end : end + 2]
    return (len(before) == 2 and before[1] in ".," and before[0].isdigit()) or (
        len(after) == 2 and after[0] in ".," and after[1].isdigit()
    )


# A run of >= 6 digits with at most 3 separators between digits; the matcher runs on these windows
# (plus a little context) rather than the whole text, which is what makes long texts cheap. A run
# that is a date is skipped; a very long run (a table of numbers) is cut into overlapping windows.
_PHONE_RUN = re.compile(r"\d(?:[ \t\u00a0().\-\u2010-\u2015/]{0,3}\d){5,}")
_DATE_RUN = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}")
_PHONE_CONTEXT = 8
_PHONE_WINDOW = 1000


def _phone_windows(text: str) -> Iterator[tuple[int, str]]:
    spans: list[list[int]] = []
    for m in _PHONE_RUN.finditer(text):
        if _DATE_RUN.fullmatch(m.group()):
            continue
        start, end = max(0, m.start() - _PHONE_CONTEXT), min(len(text), m.end() + _PHONE_CONTEXT)
        if spans and start <= spans[-1][1]:
            spans[-1][1] = end
        else:
            spans.append([start, end])
    step = _PHONE_WINDOW - 4 * _PHONE_CONTEXT
    for start, end in spans:
        for chunk in range(start, max(start + 1, end - 4 * _PHONE_CONTEXT), step):
            yield chunk, text[chunk : min(end, chunk + _PHONE_WINDOW)]


def _has_plus(window: str) -> bool:
    return "+" in window or "\uff0b" in window  # ASCII or full-width plus


_PHONE_MEMO_SIZE = 32_768
"""Phone windows whose matcher results :func:`window_phones` keeps (windows are at most
:data:`_PHONE_WINDOW` characters)."""


_SHORTEST_ABROAD = 6
"""Fewest digits of a country code plus a national number anywhere (libphonenumber's metadata: +43 and
a 4-digit Austrian number)."""


@functools.lru_cache(maxsize=1)
def _least_digits() -> dict[str, int]:
    """Each region of :data:`PHONE_REGIONS` and the fewest digits a number its matcher accepts has:
    the shortest national significant number libphonenumber's metadata allows (a trunk prefix only
    adds digits) or, dialled abroad from that region, its international prefix's digits plus
    :data:`_SHORTEST_ABROAD` ("011 43 1111" from the US: 9), whichever is fewer;
    :data:`LONG_ONLY_DIGITS` for :data:`LONG_ONLY_REGIONS`. A ``+CC`` number is matched by every
    region's matcher, and the least bound (DE: 4) is below a window's 6 digits, so skipping a region
    whose bound the window's digits do not reach never loses a number."""
    from phonenumbers import PhoneMetadata

    least = {}
    for region in PHONE_REGIONS:
        meta = PhoneMetadata.metadata_for_region(region)
        general = None if meta is None else meta.general_desc
        shortest = min(general.possible_length) if general is not None and general.possible_length else 1
        prefix = "" if meta is None else str(meta.international_prefix or "")
        abroad = (len(prefix) if prefix.isdigit() else 2) + _SHORTEST_ABROAD  # a pattern: "00" at least
        least[region] = LONG_ONLY_DIGITS if region in LONG_ONLY_REGIONS else min(shortest, abroad)
    return least


@functools.lru_cache(maxsize=_PHONE_MEMO_SIZE)
def window_phones(window: str) -> tuple[tuple[int, int, str], ...]:
    """The phone matches in one window, as ``(start, end, detector)`` offsets into the window.

    A pure function of the window text (libphonenumber's matcher reads nothing else), so it is
    memoised: the same digit run in the same few characters of context -- a booking reference or a
    number repeated across the texts of a large agent state, a conversation replayed -- is matched
    once. What the caller does with the matches (the decimal check, which reads the text around the
    window) is not memoised.
    """
    from phonenumbers import Leniency, PhoneNumberMatcher, ValidationResult, is_possible_number_with_reason

    found: list[tuple[int, int, str]] = []
    digits = sum(ch.isdigit() for ch in window)
    for region, least in _least_digits().items():
        if digits < least:  # no number of this region fits in the window's digits: its matcher finds none
            continue
        for match in PhoneNumberMatcher(window, region, leniency=Leniency.STRICT_GROUPING):
            if region in LONG_ONLY_REGIONS and sum(ch.isdigit() for ch in match.raw_string) < LONG_ONLY_DIGITS:
                continue
            found.append((match.start, match.end, "phonenumbers"))
    # "+CC ..." in a range libphonenumber does not know yet: keep when the length is possible for
    # that country (not only as a local number) and no minus sign reads it as "+12 -3" diff counts.
    for match in PhoneNumberMatcher(window, "ZZ", leniency=Leniency.POSSIBLE) if _has_plus(window) else ():
        raw = match.raw_string
        if not raw.startswith("+") or _MINUS.search(raw):
            continue
        if is_possible_number_with_reason(match.number) == ValidationResult.IS_POSSIBLE:
            found.append((match.start, match.end, "phonenumbers:possible"))
    return tuple(found)


def find_phones(text: str) -> Iterator[Finding]:
    """Phone numbers: :func:`window_phones` over each digit-run window of ``text``, offsets mapped
    back to ``text``; a number with one decimal point is no phone number unless ``+``-prefixed."""
    for offset, window in _phone_windows(text):
        for start, end, detector in window_phones(window):
            if detector == "phonenumbers:possible" or not _is_decimal(text, offset + start, offset + end):
                yield Finding("phone", offset + start, offset + end, detector)

"""Canonical values (retain.text.values): the same date, time or amount written differently gives one token."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retain.text.values import canonical_values


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ('dates: "2026-08-08..08-17"', "make it Aug 8 to Aug 17"),
        ('dates: "2026-08-08..17"', "Aug 8-17 works"),
        ("2026-08-08/2026-08-17", "8th of August until the 17th of August"),
        ('home by: "2026-08-18"', "we MUST be home by Aug 18 - orientation is the morning of the 19th"),
        ("home by: 2026-08-18", "zurück am 18. August"),
        ("llegada: 2026-08-18", "el 18 de agosto"),
        ("出发: 2026-08-18", "8月18日出发"),
        ("window: 2026-03-17", "Wartungsfenster ist Dienstag, 17.03., 22:00-02:00."),
        ("date: 2026-12-01", "le 01.12.26 à 10h30"),
        ('no departure before: "07:00"', "no flights leaving before 7am"),
        ("visits: weekdays after 15:00", "only after 3pm on weekdays"),
        ("dinner: 19:30", "table at 7:30 p.m."),
        ("train: 19h30", "the 19:30 train"),
        ("meeting: 12:00", "let's meet at noon"),
        ("会议: 15:00", "下午3点开会"),
        ("budget eur max: 4800", "New ceiling ... 4,800 EUR"),
        ("budget: 4800", "about 4.8k all in"),
        ("fee: 12.5", "a 12.50 fee"),
    ],
)
def test_one_value_written_two_ways_gives_the_same_tokens(a: str, b: str) -> None:
    assert canonical_values(a) <= canonical_values(b)
    assert canonical_values(a)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-08-08..08-17", {"d:8-8", "d:8-17"}),
        ("7am and 5:40", {"t:420", "t:340"}),
        ("12am is midnight, 12pm is noon", {"t:0", "t:720"}),
        ("4,800 and 1,000,000 and 0.50", {"n:4800", "n:1000000", "n:0.5"}),
        ("May 5", {"d:5-5"}),
        ("Dienstag, 17.03., 22:00", {"d:3-17", "t:1320"}),  # a day-first date, not the amount 17.03
        ("am 17.03.2026 und 17.03 EUR", {"d:3-17", "n:17.03"}),
    ],
)
def test_tokens_are_the_documented_ones(text: str, expected: set[str]) -> None:
    assert canonical_values(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no values here",
        "2 stops, 3 kids, 12 people",  # small counts
        "the 19th time, 21st century",  # ordinals
        "version 1.2.3 and v2.4.1",  # dotted versions
        "you may 5 times",  # 'may' the verb
        "hash a1b2c3 and id x9",  # digits inside words
        "25:99 and 31:00",  # not clock times
    ],
)
def test_counts_ordinals_versions_and_words_are_not_values(text: str) -> None:
    assert canonical_values(text) == frozenset()


def test_odd_input_huge_numbers_and_json_renderings() -> None:
    huge = "9" * 5000
    assert canonical_values(f"amount {huge}") == {f"n:{huge}"}  # read as written, never a float
    assert canonical_values(f"amount {huge}k") == {f"n:{huge}"}  # too long to multiply: as written
    assert canonical_values("1e308 and 1e-9") == frozenset()  # exponents are not amounts
    nested = '{"a": {"b": [4800, "2026-08-18", {"c": "07:00"}]}, "flag": true, "none": null}'
    assert canonical_values(nested) == {"n:4800", "d:8-18", "t:420"}
    assert canonical_values("\u0000\ud7ff" * 100 + " 4,800") == {"n:4800"}


_TOKEN = re.compile(r"^(?:d:(?:[1-9]|1[0-2])-(?:[1-9]|[12]\d|3[01])|t:\d{1,4}|n:\d+(?:\.\d*[1-9])?)$")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789:.,-/ kKapmhAugMay月日点下午 x")), max_size=60))
def test_every_token_is_well_formed_and_times_are_within_a_day(text: str) -> None:
    for token in canonical_values(text):
        assert _TOKEN.match(token), (text, token)
        if token.startswith("t:"):
            assert 0 <= int(token[2:]) < 24 * 60


@pytest.mark.parametrize(
    "unit",
    ["Aug 8-17 at 7:30 pm, 4,800 EUR. ", "May 3 ", "7:30 ", "2026-08-08..17 19h30 12.50 ", "8月8日下午3点 "],
)
def test_a_long_text_repeating_values_gives_the_tokens_of_one_copy(unit: str) -> None:
    # a date or time read once is not read again as a time or an amount, however many precede it
    long = unit * (10_000 // len(unit))
    assert canonical_values(long) == canonical_values(unit) != frozenset()

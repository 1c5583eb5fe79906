"""Time expressions resolved against a fixed anchor; answers worked out by hand from a calendar.

Anchor: Wednesday 10 May 2023, 14:00 UTC. The ISO week holding it runs Mon 8 May - Sun 14 May, so
"last week" is Mon 1 May - Mon 8 May.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from retain.errors import InvalidInput
from retain.text.temporal import has_time_words, overlaps, parse_query_time, resolve_times

ANCHOR = datetime(2023, 5, 10, 14, 0, tzinfo=UTC)


def d(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "phrase", "start", "end", "granularity"),
    [
        ("I went to the support group yesterday.", "yesterday", d(2023, 5, 9), d(2023, 5, 10), "day"),
        ("We hiked the ridge last week!", "last week", d(2023, 5, 1), d(2023, 5, 8), "week"),
        ("I start the new job next month.", "next month", d(2023, 6, 1), d(2023, 7, 1), "month"),
        ("Two days ago I painted a sunrise.", "Two days ago", d(2023, 5, 8), d(2023, 5, 9), "day"),
        ("我上周去了北京。", "上周", d(2023, 5, 1), d(2023, 5, 8), "week"),
        ("We married in May 2021.", "May 2021", d(2021, 5, 1), d(2021, 6, 1), "month"),
        ("Dec 2022 was cold", "Dec 2022", d(2022, 12, 1), d(2023, 1, 1), "month"),  # month rolls the year
        ("I ran a marathon last year", "last year", d(2022, 1, 1), d(2023, 1, 1), "year"),
        ("It opened on June 9, 2023.", "June 9, 2023", d(2023, 6, 9), d(2023, 6, 10), "day"),
    ],
)
def test_resolve_against_fixed_anchor(text, phrase, start, end, granularity):
    (ref,) = resolve_times(text, ANCHOR)
    assert text[ref.begin : ref.end_char] == ref.text == phrase
    assert (ref.start, ref.end, ref.granularity) == (start, end, granularity)
    assert ref.resolved
    assert ref.to_dict() == {
        "text": phrase,
        "span": [ref.begin, ref.end_char],
        "start": start.isoformat(),
        "end": end.isoformat(),
        "granularity": granularity,
    }


def test_anchor_in_another_zone_is_converted_to_utc_first():
    # 01:00 on 11 May at UTC+3 is 22:00 on 10 May UTC: "yesterday" is 9 May
    anchor = datetime(2023, 5, 11, 1, 0, tzinfo=timezone(timedelta(hours=3)))
    (ref,) = resolve_times("yesterday", anchor)
    assert ref.start == d(2023, 5, 9)


def test_unknown_anchor_resolves_nothing():
    (ref,) = resolve_times("I saw her yesterday", None)
    assert (ref.text, ref.start, ref.end, ref.granularity) == ("yesterday", None, None, "unknown")
    assert not ref.resolved


def test_text_without_time_words_and_unreadable_expressions():
    assert resolve_times("Hello there, how are you?", ANCHOR) == []
    assert not has_time_words("I may 5 times")  # the modal verb is not the month
    assert resolve_times("", ANCHOR) == []
    assert resolve_times("last week", ANCHOR)[0].granularity == "week"
    assert resolve_times("a few days ago", ANCHOR) == []  # dateparser cannot read it: not guessed


def test_bad_arguments():
    with pytest.raises(InvalidInput, match="anchor"):
        resolve_times("yesterday", datetime(2023, 5, 10))  # naive
    with pytest.raises(InvalidInput, match="anchor"):
        resolve_times("yesterday", "not a date")
    with pytest.raises(InvalidInput, match="text"):
        resolve_times(None, ANCHOR)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Melanie paint in May 2023?", (d(2023, 5, 1), d(2023, 6, 1))),
        ("What did I buy last year?", (d(2022, 1, 1), d(2023, 1, 1))),
        ("Where did we travel in 2022?", (d(2022, 1, 1), d(2023, 1, 1))),
        ("What happened before June 2023?", (None, d(2023, 6, 1))),
        ("What changed after 2022?", (d(2023, 1, 1), None)),
        ("What did I do since last month?", (d(2023, 4, 1), None)),
        ("我上周之前买了什么?", (None, d(2023, 5, 1))),
        ("When did Caroline go to the support group?", None),
    ],
)
def test_parse_query_time(query, expected):
    assert parse_query_time(query, ANCHOR) == expected


def test_parse_query_time_without_now_is_none():
    assert parse_query_time("What did I buy last year?", None) is None


def test_overlaps():
    assert overlaps(d(2023, 5, 1), d(2023, 5, 8), d(2023, 5, 7), None)
    assert not overlaps(d(2023, 5, 1), d(2023, 5, 8), d(2023, 5, 8), d(2023, 6, 1))  # half-open
    assert overlaps(d(2023, 5, 1), d(2023, 5, 8), None, d(2023, 5, 2))
    assert not overlaps(None, None, None, None)


def test_weekend_and_last_night():
    (weekend,) = resolve_times("We camped last weekend.", ANCHOR)
    assert (weekend.start, weekend.end, weekend.granularity) == (d(2023, 5, 6), d(2023, 5, 8), "weekend")
    (night,) = resolve_times("I slept badly last night", ANCHOR)
    assert (night.text, night.start, night.granularity) == ("last night", d(2023, 5, 9), "day")
    assert resolve_times("see you next weekend", ANCHOR) == []  # ambiguous: not resolved


def test_unknown_language_code_is_refused():
    with pytest.raises(InvalidInput, match="languages"):
        resolve_times("yesterday", ANCHOR, languages=["xx-nope"])


# --- cost bounds: each distinct expression parsed once; a query read for its first expressions ----


@pytest.fixture
def dateparser_calls(monkeypatch):
    """Phrases handed to dateparser (``get_date_data``), in order; the memo is emptied around the test."""
    from retain.text import temporal

    calls: list[str] = []
    real = temporal._parser

    class Counting:
        def __init__(self, parser):
            self.parser = parser

        def get_date_data(self, phrase):
            calls.append(phrase)
            return self.parser.get_date_data(phrase)

    monkeypatch.setattr(temporal, "_parser", lambda languages, base: Counting(real(languages, base)))
    temporal._date_data.cache_clear()
    yield calls
    temporal._date_data.cache_clear()


def test_a_repeated_expression_is_parsed_once(dateparser_calls):
    refs = resolve_times("May 3 and May 3, then May 3 again; yesterday too.", ANCHOR)
    assert [(r.text, r.start) for r in refs] == [
        ("May 3", d(2023, 5, 3)),
        ("May 3", d(2023, 5, 3)),
        ("May 3", d(2023, 5, 3)),
        ("yesterday", d(2023, 5, 9)),
    ]
    assert [r.begin for r in refs] == [0, 10, 22, 35]
    assert dateparser_calls == ["May 3", "yesterday"]
    resolve_times("Back on May 3.", ANCHOR)  # same phrase, same anchor: still memoised
    assert dateparser_calls == ["May 3", "yesterday"]
    resolve_times("Back on May 3.", d(2022, 1, 1))  # another anchor is another reading
    assert dateparser_calls == ["May 3", "yesterday", "May 3"]


def test_a_query_is_read_for_its_first_expressions_and_the_rest_are_reported():
    from retain.text.temporal import MAX_QUERY_TIME_EXPRESSIONS, read_query_time

    head = "What happened on May 3, 2023? " * MAX_QUERY_TIME_EXPRESSIONS
    reading = read_query_time(head + "And in 2019, before June 2023?", ANCHOR)
    assert len(reading.refs) == MAX_QUERY_TIME_EXPRESSIONS
    assert {(r.start, r.end) for r in reading.refs} == {(d(2023, 5, 3), d(2023, 5, 4))}
    assert reading.left_out == ("2019", "June 2023")  # not read: reported, not dropped unseen
    assert reading.span == (d(2023, 5, 3), d(2023, 5, 4))
    assert parse_query_time(head + "And in 2019?", ANCHOR) == reading.span


def test_a_query_under_the_limit_is_read_whole():
    from retain.text.temporal import read_query_time

    reading = read_query_time("What happened in 2019, before June 2023?", ANCHOR)
    assert [r.text for r in reading.refs] == ["2019", "June 2023"] and reading.left_out == ()
    assert reading.span == (None, d(2023, 6, 1))
    assert read_query_time("How are you?", ANCHOR) == read_query_time("How are you?", None)
    assert read_query_time("How are you?", ANCHOR).span is None


def test_a_longest_query_full_of_dates_costs_at_most_the_limit_in_dateparser_calls(dateparser_calls):
    from retain.text.lexical import MAX_QUERY_CHARS
    from retain.text.temporal import MAX_QUERY_TIME_EXPRESSIONS, read_query_time

    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    distinct = "".join(f"{months[i % 12]} {i % 28 + 1}, {2000 + i % 30} " for i in range(800))[:MAX_QUERY_CHARS]
    reading = read_query_time(distinct, ANCHOR)
    assert len(dateparser_calls) == len(reading.refs) == MAX_QUERY_TIME_EXPRESSIONS
    assert len(reading.left_out) > 600
    repeated = "May 3 " * (MAX_QUERY_CHARS // 6)
    dateparser_calls.clear()
    reading = read_query_time(repeated, ANCHOR)
    assert dateparser_calls == ["May 3"]
    assert len(reading.refs) + len(reading.left_out) == MAX_QUERY_CHARS // 6
    assert reading.span == (d(2023, 5, 3), d(2023, 5, 4))


def test_search_logs_the_query_expressions_left_out():
    import io
    import json

    from retain import HashingEncoder, Memory
    from retain.config import DEFAULT_RETRIEVAL_CONFIG
    from retain.safety.observe import configure_logging, disable_logging
    from retain.text.temporal import MAX_QUERY_TIME_EXPRESSIONS

    RANGE_WEIGHT = DEFAULT_RETRIEVAL_CONFIG.range_weight

    stream = io.StringIO()
    with Memory(":memory:", encoder=HashingEncoder(64)) as mem:
        rec = mem.add("We planted the tulips.", namespace="t", event_time=d(2023, 5, 3) + timedelta(hours=9))
        mem.add("We painted the fence.", namespace="t", event_time=d(2023, 4, 2))
        configure_logging(json=True, stream=stream)
        try:
            plain = mem.search("What did we plant on May 3?", namespace="t", now=ANCHOR)
            heavy = mem.search("What did we plant on May 3? " * 300, namespace="t", now=ANCHOR)
        finally:
            disable_logging()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["search", "search"]
    assert "n_left_out" not in events[0]
    assert events[1]["n_left_out"] == 300 - MAX_QUERY_TIME_EXPRESSIONS
    for hits in (plain, heavy):
        assert hits[0].record.id == rec and hits[0].scores["time"] == RANGE_WEIGHT

"""What reading a query's time expressions costs a search: a plain 10,000-character query against
date-heavy ones of the same length.

Fills one namespace with dated records (HashingEncoder, so the figures measure retain, not MiniLM),
then times ``Memory.search`` (default preset, ``time_aware=True``, ``now`` = the time of asking) for
three queries of :data:`retain.text.lexical.MAX_QUERY_CHARS` characters: plain words, one date repeated
("May 3 May 3 ..."), and distinct dates ("Jan 1, 2001 Feb 2, 2002 ..."). Prints, per query, how many
time expressions it holds, how many a search read (:data:`retain.text.temporal.MAX_QUERY_TIME_EXPRESSIONS`)
and left out, and the first and median search time (milliseconds).

Usage::

    .venv/bin/python benchmarks/temporal_query_cost.py [--records 300] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

from retain import HashingEncoder, Memory, resolve_times
from retain.text.lexical import MAX_QUERY_CHARS
from retain.text.temporal import MAX_QUERY_TIME_EXPRESSIONS

WORDS = ["harbour", "museum", "train", "hotel", "dinner", "ferry", "island", "market", "castle", "river"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def fill(unit: str) -> str:
    """``unit`` repeated up to MAX_QUERY_CHARS characters (whole units only)."""
    return unit * (MAX_QUERY_CHARS // len(unit))


def distinct_dates() -> str:
    out, i = [], 0
    while sum(len(x) for x in out) < MAX_QUERY_CHARS - 20:
        out.append(f"{MONTHS[i % 12]} {i % 28 + 1}, {2000 + i % 30} ")
        i += 1
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    queries = {
        "plain words": fill(" ".join(WORDS) + " "),
        "one date repeated": fill("May 3 "),
        "distinct dates": distinct_dates(),
    }
    start = datetime(2023, 1, 1, tzinfo=UTC)
    with Memory(":memory:", encoder=HashingEncoder(384)) as mem:
        for i in range(args.records):
            when = start + timedelta(days=i)
            text = f"Day {i}: we saw the {WORDS[i % 10]} and the {WORDS[(i * 7) % 10]} on {when:%B} {when.day}."
            mem.add(text, namespace="bench", event_time=when, segment=f"s{i // 10}", seq=i % 10)
        mem.search("What did we see in May 2023?", namespace="bench")  # dateparser loads its language data
        cap = MAX_QUERY_TIME_EXPRESSIONS
        print(f"{args.records} records; queries of {MAX_QUERY_CHARS} characters; MAX_QUERY_TIME_EXPRESSIONS = {cap}")
        header = ("query", "chars", "expressions", "read", "left out", "first ms", "median ms")
        print("{:<18} {:>6} {:>11} {:>5} {:>8} {:>9} {:>9}".format(*header))
        for name, query in queries.items():
            found = len(resolve_times(query, None))  # unknown anchor: every expression, none resolved
            read = min(found, cap)
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                mem.search(query, namespace="bench", k=10)
                times.append((time.perf_counter() - t0) * 1000)
            print(
                f"{name:<18} {len(query):>6} {found:>11} {read:>5} {found - read:>8} "
                f"{times[0]:>9.1f} {statistics.median(times):>9.1f}"
            )


if __name__ == "__main__":
    main()

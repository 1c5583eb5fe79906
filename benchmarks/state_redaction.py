"""Cost of ``Memory.context(..., state=BIG)``: the state is redacted before the provenance is stored.

Builds a state at the limits of :mod:`retain.state.agent` (1,000 constraints, 200 subgoals, 200 open
questions, 2,000 characters per text). Each text is distinct (its own ``item <i>:`` prefix) but,
as in an agent's state, made of the same facts: a price, a flight number, a date and time, a
booking reference and a phone number. Times one ``context`` call (``HashingEncoder``, 20 records)
with phone-window memoisation off (every window matched afresh, as before
``phones.window_phones``) and on, each with a cold ``redact_text`` cache, plus ``search`` with the
same state for scale, and checks that both redactions are identical and hold no raw phone number.

``--random-digits`` instead fills every text with fresh random 6-9 digit numbers (no window repeats:
the worst case, where memoisation cannot help; ``--scale`` shrinks the state, the cost is linear).

Usage::

    .venv/bin/python benchmarks/state_redaction.py [--random-digits] [--scale 0.1]
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from retain import HashingEncoder, Memory
from retain.safety.redaction import redact_text, redact_value
from retain.text import phones

PHONE = "+44 20 7946 0958"
FACTS = (
    "Keep the hotel under 180 EUR per night, flight LH 4021 on 2026-03-14 at 12:30, booking ref 88412207, "
    f"call the desk on {PHONE} if late. "
)


def _text(i: int, rng: random.Random, digits: bool) -> str:
    if not digits:
        return (f"item {i}: " + FACTS * 20)[:2000]
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < 2000:
        words.append(rng.choice(["budget", "order", "room", "by", "the", str(rng.randint(100_000, 999_999_999))]))
    return f"item {i}: {' '.join(words)}"[:2000]


def build_state(scale: float, digits: bool) -> dict[str, Any]:
    rng = random.Random(0)
    n_c, n_i = max(1, int(1000 * scale)), max(1, int(200 * scale))
    return {
        "phase": _text(0, rng, digits),
        "subgoals": [_text(i, rng, digits) for i in range(n_i)],
        "constraints": {f"c{i}": _text(i, rng, digits) for i in range(n_c)},
        "uncertain": [_text(i, rng, digits) for i in range(n_i)],
        "last_result": _text(1, rng, digits),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--random-digits", action="store_true", help="fresh random numbers in every text (worst case)")
    ap.add_argument("--scale", type=float, default=1.0, help="share of the limits to fill (default 1.0)")
    args = ap.parse_args()
    state = build_state(args.scale, args.random_digits)
    texts = 2 + len(state["subgoals"]) + len(state["uncertain"]) + 2 * len(state["constraints"])
    print(f"state: {len(state['constraints'])} constraints, {len(state['subgoals'])} subgoals/questions, {texts} texts")
    mem = Memory(encoder=HashingEncoder(384))
    for i in range(20):
        mem.add(f"note {i}: the hotel budget is {100 + i} EUR", namespace="n")
    t = time.perf_counter()
    mem.search("hotel budget", namespace="n", state=state)
    print(f"search(state=BIG):                    {time.perf_counter() - t:6.2f} s")
    memo = phones.window_phones
    results = []
    for label, matcher in (("memo off (before)", memo.__wrapped__), ("memo on (after)", memo)):
        redact_text.cache_clear()
        memo.cache_clear()
        phones.window_phones = matcher  # type: ignore[assignment]
        try:
            t = time.perf_counter()
            mem.context("hotel budget", namespace="n", budget_tokens=500, state=state)
            print(f"context(state=BIG), {label:18s} {time.perf_counter() - t:6.2f} s")
            redact_text.cache_clear()
            results.append(redact_value(state)[0])
        finally:
            phones.window_phones = memo
    same = results[0] == results[1]
    leaked = PHONE in repr(results[1])
    print(f"redactions identical: {same}; raw phone number left: {leaked}; memo {memo.cache_info()}")
    mem.close()
    if not same or leaked:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

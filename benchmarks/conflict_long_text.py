"""Time of ``retain.text.cues.explicit_cues`` and ``retain.ingest.conflict.decide`` on long texts (10, 40 and 160 KB).

Both were quadratic in the text length (each cue re-read the text from its start: 190 s for
``"instead " * 20000``); they are now linear. Inputs, each cut to the size in UTF-8 bytes:

* ``instead``: ``"instead " * n``, one cue every 8 characters, no clause mark;
* ``prose``: English corrections, numbers and negations, sentences of about 90 characters;
* ``cjk``: Chinese clauses with a change cue and a number each ("改成6个人了，"), no sentence end.

``decide`` compares the text with two candidates: a hard constraint and a soft record (cosine 0.6).
Wall-clock seconds, best of ``--repeat`` runs, one process, no other work.

    python benchmarks/conflict_long_text.py [--sizes 10,40,160] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from retain.ingest.conflict import decide
from retain.record import MemoryRecord, MemoryType
from retain.text.cues import explicit_cues

UNITS = {
    "instead": "instead ",
    "prose": "Actually, the total budget is now 6000 EUR, not 5000; we moved the trip to May 3 instead. ",
    "cjk": "改成6个人了，",
}


def record(text: str, i: int, type_: MemoryType = MemoryType.FACT) -> MemoryRecord:
    return MemoryRecord(
        id=f"r{i}", namespace="bench", content=text, role="user", type=type_, embedding=np.ones(4, np.float32)
    )


def sized(unit: str, kilobytes: int) -> str:
    """``unit`` repeated to ``kilobytes`` KB (1,000 bytes) of UTF-8, cut at a character boundary."""
    target = kilobytes * 1000
    text = unit * (target // len(unit.encode("utf-8")) + 1)
    return text.encode("utf-8")[:target].decode("utf-8", errors="ignore")


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,40,160", help="input sizes in KB (1,000 bytes of UTF-8)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best is printed")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    hard = record("The total budget must stay under 5000 EUR for the whole trip.", 1, MemoryType.HARD_CONSTRAINT)
    soft = record("We would like to move the trip to early June if the budget allows.", 2)
    print(f"{'input':8} {'KB':>5} {'chars':>8} {'cues':>6} {'explicit_cues s':>16} {'decide s':>10}")
    for name, unit in UNITS.items():
        for kb in sizes:
            text = sized(unit, kb)
            new = record(text, 0)
            cues = len(explicit_cues(text))
            t_cues = best(lambda text=text: explicit_cues(text), args.repeat)
            t_decide = best(lambda new=new: decide(new, [(hard, 0.6), (soft, 0.6)]), args.repeat)
            print(f"{name:8} {kb:5d} {len(text):8d} {cues:6d} {t_cues:16.4f} {t_decide:10.4f}")


if __name__ == "__main__":
    main()

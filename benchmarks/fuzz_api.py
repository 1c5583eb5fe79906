"""Fuzz retain's public API with hypothesis for a fixed wall time and print what escaped.

Prints the calls made, the calls refused by retain's own errors, every other exception (type,
method, count, first messages) and the records lost (a record gone after a call that removes
nothing). The property and its strategies are those of ``tests/test_fuzz.py`` (``tests/api_fuzz.py``).

    python benchmarks/fuzz_api.py --minutes 10 [--steps 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api_fuzz import Tally, drive
from test_fuzz import _seed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    tally = Tally()
    stop = time.monotonic() + args.minutes * 60
    examples = 0

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        nonlocal examples
        examples += 1
        drive(data, steps=args.steps, tally=tally, seed_records=_seed)

    start = time.monotonic()
    while time.monotonic() < stop:  # batches of fresh random examples until the time is up
        run()
    minutes = (time.monotonic() - start) / 60
    print(
        f"fuzz: {minutes:.1f} min, {examples} examples, {tally.calls} calls, {tally.refused} refused by retain errors"
    )
    print(f"non-library exceptions: {sum(len(v) for v in tally.foreign.values())}; lost records: {len(tally.lost)}")
    for key, messages in sorted(tally.foreign.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(messages):5d}  {key}: {messages[0]!r}")
    for line in tally.lost[:20]:
        print(f"  lost  {line}")


if __name__ == "__main__":
    main()

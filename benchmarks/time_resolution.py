"""What resolving time expressions on add costs: per turn, and in ingest speed with it on and off.

Resolves every LoCoMo dev turn against its session date (:func:`retain.text.temporal.resolve_times`) and
prints the cost per turn and how many expressions were found and resolved; then ingests the
conversations with ``MemoryConfig(resolve_times=True)`` and ``False`` (HashingEncoder, so the
difference is not lost in MiniLM's time) and prints turns/s for both.

Usage::

    .venv/bin/python benchmarks/time_resolution.py [--data LOCOMO.json]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.eval.datasets import load_locomo
from retain.eval.locomo import ingest
from retain.memory import Memory
from retain.text.temporal import resolve_times

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo_dev.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    args = parser.parse_args()
    conversations = load_locomo(args.data)
    turns = [(t.text, t.session_time) for c in conversations for t in c.turns]
    resolve_times("yesterday", turns[0][1])  # dateparser's first call loads its language data
    started = time.perf_counter()
    found = [ref for text, when in turns for ref in resolve_times(text, when)]
    per_turn = (time.perf_counter() - started) * 1000 / len(turns)
    kinds = Counter(ref.granularity for ref in found)
    print(f"{len(turns)} turns, {len(found)} time expressions ({dict(kinds)}); {per_turn:.3f} ms/turn")
    for on in (False, True):
        encoder = HashingEncoder(384)
        seconds = 0.0
        for conv in conversations:
            with Memory(":memory:", encoder=encoder, config=MemoryConfig(resolve_times=on)) as mem:
                t0 = time.perf_counter()
                ingest(mem, conv, f"locomo-{conv.sample_id}")
                seconds += time.perf_counter() - t0
        print(f"ingest (HashingEncoder) resolve_times={on}: {len(turns) / seconds:.1f} turns/s")


if __name__ == "__main__":
    main()

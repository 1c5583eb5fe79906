"""Cost of supersede detection on add at 10,000 stored records, encoder excluded.

A namespace is filled with ``--records`` synthetic statements (slots, entities, values, some with
correction cues; stored with supersede off). Then ``--adds`` new statements, drafted and embedded
beforehand (so the encoder's cost is not counted), go through
:func:`retain.ingest.detect.find_updates` one at a time, as ``Memory.add`` runs it: once with the
shipped conflict model and once with the rules alone (the reference, measured in the same run).
Prints p50 / p95 milliseconds per add for both and their ratio. HashingEncoder vectors.

    python benchmarks/supersede_cost.py [--records 10000] [--adds 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.ingest.conflict_model import default_conflict_model
from retain.ingest.detect import find_updates
from retain.memory import Memory
from retain.record import MemoryRecord, new_id

SLOTS = ["budget", "deadline", "head count", "word limit", "per-day allowance", "monthly fee", "venue", "owner"]
ENTITIES = ["Harbour Hall", "Old Mill", "Ana", "Tomas", "Project Atlas", "the launch", "the lease", "the offsite"]
CUES = ["", "", "", "Actually, ", "Correction: ", "Good news, ", "Update: "]


def statement(rng: random.Random) -> str:
    slot, entity = rng.choice(SLOTS), rng.choice(ENTITIES)
    value = rng.choice([f"{rng.randint(1, 90) * 100:,}", f"{rng.randint(1, 28)} May", f"{rng.randint(2, 60)} people"])
    return f"{rng.choice(CUES)}The {slot} for {entity} is {value}, note {rng.randint(1, 10**6)}."


def timings(mem: Memory, records: list[MemoryRecord], model: object) -> list[float]:
    core = mem._core  # a benchmark times the internal step directly
    out = []
    for rec in records:
        start = time.perf_counter()
        find_updates(core.store, "bench", [rec], policy=core.config.conflict_policy, model=model)  # type: ignore[arg-type]
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--adds", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    encoder = HashingEncoder(384)
    with Memory(encoder=encoder, config=MemoryConfig(supersede=False)) as mem:
        texts = [statement(rng) for _ in range(args.records)]
        for i in range(0, len(texts), 1000):
            mem.add_many([{"content": t} for t in texts[i : i + 1000]], namespace="bench")
        news = [statement(rng) for _ in range(args.adds)]
        vectors = encoder.encode(news)
        records = [
            MemoryRecord(id=new_id(), namespace="bench", content=t, embedding=np.asarray(v, dtype=np.float32))
            for t, v in zip(news, vectors, strict=True)
        ]
        model = default_conflict_model()
        timings(mem, records[:20], model)  # warm the caches of both paths
        rules = timings(mem, records, None)
        learned = timings(mem, records, model)
    p50r, p95r = np.percentile(rules, [50, 95])
    p50m, p95m = np.percentile(learned, [50, 95])
    print(f"{args.records} records, {args.adds} adds (encoder excluded)")
    print(f"  rules alone (reference): p50 {p50r:.2f} ms, p95 {p95r:.2f} ms per add")
    print(f"  conflict model:          p50 {p50m:.2f} ms, p95 {p95m:.2f} ms per add ({p95m / p95r:.2f}x ref p95)")


if __name__ == "__main__":
    main()

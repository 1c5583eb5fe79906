"""One large ``Memory.add_many`` call with supersede detection on (the default): how long thousands of
conversation turns take to store, and how much of it is supersede detection.

The turns are the LoCoMo dev conversations', then the BEAM chats' messages (read from ``../shared``,
never copied), as ``benchmarks/sam_scale.py`` stores them. HashingEncoder (384 dims) by default, so the
figure is the library's own work, not a model's forward pass.

    python benchmarks/bulk_add.py [--records 4000] [--batch 0] [--no-supersede]
        [--locomo PATH] [--beam PATH]

``--batch 0`` (default) adds all records in one call; ``--batch N`` in calls of N. ``--encoder minilm``
embeds with all-MiniLM-L6-v2 instead and prints, as the reference measured in the same run, the bare
``SentenceTransformer.encode`` of the same texts (records/s; after each ``add_many`` call, the texts of
that call, so both see the same load): the ratio says how much of the model's own speed ``add_many``
keeps on this host, whatever its load. ``--threads N``: torch threads.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from sam_scale import history_records

from retain import HashingEncoder, Memory, MemoryConfig
from retain.encoders.basis import MiniLMEncoder
from retain.ingest import detect as conflict_module
from retain.ingest.draft import NewMemory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=0, help="records per add_many call (0: all in one)")
    ap.add_argument("--no-supersede", action="store_true", help="MemoryConfig(supersede=False)")
    ap.add_argument("--locomo", default="../shared/data/locomo/locomo_dev.json")
    ap.add_argument("--beam", default="../shared/data/beam/100K")
    ap.add_argument("--encoder", choices=("hashing", "minilm"), default="hashing")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (minilm; default 1)")
    args = ap.parse_args()
    if args.records < 1 or args.batch < 0:
        ap.error("--records must be >= 1 and --batch >= 0")
    items = history_records(args.locomo, args.beam, args.records)
    spent = {"find_updates": 0.0}
    real: Callable[..., Any] = conflict_module.find_updates

    def timed(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(*a, **kw)
        finally:
            spent["find_updates"] += time.perf_counter() - t0

    conflict_module.find_updates = timed  # retain.ingest.supersession imports it at call time
    encoder: Any = HashingEncoder(dim=384) if args.encoder == "hashing" else MiniLMEncoder(threads=args.threads)
    if args.encoder == "minilm":
        encoder.encode(["warm up"])  # the model loads outside the timed part
    mem = Memory(encoder=encoder, config=MemoryConfig(supersede=not args.no_supersede))
    if args.encoder == "minilm":
        _date_warm_up(mem)
    bare: Callable[[list[str]], Any] | None = None
    if args.encoder == "minilm":
        model = encoder._load()  # the SentenceTransformer itself: the reference, same threads
        bare = partial(model.encode, batch_size=encoder.batch_size, convert_to_numpy=True, show_progress_bar=False)
    step = args.batch or len(items)
    wall = cpu = ref_wall = ref_cpu = 0.0
    for start in range(0, len(items), step):  # each call, then the bare forward pass of its texts
        chunk = items[start : start + step]
        t0, c0 = time.perf_counter(), time.process_time()
        mem.add_many(chunk, namespace="bulk")
        wall, cpu = wall + time.perf_counter() - t0, cpu + time.process_time() - c0
        if bare is not None:
            t0, c0 = time.perf_counter(), time.process_time()
            bare([item.content for item in chunk])
            ref_wall, ref_cpu = ref_wall + time.perf_counter() - t0, ref_cpu + time.process_time() - c0
    stored = len(mem.records(namespace="bulk"))
    print(
        f"{len(items)} turns in calls of {step}: {wall:.1f} s wall ({len(items) / wall:,.0f} records/s), "
        f"{cpu:.1f} s CPU"
    )
    print(f"  supersede detection (find_updates): {spent['find_updates']:.1f} s; records stored: {stored}")
    if bare is not None:
        print(
            f"  reference, SentenceTransformer.encode alone (same texts, calls alternating): "
            f"{len(items) / ref_wall:,.0f} records/s, {ref_cpu:.1f} s CPU; add_many / it = {ref_wall / wall:.2f} "
            f"wall, {ref_cpu / cpu:.2f} CPU (threads={encoder.threads})"
        )


def _date_warm_up(mem: Memory) -> None:
    """dateparser's one-time load (about 0.3 s CPU on its first expression) outside the timed part, as
    the model's is."""
    mem.add_many([NewMemory("we met yesterday", event_time="2023-05-08T13:56:00Z")], namespace="warm-up")


if __name__ == "__main__":
    main()

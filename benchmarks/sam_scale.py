"""State-adaptive retrieval among many distractors: the scenario probes with thousands of older,
unrelated records stored before each scenario's events.

The scenario files (``--data``, default ``../shared/scenarios``) are replayed as by
``retain eval scenarios --retriever content,state``, but each scenario's namespace first receives
``--history`` records of other conversations: the turns of the LoCoMo dev conversations, then the
BEAM chats' messages (read from ``../shared``, never copied), in that order, with positions before the
scenario's events. The needed events are the same; every history record is a distractor. It prints
recall@5 / recall@10 / MRR over all probes and the terse ones for content-only and state-adaptive
search, and the search pool settings, which the flags change (to measure what the state's share of the
pool buys at scale):

    python benchmarks/sam_scale.py [--history 7000] [--state-pool 20] [--core-pool 50]
        [--parts whole,goal,result [--parts whole ...]]
"""

from __future__ import annotations

import argparse
import time

from retain.config import DEFAULT_RETRIEVAL_CONFIG, RetrievalConfig
from retain.encoders.basis import MiniLMEncoder
from retain.eval.beam import load_beam
from retain.eval.datasets import load_locomo
from retain.eval.locomo import session_items
from retain.eval.scenario_runner import run_scenarios
from retain.eval.scenarios import load_scenarios
from retain.eval.streams import CachingEncoder
from retain.ingest.draft import NewMemory


def history_records(locomo: str, beam: str, n: int) -> list[NewMemory]:
    """The first ``n`` turns of the LoCoMo conversations, then of the BEAM chats, as new memories."""
    out: list[NewMemory] = []
    for conv in load_locomo(locomo):
        for _, items in sorted(session_items(conv).items()):
            out.extend(items)
    if len(out) < n:
        for chat in load_beam(beam):
            out.extend(
                NewMemory(content=m.content, role=m.role, event_time=m.time, segment=f"beam-{chat.chat_id}-{m.session}")
                for m in chat.messages
                if m.content.strip()
            )
    if len(out) < n:
        raise SystemExit(f"--history {n}: only {len(out)} turns in {locomo} and {beam}")
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/scenarios")
    ap.add_argument("--locomo", default="../shared/data/locomo/locomo_dev.json")
    ap.add_argument("--beam", default="../shared/data/beam/100K")
    ap.add_argument("--history", type=int, default=7000, help="distractor records before each scenario")
    ap.add_argument("--state-pool", type=int, default=DEFAULT_RETRIEVAL_CONFIG.state_pool)
    ap.add_argument("--core-pool", type=int, default=DEFAULT_RETRIEVAL_CONFIG.core_pool)
    ap.add_argument("--recent-pool", type=int, default=DEFAULT_RETRIEVAL_CONFIG.recent_pool)
    ap.add_argument(
        "--parts",
        action="append",
        help="state vectors whose nearest records join the pool, comma-separated; repeat the flag to "
        f"compare settings in one run (texts embedded once); default {','.join(DEFAULT_RETRIEVAL_CONFIG.state_parts)}",
    )
    args = ap.parse_args()
    if args.history < 0:
        ap.error(f"--history: a number of records >= 0, got {args.history}")
    for parts in args.parts or []:
        unknown = set(parts.split(",")) - {"whole", "goal", "result"}
        if unknown:
            ap.error(f"--parts: {sorted(unknown)} not among whole, goal, result")
    scenarios = load_scenarios(args.data)
    history = history_records(args.locomo, args.beam, args.history) if args.history else []
    encoder = CachingEncoder(MiniLMEncoder())  # shared by the settings compared: each text embedded once
    print(f"{len(scenarios)} scenarios, {sum(len(s.probes) for s in scenarios)} probes, {len(history)} history records")
    print(f"{'parts':<20} {'retriever':<10} {'r@5':>6} {'r@10':>6} {'MRR':>6} {'terse r@5':>10} {'terse MRR':>10}")
    for parts in args.parts or [",".join(DEFAULT_RETRIEVAL_CONFIG.state_parts)]:
        retrieval = RetrievalConfig(
            state_pool=args.state_pool,
            core_pool=args.core_pool,
            recent_pool=args.recent_pool,
            state_parts=tuple(p for p in parts.split(",") if p),
        )
        t0 = time.perf_counter()
        report = run_scenarios(
            scenarios, encoder, retrievers=("content", "state"), history=history, progress=False, retrieval=retrieval
        )
        for run in report["runs"]:
            a, t = run["overall"]["all"], run["overall"]["terse"]
            print(
                f"{parts:<20} {run['retriever']:<10} {a['recall@5']:>6.3f} {a['recall@10']:>6.3f} "
                f"{a['mrr']:>6.3f} {t['recall@5']:>10.3f} {t['mrr']:>10.3f}"
            )
        print(
            f"  (state {args.state_pool} per part, core {args.core_pool}, recent {args.recent_pool}; "
            f"{time.perf_counter() - t0:.0f} s)",
            flush=True,
        )


if __name__ == "__main__":
    main()

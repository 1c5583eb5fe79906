"""How far the SAM scorer's model class can go on a scenario set: fitted on the training files and
scored on the evaluation files (the held-out figure the issue asks for), then, as a diagnostic only,
fitted on the evaluation files themselves and scored on the same probes.

The second figure is no result: it shows what the best weights of the shipped features and model
(:func:`retain.state.training.train_state_scorer`, same pools, same settings) could reach if the evaluation
labels were known. When it is below a target, no re-fitting of these features reaches the target;
new information is needed. Nothing is saved and no model fitted here is shipped.

Also printed: the recall@5 an oracle ranking reaches (1.0 unless a probe has more than 5 needed
events) and the share of needed events that are in the candidate pools at all.

    python benchmarks/sam_ceiling.py [--train scenarios/train --train scenarios/dev]
        [--eval ../shared/scenarios] [--l2 3e-2 --l2 1e-3] [--epochs 300]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from retain.encoders.basis import MiniLMEncoder
from retain.eval.sam_train import ProbeExample, probe_examples, rank_metrics, scenario_files
from retain.state.training import train_state_scorer


def _row(name: str, figures: dict[str, dict[str, float]]) -> str:
    a, t = figures["all"], figures["terse"]
    return (
        f"{name:<44} {a['probes']:>4} {a['recall@5']:.3f} {a['recall@10']:.3f} {a['mrr']:.3f}"
        f"   {t['probes']:>4} {t['recall@5']:.3f} {t['recall@10']:.3f} {t['mrr']:.3f}"
    )


def _oracle(probes: list[ProbeExample]) -> tuple[float, float]:
    usable = [p for p in probes if p.needed]
    best = float(np.mean([min(5, len(p.needed)) / len(p.needed) for p in usable]))
    pooled = float(np.mean([len(p.needed & set(p.event_ids)) / len(p.needed) for p in usable]))
    return best, pooled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", action="append", help="training scenario file or folder (repeatable)")
    ap.add_argument("--eval", default="../shared/scenarios", help="evaluation scenario file or folder")
    ap.add_argument("--l2", action="append", type=float, help="L2 penalty (repeatable; default 3e-2)")
    ap.add_argument("--epochs", type=int, default=300)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    encoder = MiniLMEncoder()
    train = probe_examples(scenario_files(args.train or ["scenarios/train", "scenarios/dev"]), encoder)
    held = probe_examples(scenario_files([args.eval]), encoder)
    best, pooled = _oracle(held)
    print(f"evaluation probes: oracle recall@5 {best:.3f}, needed events in the pools {pooled:.3f}")
    print(f"{'fitted on -> scored on (l2)':<44} {'n':>4} r@5   r@10  MRR      terse r@5  r@10  MRR")
    for l2 in args.l2 or [3e-2]:
        fitted = train_state_scorer([p.example for p in train], l2=l2, epochs=args.epochs)
        print(_row(f"train ({len(train)}) -> eval, held-out ({l2:g})", rank_metrics(held, fitted)))
        print(_row(f"train -> train, in-sample ({l2:g})", rank_metrics(train, fitted)))
        ceiling = train_state_scorer([p.example for p in held], l2=l2, epochs=args.epochs)
        print(_row(f"eval -> eval, in-sample, diagnostic ({l2:g})", rank_metrics(held, ceiling)))
    print(_row("content only on eval", rank_metrics(held, None)))
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

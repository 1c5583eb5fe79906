"""How well EMBER's utility predictor (:mod:`retain.retention.utility`) foresees which turns will be needed.

Replays the LoCoMo dev conversations (and the BEAM dev chats) as oracle traces: every turn is scored on
arrival from causal information only; a turn is positive when some question's evidence points at it.
Prints, one row per conversation plus the mean per data set, ROC-AUC and the hit rate of "keep the top
share" (the share of a conversation's positives among its top 10 / 25 / 50 % by score) for:

- ``keep the longest`` — score = token count (baseline);
- ``RulePrior`` — the hand-weighted prior, no training (so no in/out-of-sample distinction);
- ``LearnedUtility LOCO`` — refitted for each conversation on all the *other* conversations (and chats):
  the honest out-of-sample figure;
- ``LearnedUtility without the embedding`` — the same, features only (what the embedding adds);
- ``LearnedUtility in-sample`` — fitted on everything, scored on the same data (what the shipped
  model, built the same way by ``retain train-utility``, scores on the dev data).

Usage::

    .venv/bin/python benchmarks/utility_auc.py [--data LOCOMO.json] [--beam DIR | --no-beam] [--encoder minilm]

Data is read in place (default ``../shared/data/locomo/locomo_dev.json`` and ``../shared/data/beam/100K``)
and never copied. Embedding all turns with MiniLM takes a few minutes on a CPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.console import Console

from retain.cli.common import make_encoder
from retain.cli.utility import SHARES, beam_chat_dirs, loco_table
from retain.eval.datasets import load_locomo, resolve_locomo
from retain.eval.utility_traces import beam_traces, evaluate, loco_auc, locomo_traces
from retain.record import MemoryRecord
from retain.retention.utility import RulePrior, UtilityContext, train_utility

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BEAM = REPO_ROOT.parent / "shared" / "data" / "beam" / "100K"


class KeepLongest:
    """Baseline: utility grows with length, 1 - 1 / (1 + tokens)."""

    name = "keep-longest"

    def score(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> np.ndarray:
        return 1.0 - 1.0 / (1.0 + np.array([r.token_count for r in records], dtype=np.float64))

    def feedback(self, record: MemoryRecord, context: UtilityContext, used: bool) -> None:
        """No-op."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo-format file (dev data)")
    parser.add_argument("--beam", type=Path, default=DEFAULT_BEAM, help="BEAM chat folder or folder of chats")
    parser.add_argument("--no-beam", action="store_true", help="LoCoMo only")
    parser.add_argument("--encoder", default="minilm", help="'minilm' or 'hashing-<dim>'")
    args = parser.parse_args()
    console = Console(width=None if sys.stdout.isatty() else 140)

    path = resolve_locomo(args.data)
    encoder = make_encoder(args.encoder)
    started = time.perf_counter()
    traces = locomo_traces(load_locomo(path), encoder)
    chats = [] if args.no_beam or not args.beam.is_dir() else beam_chat_dirs(args.beam)
    traces += beam_traces(chats, encoder)
    console.print(
        f"{path.name}: {sum(1 for t in traces if not t[0][0].namespace.startswith('beam-'))} conversations; "
        f"BEAM: {len(chats)} chats; encoder {encoder.name}; traces built in {time.perf_counter() - started:.0f} s"
    )
    console.print(loco_table("keep the longest (baseline)", evaluate(KeepLongest(), traces, shares=SHARES)))
    console.print(loco_table("RulePrior (no training)", evaluate(RulePrior(), traces, shares=SHARES)))
    console.print(loco_table("LearnedUtility, leave-one-conversation-out", loco_auc(traces, shares=SHARES)))
    no_embedding = loco_auc(traces, shares=SHARES, embedding=False)
    console.print(loco_table("LearnedUtility without the embedding, leave-one-conversation-out", no_embedding))
    fitted = train_utility(traces)
    console.print(loco_table("LearnedUtility, in-sample (fit on all)", evaluate(fitted, traces, shares=SHARES)))
    locomo_only = [t for t in traces if not t[0][0].namespace.startswith("beam-")]
    if len(locomo_only) > 1 and len(locomo_only) < len(traces):
        result = loco_auc(locomo_only, shares=SHARES)
        console.print(loco_table("LearnedUtility, leave-one-conversation-out, trained on LoCoMo only", result))


if __name__ == "__main__":
    main()

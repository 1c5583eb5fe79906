"""Type accuracy of the rule classifier and the learned one, split by split, side by side.

For each folder (default: ``scenarios/train``, ``scenarios/dev``, ``scenarios/test`` and
``../shared/scenarios``) every event is typed from its ``text`` and ``role`` only, by the rule cascade
(:func:`retain.text.classify.classify`) and by the shipped learned model
(:func:`retain.text.typemodel.load_type_model`, its text head: the features without an embedding,
which is what every encoder gets while the shipped file has no embedding head). Printed per folder:
events, type accuracy of each, and the precision and recall of ``hard_constraint``. Then, for one
LoCoMo conversation (``--locomo``, default the first of ``../shared/data/locomo/locomo_dev.json``), how
many of its turns each classifier types ``hard_constraint``. Only totals are printed: no per-event
rows, so the test split can be scored without being read.

``--minilm`` adds the learned model's embedding head (what the write path uses when the store's
encoder is MiniLM; events embedded as ``"<role>: <text>"``, cached under ``--cache``); ``--model``
scores another model file than the shipped one; ``--confusion`` prints the gold x predicted counts
of the learned model per folder (totals only).

Usage::

    .venv/bin/python benchmarks/type_accuracy.py [--data DIR ...] [--locomo FILE] [--model FILE]
        [--minilm --cache DIR] [--confusion]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from retain.encoders.basis import MiniLMEncoder
from retain.eval.type_train import Example, embed_examples, load_examples
from retain.record import MemoryType
from retain.text.classify import classify
from retain.text.typemodel import load_type_model

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = [
    REPO_ROOT / "scenarios" / "train",
    REPO_ROOT / "scenarios" / "dev",
    REPO_ROOT / "scenarios" / "test",
    REPO_ROOT.parent / "shared" / "scenarios",
]
DEFAULT_LOCOMO = REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
HARD = MemoryType.HARD_CONSTRAINT


def figures(examples: list[Example], typer: Callable[[str, str], MemoryType]) -> tuple[float, float, float]:
    """Accuracy, hard_constraint precision and recall of ``typer`` over ``examples``."""
    return scores([typer(e.text, e.role) for e in examples], examples)


def confusion(examples: list[Example], typer: Callable[[str, str], MemoryType]) -> None:
    """Print the gold (rows) x predicted (columns) counts of ``typer`` over ``examples``."""
    types = list(MemoryType)
    counts = Counter((e.label, typer(e.text, e.role)) for e in examples)
    print("  gold \\ pred      " + " ".join(f"{t.value[:6]:>6}" for t in types))
    for g in types:
        print(f"  {g.value:<16} " + " ".join(f"{counts[(g, p)]:>6}" for p in types))


def scores(pred: list[MemoryType], examples: list[Example]) -> tuple[float, float, float]:
    """Accuracy, hard_constraint precision and recall of the predictions ``pred`` of ``examples``."""
    right = sum(p is e.label for p, e in zip(pred, examples, strict=True))
    tp = sum(p is HARD and e.label is HARD for p, e in zip(pred, examples, strict=True))
    said = sum(p is HARD for p in pred)
    gold = sum(e.label is HARD for e in examples)
    return right / len(examples), tp / said if said else 0.0, tp / gold if gold else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, action="append", help="scenario folder (repeat)")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON file")
    parser.add_argument("--model", type=Path, help="type model file (default: the shipped one)")
    parser.add_argument("--minilm", action="store_true", help="also score the embedding head (MiniLM)")
    parser.add_argument("--cache", type=Path, help="folder caching the MiniLM vectors of the events")
    parser.add_argument("--confusion", action="store_true", help="gold x predicted counts of the learned model")
    args = parser.parse_args(argv)
    model = load_type_model(args.model)
    learned: Callable[[str, str], MemoryType] = model.predict
    encoder = MiniLMEncoder() if args.minilm else None
    head = f"{'data':<28} {'events':>6}  {'rules acc':>9} {'hard P/R':>11}  {'learned acc':>11} {'hard P/R':>11}"
    print(head + (f"  {'+MiniLM acc':>11} {'hard P/R':>11}" if encoder else ""))
    for folder in args.data or DEFAULT_DATA:
        examples = load_examples([folder])
        r_acc, r_p, r_r = figures(examples, classify)
        l_acc, l_p, l_r = figures(examples, learned)
        name = f"{folder.parent.name}/{folder.name}"
        line = f"{name:<28} {len(examples):>6}  {r_acc:>9.3f} {r_p:>5.2f}/{r_r:<5.2f}  "
        line += f"{l_acc:>11.3f} {l_p:>5.2f}/{l_r:<5.2f}"
        if encoder is not None:
            vectors = embed_examples(examples, encoder, args.cache)
            pred = [model.predict(e.text, e.role, vectors[i]) for i, e in enumerate(examples)]
            e_acc, e_p, e_r = scores(pred, examples)
            line += f"  {e_acc:>11.3f} {e_p:>5.2f}/{e_r:<5.2f}"
        print(line)
        if args.confusion:
            confusion(examples, learned)
    if args.locomo.exists():
        from retain.eval.datasets import load_locomo

        conversation = load_locomo(args.locomo)[0]
        turns = conversation.turns
        rules = sum(classify(t.text, t.speaker) is HARD for t in turns)
        model_hard = sum(model.predict(t.text, t.speaker) is HARD for t in turns)
        print(
            f"\nLoCoMo {conversation.sample_id}: {len(turns)} turns typed hard_constraint: "
            f"rules {rules}, learned {model_hard}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

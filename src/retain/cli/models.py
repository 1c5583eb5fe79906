"""Model commands: ``reembed`` (change a store's encoder), ``train-fusion`` (fit the learned fusion,
:func:`retain.retrieval.fusion.train_fusion`) and ``fit-conflict`` (fit the conflict model,
:func:`retain.eval.conflict_fit.fit_from_folder`).

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from retain.cli.common import Commands, console, fail, make_encoder
from retain.cli.options import PANEL_MODELS, EncoderOption
from retain.errors import RetainError

__all__ = ["fit_conflict", "reembed", "register", "train_fusion"]

commands = Commands()
register = commands.register
"""Adds ``reembed``, ``train-fusion`` and ``fit-conflict`` to ``app``."""


@commands("reembed", PANEL_MODELS)
def reembed(
    db: Annotated[Path, typer.Argument(help="Store file to re-embed.")],
    encoder: EncoderOption = "minilm",
) -> None:
    """Re-embed every record of a store with another encoder (after an EncoderMismatch)."""
    from retain.memory import Memory

    if not db.is_file():
        fail(RetainError(f"no store at {db}"))
    count = Memory.reembed(db, make_encoder(encoder))
    console.print(f"re-embedded {count} records with {encoder}")


@commands("train-fusion", PANEL_MODELS)
def train_fusion(
    out: Annotated[Path, typer.Option(help="Where to write the fusion model JSON.")],
    data: Annotated[Path | None, typer.Option(help="LoCoMo-format file (default: see 'retain eval locomo').")] = None,
    encoder: EncoderOption = "minilm",
) -> None:
    """Fit the learned fusion on LoCoMo-format conversations (dev data only) and write it as JSON.

    The model shipped in retain/models/fusion.json was built with:
    retain train-fusion --data ../shared/data/locomo/locomo_dev.json --out src/retain/models/fusion.json
    """
    from retain.eval.datasets import load_locomo, resolve_locomo
    from retain.eval.locomo import fusion_training_pools
    from retain.retrieval.fusion import train_fusion as fit

    try:
        path = resolve_locomo(data)
        conversations = load_locomo(path)
    except RetainError as exc:
        fail(exc)
    enc = make_encoder(encoder)
    features, labels = fusion_training_pools(conversations, lambda: enc)
    ids = ", ".join(c.sample_id for c in conversations)
    model = fit(
        features,
        labels,
        trained_on=f"{path.name} ({len(conversations)} conversations: {ids}), categories 1-4, encoder {enc.name}",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.to_json() + "\n", encoding="utf-8")
    console.print(f"wrote {out} (trained on {len(features)} questions)")


@commands("fit-conflict", PANEL_MODELS)
def fit_conflict(
    out: Annotated[Path, typer.Option(help="Where to write the conflict model JSON.")],
    train: Annotated[Path, typer.Option(help="Training scenarios (a folder of retain-scenario/1 files).")] = Path(
        "scenarios/train"
    ),
    threshold: Annotated[float, typer.Option(help="P(update) at which a pair supersedes (chosen on dev).")] = 0.52,
    hard_threshold: Annotated[float, typer.Option(help="P(update) a hard constraint's update needs.")] = 0.6,
    conflict_threshold: Annotated[float, typer.Option(help="P(update) that opens a conflict instead.")] = 0.5,
    encoder: EncoderOption = "minilm",
) -> None:
    """Fit the conflict model on labelled (new, old) pairs of training scenarios and write it as JSON.

    The model shipped in retain/models/conflict.json was built with the command and thresholds in
    docs/benchmarks.md (section "Corrections: supersede detection").
    """
    from retain.eval.conflict_fit import fit_from_folder

    try:
        model = fit_from_folder(train, make_encoder(encoder), (threshold, hard_threshold, conflict_threshold))
    except RetainError as exc:
        fail(exc)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(model.to_json() + "\n", encoding="utf-8")
    console.print(f"wrote {out} ({model.meta['pairs']} pairs, {model.meta['positives']} positive)")

"""Precision and recall of supersede-on-add on scenario files (``gold.supersedes`` labels).

Each scenario's events are replayed in order through ``Memory.add`` (one in-memory store per
scenario, role and event time kept, ``MemoryConfig.supersede`` on); the ``supersedes`` links the
store holds afterwards are compared with gold: a link new -> old is correct when gold.supersedes of
the new event lists the old one. Reported side by side: the repository's ``scenarios/train``,
``scenarios/dev`` (the tuning set) and ``scenarios/test`` (held out: figures only, no miss or false
alarm is printed, so its gold is never read while designing), and ``../shared/scenarios``. Every miss
and false alarm of the other sets is listed with its reason (``--no-errors`` to leave them out).
With ``--merge`` paraphrase merging is switched on too and every merge is listed.

    python benchmarks/supersede_detection.py [--train scenarios/train] [--dev scenarios/dev]
        [--test scenarios/test] [--data ../shared/scenarios] [--encoder minilm] [--merge] [--no-errors]
        [--vectors FILE.npz] [--rules]

By default the shipped conflict model decides (``MemoryConfig.conflict_model``); ``--rules`` measures
the rules alone. Each line also gives the conflicts left open at the end of the replays.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from retain.cli.common import make_encoder
from retain.config import MemoryConfig
from retain.encoders.basis import Encoder
from retain.eval.scenarios import actor_for_role
from retain.eval.streams import CachingEncoder
from retain.memory import Memory

ROOT = Path(__file__).resolve().parents[1]


class Precomputed(CachingEncoder):
    """A :class:`CachingEncoder` whose memo starts from an npz (``texts``, ``vecs``, ``toks``) written
    for the same encoder; texts it lacks are embedded by the wrapped encoder."""

    def __init__(self, inner: Encoder, path: Path) -> None:
        super().__init__(inner)
        data = np.load(path, allow_pickle=True)
        texts = data["texts"].tolist()
        self._vectors.update(zip(texts, data["vecs"], strict=True))
        self._tokens.update(zip(texts, (int(t) for t in data["toks"]), strict=True))


def replay(path: Path, encoder: Encoder, config: MemoryConfig) -> dict[str, Any]:
    """Replay one scenario; returns gold and predicted (new, old) event-id links, reasons, merges."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    events = doc["events"]
    by_record: dict[str, str] = {}
    with Memory(encoder=encoder, config=config) as mem:
        for e in events:
            role = e.get("role", "user")
            rid = mem.add(e["text"], namespace="s", role=role, event_time=e.get("t"), actor=actor_for_role(role))
            by_record.setdefault(rid, e["id"])
        records = mem.records(namespace="s", include_superseded=True)
        audit = mem.store.audit_log("s")
        mem_conflicts = mem.conflicts("s")
    # every record a correction retired (a correction may retire several statements of its slot)
    predicted = {(by_record[r.superseded_by], by_record[r.id]) for r in records if r.superseded_by}
    conflicts = len(mem_conflicts)
    reasons = {
        (by_record[a["details"]["superseded_by"]], by_record[a["record_id"]]): f"{a['reason']} {a['details']}"
        for a in audit
        if a["op"] == "supersede" and "superseded_by" in a["details"]  # refused proposals carry none
    }
    merges = [(a["record_id"], a["reason"]) for a in audit if a["op"] == "merge"]
    gold = {(e["id"], s) for e in events for s in (e.get("gold") or {}).get("supersedes", [])}
    text = {e["id"]: e["text"] for e in events}
    return {
        "gold": gold,
        "predicted": predicted,
        "reasons": reasons,
        "merges": merges,
        "text": text,
        "by_record": by_record,
        "conflicts": conflicts,
    }


def evaluate(label: str, folder: Path, encoder: Encoder, config: MemoryConfig, *, show_errors: bool = True) -> None:
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise SystemExit(f"{label}: no scenario files under {folder}")
    tp = fp = fn = opened = 0
    errors: list[str] = []
    merges: list[str] = []
    for path in paths:
        out = replay(path, encoder, config)
        gold, predicted, text = out["gold"], out["predicted"], out["text"]
        opened += out["conflicts"]
        tp += len(gold & predicted)
        fp += len(predicted - gold)
        fn += len(gold - predicted)
        for new, old in sorted(predicted - gold):
            errors.append(f"  FALSE {path.stem} {new}->{old}: {out['reasons'].get((new, old), '')}")
            errors.append(f"        new: {text[new][:100]!r}\n        old: {text[old][:100]!r}")
        for new, old in sorted(gold - predicted):
            errors.append(f"  MISS  {path.stem} {new}->{old}")
            errors.append(f"        new: {text[new][:100]!r}\n        old: {text[old][:100]!r}")
        for rid, reason in out["merges"]:
            merges.append(f"  MERGE {path.stem} into {out['by_record'].get(rid, rid)}: {reason}")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    print(
        f"{label}: {len(paths)} scenarios, {tp + fn} gold links: precision {precision:.3f} ({tp}/{tp + fp}), "
        f"recall {recall:.3f} ({tp}/{tp + fn}), F1 {f1:.3f}, open conflicts {opened}"
    )
    if show_errors:
        print("\n".join(errors + merges) if errors or merges else "  no errors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=Path, default=ROOT / "scenarios" / "train", help="training scenarios")
    parser.add_argument("--dev", type=Path, default=ROOT / "scenarios" / "dev", help="tuning scenarios")
    parser.add_argument("--test", type=Path, default=ROOT / "scenarios" / "test", help="held-out test split")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "scenarios", help="held-out scenarios")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--vectors", type=Path, help="npz of precomputed vectors (texts, vecs, toks) to reuse")
    parser.add_argument("--sets", default="train,dev,test,shared", help="which of train,dev,test,shared to run")
    parser.add_argument("--rules", action="store_true", help="the shipped rules alone (no conflict model)")
    parser.add_argument("--merge", action="store_true", help="also merge paraphrases and list the merges")
    parser.add_argument("--no-errors", action="store_true", help="figures only, no list of misses")
    args = parser.parse_args()
    encoder = make_encoder(args.encoder)
    if args.vectors:
        encoder = Precomputed(encoder, args.vectors)
    config = MemoryConfig(
        supersede=True, merge_paraphrases=args.merge, conflict_model=None if args.rules else "shipped"
    )
    show = not args.no_errors
    sets = set(args.sets.split(","))
    if "train" in sets:
        evaluate("train", args.train, encoder, config, show_errors=show)
    if "dev" in sets:
        evaluate("dev (tuning)", args.dev, encoder, config, show_errors=show)
    if "test" in sets:
        evaluate("test (held out, figures only)", args.test, encoder, config, show_errors=False)
    if "shared" in sets:
        evaluate("shared (held out)", args.data, encoder, config, show_errors=show)


if __name__ == "__main__":
    main()

"""Precision and recall of supersede detection on scenario files (gold.supersedes labels).

Each scenario's events are replayed in order; every event is compared (retain.conflict.decide)
with its 10 nearest current earlier events by cosine plus the 10 with the highest subject overlap;
a predicted update (new -> old) is correct when gold.supersedes of the new event lists the old one.

    python benchmarks/supersede_detection.py [--data ../shared/scenarios] [--encoder minilm]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from retain.cli import make_encoder
from retain.conflict import Relation, _overlap, decide, subject_terms
from retain.record import MemoryRecord, new_id

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "scenarios")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--show", action="store_true", help="print every miss and false alarm")
    args = parser.parse_args()
    enc = make_encoder(args.encoder)
    tp = fp = fn = 0
    for path in sorted(args.data.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        events = doc["events"]
        vecs = enc.encode([e["text"] for e in events])
        records: list[MemoryRecord] = []
        current: list[int] = []
        predicted: set[tuple[str, str]] = set()
        gold = {(e["id"], s) for e in events for s in (e.get("gold") or {}).get("supersedes", [])}
        for i, e in enumerate(events):
            rec = MemoryRecord(
                id=new_id(), namespace="s", content=e["text"], role=e.get("role", "user"), embedding=vecs[i]
            )
            records.append(rec)
            if current:
                cos = vecs[current] @ vecs[i]
                terms = subject_terms(e["text"])
                ov = np.array([_overlap(terms, subject_terms(events[j]["text"])) for j in current])
                pick = set(np.argsort(-cos)[:10].tolist()) | set(np.argsort(-ov)[:10].tolist())
                cands = [(records[current[k]], float(cos[k])) for k in pick]
                d = decide(rec, cands)
                if d.relation is Relation.UPDATE and d.target is not None:
                    j = next(j for j in current if records[j].id == d.target.id)
                    predicted.add((e["id"], events[j]["id"]))
                    current.remove(j)
                    if args.show and (e["id"], events[j]["id"]) not in gold:
                        print(f"FALSE {path.stem} {e['id']}->{events[j]['id']}: {d.reason}")
                        print(f"   new: {e['text'][:100]}\n   old: {events[j]['text'][:100]}")
            current.append(i)
        if args.show:
            for new, old in sorted(gold - predicted):
                print(f"MISS  {path.stem} {new}->{old}")
        tp += len(predicted & gold)
        fp += len(predicted - gold)
        fn += len(gold - predicted)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print(f"supersede detection: precision {precision:.3f} ({tp}/{tp + fp}), recall {recall:.3f} ({tp}/{tp + fn})")


if __name__ == "__main__":
    main()

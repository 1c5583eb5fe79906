"""Recall and false alarms of the sensitive-data detector (:mod:`retain.text.privacy`) on scenario files.

Reads every ``*.json`` scenario (format ``retain-scenario/1``) under ``--data`` and runs
:func:`retain.text.privacy.detect` on each event's ``text`` (``gold`` is only used for scoring). Prints:

- recall: share of events with ``gold.type == "sensitive"`` in which anything is detected, and the
  misses;
- false-positive rate: share of all other events in which anything is detected, and each one with
  what fired (kind, detector, the span). An event labelled with another type can still hold real
  personal data (a tool call that passes the user's phone number on): those are listed too, for a
  reader to judge, and counted as false positives all the same;
- what fired on the sensitive events, per kind and detector, and how many of them the library
  detectors find without this package's own rules (``cue:``, ``pattern:``, ``prefix:``); the
  scenarios' card numbers, IBAN and resident id fail their checksums, so the cue rules carry them;
- time per event (microseconds, after a warm-up that loads the detector libraries).

Usage::

    .venv/bin/python benchmarks/privacy_recall.py [--data DIR]
    .venv/bin/python benchmarks/privacy_recall.py --corpus tests/fixtures/secrets_corpus.json [--ordinary FILE]

``--data`` defaults to ``../shared/scenarios`` relative to the repository root.

With ``--corpus`` it scores the secrets corpus instead (:func:`corpus_main`): per split ("design",
the half the detectors were tuned on, in-sample; "held-out", written at the same time,
out-of-sample until its misses were read and fixed; "held-out-2", written before those fixes,
out-of-sample until its 2 misses were fixed; "held-out-3", written after that fix and committed
before any detector ran on it), the share of secrets absent from :func:`retain.text.privacy.redact`'s
output (detection recall), the misses, the benign look-alikes of the corpus (``kind`` "benign", an
ordinary sentence that must come back unchanged) that redaction changed, and the share of ordinary
sentences of LoCoMo changed by redaction
(false-positive rate): every LoCoMo dev turn of ``--ordinary`` (default
``../shared/data/locomo/locomo_dev.json``), each with what fired.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from retain.text.findings import Finding
from retain.text.privacy import detect

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "scenarios"
RECALL_TARGET = 0.95
SPAN_CHARS = 40
LIBRARY_DETECTORS = ("stdnum", "phonenumbers", "detect_secrets", "ipaddress")


@dataclass(frozen=True)
class Event:
    scenario: str
    id: str
    role: str
    gold: str
    text: str


def load_events(data: Path) -> list[Event]:
    """All events of every scenario file under ``data``, in file then event order."""
    events: list[Event] = []
    for path in sorted(data.glob("*.json")):
        scenario = json.loads(path.read_text(encoding="utf-8"))
        for event in scenario.get("events", []):
            events.append(
                Event(scenario["id"], event["id"], event.get("role", ""), event["gold"]["type"], event["text"])
            )
    return events


def _describe(text: str, findings: list[Finding]) -> str:
    parts = []
    for f in findings:
        span = text[f.start : f.end]
        span = span if len(span) <= SPAN_CHARS else span[: SPAN_CHARS - 3] + "..."
        parts.append(f"{f.kind} via {f.detector}: {span!r}")
    return "; ".join(parts)


def _clip(text: str, limit: int = 100) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


def corpus_main(corpus: Path, ordinary: Path) -> int:
    """Recall on the secrets corpus per split, and false alarms on ordinary sentences (LoCoMo turns)."""
    from retain.eval.datasets import load_locomo
    from retain.text.privacy import redact

    everything = json.loads(corpus.read_text(encoding="utf-8"))["items"]
    items = [i for i in everything if i["kind"] != "benign"]
    benign = [i for i in everything if i["kind"] == "benign"]
    print(f"corpus: {corpus} ({len(items)} secrets, {len({i['lang'] for i in items})} languages; {len(benign)} benign)")
    overall = []
    splits = (
        ("design", "in-sample: the detectors were tuned on it"),
        ("held-out", "in-sample since its misses were read and fixed; out-of-sample before: 46/55 = 0.836"),
        ("held-out-2", "in-sample since its 2 misses were read and fixed; out-of-sample before: 23/25 = 0.920"),
        ("held-out-3", "in-sample since its 21 misses were read and fixed; out-of-sample before: 52/73 = 0.712"),
    )
    for split, label in splits:
        mine = [i for i in items if i["split"] == split]
        missed = [i for i in mine if i["secret"] in redact(i["text"])[0]]
        overall += [i not in missed for i in mine]
        recall = 1 - len(missed) / len(mine)
        print(f"recall [{split}, {label}]: {recall:.3f} ({len(mine) - len(missed)}/{len(mine)})")
        for i in missed:
            print(f"    missed {i['id']} {i['lang']} {i['kind']}: {i['text']!r}")
    print(f"recall [all]: {sum(overall) / len(overall):.3f} ({sum(overall)}/{len(overall)}; target >= 0.98)")
    for split in sorted({i["split"] for i in benign}):
        mine = [i for i in benign if i["split"] == split]
        flagged = [i for i in mine if redact(i["text"])[0] != i["text"]]
        print(f"benign look-alikes changed by redaction [{split}]: {len(flagged)}/{len(mine)}")
        for i in flagged:
            print(f"    {i['id']} {i['lang']}: {_describe(i['text'], detect(i['text']))}  in {i['text']!r}")
    turns = [t.text for c in load_locomo(ordinary) for t in c.turns]
    started = time.perf_counter()
    changed = [(t, detect(t)) for t in turns if redact(t)[0] != t]
    elapsed = time.perf_counter() - started
    rate = len(changed) / len(turns)
    print(
        f"false-positive rate on ordinary sentences: {rate:.4f} ({len(changed)}/{len(turns)} LoCoMo dev turns "
        f"changed by redaction; {elapsed / len(turns) * 1e6:.0f} us per turn)"
    )
    for text, findings in changed:
        print(f"    {_describe(text, findings)}  in {_clip(text)!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of scenario *.json files")
    parser.add_argument("--corpus", type=Path, help="a secrets corpus JSON (tests/fixtures/secrets_corpus.json)")
    parser.add_argument(
        "--ordinary", type=Path, default=REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
    )
    args = parser.parse_args(argv)
    if args.corpus is not None:
        return corpus_main(args.corpus, args.ordinary)
    if not args.data.is_dir():
        print(f"--data: no such folder: {args.data}", file=sys.stderr)
        return 2
    events = load_events(args.data)
    if not events:
        print(f"--data: no scenario events under {args.data}", file=sys.stderr)
        return 2

    detect("warm-up: sk-test-ABC123 +44 20 7946 0958 4111 1111 1111 1111 password=Tulip#2024")
    started = time.perf_counter()
    results = [(event, detect(event.text)) for event in events]
    elapsed = time.perf_counter() - started

    sensitive = [(e, f) for e, f in results if e.gold == "sensitive"]
    others = [(e, f) for e, f in results if e.gold != "sensitive"]
    hits = [(e, f) for e, f in sensitive if f]
    misses = [e for e, f in sensitive if not f]
    false_positives = [(e, f) for e, f in others if f]
    recall = len(hits) / len(sensitive) if sensitive else float("nan")
    fp_rate = len(false_positives) / len(others) if others else float("nan")

    print(f"data: {args.data}  ({len(events)} events in {len({e.scenario for e in events})} scenarios)")
    print(f"recall on sensitive events: {recall:.3f}  ({len(hits)}/{len(sensitive)}; target >= {RECALL_TARGET})")
    library_only = [e for e, f in sensitive if any(x.detector.startswith(LIBRARY_DETECTORS) for x in f)]
    print(
        f"  of which found by a library detector (stdnum, phonenumbers, detect-secrets, ipaddress), "
        f"without the cue:, pattern: and prefix: rules: {len(library_only)}/{len(sensitive)}"
    )
    print(f"false-positive rate on other events: {fp_rate:.4f}  ({len(false_positives)}/{len(others)})")
    print(f"time: {elapsed / len(events) * 1e6:.0f} us per event (mean, {sum(len(e.text) for e in events)} chars)")

    print(f"\nmisses ({len(misses)}):")
    for event in misses:
        print(f"  {event.scenario} {event.id} [{event.role}] {_clip(event.text)!r}")

    print(f"\nfalse positives ({len(false_positives)}):")
    for event, findings in false_positives:
        print(f"  {event.scenario} {event.id} [{event.role}, gold {event.gold}] {_describe(event.text, findings)}")
        print(f"      {_clip(event.text)!r}")

    print("\nwhat fired on the sensitive events:")
    for event, findings in sensitive:
        print(f"  {event.scenario} {event.id}: {_describe(event.text, findings) or '-'}")
    per_detector = Counter(f"{f.kind} via {f.detector}" for _, findings in sensitive for f in findings)
    for name, count in per_detector.most_common():
        print(f"  {count:3d}  {name}")
    return 0 if recall >= RECALL_TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Leak check of the outward paths: replay every scenario, export, hand off and search, scan for secrets.

Each ``*.json`` scenario (format ``retain-scenario/1``) under ``--data`` is replayed into a fresh
:class:`retain.Memory` (``HashingEncoder``, rule classifier: ``gold`` is never shown to it), one
namespace per scenario. Then, per namespace, the default (redacted) ``export``, the Markdown and
JSON ``handoff`` (every observation shown: ``recent=None``) and, for every event with a finding,
a search with that event's text as the query (top 10, JSON of the hits) are scanned for:

- every raw span :func:`retain.text.privacy.detect` finds in the source events (any event, any type);
- the raw identifiers of the events whose gold type is ``sensitive``, found independently of the
  detector: e-mail-like tokens, runs of >= 6 digits (spaces and hyphens inside allowed), and tokens
  of >= 6 characters mixing letters and digits (``npm_...``, ``Bossa!Lune77``, ``cvale7``).

Prints detection recall on gold ``sensitive`` events (anything detected) and the share the rule
classifier types ``sensitive``, false positives on the other events, and the count of raw secrets
leaked per path (the target is 0; exit status 1 otherwise), and the mean cost of redacting search
hits (every event's text as a query, redaction cache cleared per scenario, against
``allow_raw=True``). ``--raw`` also exports with ``allow_raw=True`` to show that the scan finds
them when they are there.

Usage::

    .venv/bin/python benchmarks/redaction.py [--data DIR] [--raw]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from retain import HashingEncoder, Memory
from retain.safety.redaction import redact_text
from retain.text.phones import window_phones
from retain.text.privacy import detect

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "scenarios"
RECALL_TARGET = 0.95
SEARCH_K = 10

_EMAIL_LIKE = re.compile(r"[^\s'\"<>(),;]+@[^\s'\"<>(),;]+\.[A-Za-z]{2,}")
_DIGIT_RUN = re.compile(r"\+?\d(?:[ -]?\d){5,}")
_MIXED = re.compile(r"[A-Za-z0-9!#$%&*+./=?@^_~-]{6,}")  # ASCII tokens


def gold_identifiers(text: str) -> set[str]:
    """Identifiers in a gold-sensitive event, found without :mod:`retain.text.privacy`."""
    found = {m.group().rstrip(".") for m in _EMAIL_LIKE.finditer(text)}
    found |= {m.group() for m in _DIGIT_RUN.finditer(text)}
    for m in _MIXED.finditer(text):
        token = m.group().rstrip(".!?")
        has_letter = any(ch.isascii() and ch.isalpha() for ch in token)
        if has_letter and any(ch.isdigit() for ch in token) and not token.isdigit() and "/" not in token:
            found.add(token)
    return found


def occurs(secret: str, output: str) -> bool:
    """``secret`` in ``output``, not as part of a longer word or number ("771" inside a hash is not a leak)."""
    return re.search(rf"(?<![0-9A-Za-z]){re.escape(secret)}(?![0-9A-Za-z])", output) is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of scenario *.json files")
    parser.add_argument("--raw", action="store_true", help="also scan a raw export (the scan's own check)")
    args = parser.parse_args(argv)
    paths = sorted(args.data.glob("*.json")) if args.data.is_dir() else []
    if not paths:
        print(f"--data: no scenario files under {args.data}", file=sys.stderr)
        return 2

    mem = Memory(encoder=HashingEncoder(256))
    sensitive_total = sensitive_detected = sensitive_typed = others = false_positives = 0
    leaks: dict[str, list[str]] = {"export": [], "handoff-markdown": [], "handoff-json": [], "search": []}
    raw_found = 0
    search_seconds = {"redacted": 0.0, "raw": 0.0}
    searches = 0
    secrets_checked = 0
    started = time.perf_counter()
    for path in paths:
        scenario = json.loads(path.read_text(encoding="utf-8"))
        ns = scenario["id"]
        secrets: set[str] = set()
        queries: list[str] = []
        ids: list[str] = []
        for seq, event in enumerate(scenario["events"]):
            text = event["text"]
            findings = detect(text)
            secrets |= {text[f.start : f.end] for f in findings}
            if findings:
                queries.append(text)
            ids.append(
                mem.add(
                    text,
                    namespace=ns,
                    role=event.get("role", "user"),
                    event_time=event.get("t"),
                    seq=seq,
                    source=f"{ns}:{event['id']}",
                )
            )
            if event["gold"]["type"] == "sensitive":
                sensitive_total += 1
                sensitive_detected += bool(findings)
                sensitive_typed += mem.get(ids[-1], namespace=ns).type.value == "sensitive"
                secrets |= gold_identifiers(text)
            else:
                others += 1
                false_positives += bool(findings)
        secrets_checked += len(secrets)
        outputs = {
            "export": mem.export(namespace=ns),
            "handoff-markdown": mem.handoff(ns, recent=None).text,
            "handoff-json": mem.handoff(ns, fmt="json", recent=None).text,
            "search": "\n".join(
                json.dumps(
                    [h.to_dict() for h in mem.search(q, namespace=ns, k=SEARCH_K, config="rrf")], ensure_ascii=False
                )
                for q in queries
            ),
        }
        for name, output in outputs.items():
            leaks[name] += [f"{ns}: {s!r}" for s in sorted(secrets) if occurs(s, output)]
        redact_text.cache_clear()  # cold: every hit is scanned afresh
        window_phones.cache_clear()  # phone windows too
        for allow_raw, key in ((False, "redacted"), (True, "raw")):
            t0 = time.perf_counter()
            for event in scenario["events"]:
                mem.search(event["text"][:200], namespace=ns, k=SEARCH_K, config="rrf", allow_raw=allow_raw)
            search_seconds[key] += time.perf_counter() - t0
        searches += len(scenario["events"])
        if args.raw:
            raw_export = mem.export(namespace=ns, allow_raw=True)
            raw_found += sum(occurs(s, raw_export) for s in secrets)
    elapsed = time.perf_counter() - started

    recall = sensitive_detected / sensitive_total if sensitive_total else float("nan")
    print(f"data: {args.data}  ({len(paths)} scenarios, {sensitive_total + others} events)")
    print(f"detection recall on gold sensitive events: {recall:.3f}  ({sensitive_detected}/{sensitive_total}; "
          f"target >= {RECALL_TARGET})")  # fmt: skip
    print(f"typed sensitive by the rule classifier: {sensitive_typed}/{sensitive_total}")
    print(f"false positives (other events with a finding): {false_positives}/{others}")
    print(f"raw secrets checked: {secrets_checked} distinct strings (detected spans + gold identifiers)")
    for name, found in leaks.items():
        print(f"leaked in {name}: {len(found)}")
        for line in found:
            print(f"    {line}")
    if args.raw:
        print(f"found by the same scan in the raw export (allow_raw=True): {raw_found}/{secrets_checked}")
    print(
        f"search (k={SEARCH_K}, rrf, every event's first 200 characters as the query, {searches} queries): "
        f"mean {search_seconds['redacted'] / searches * 1e3:.2f} ms redacted (redaction cache cleared per scenario) vs "
        f"{search_seconds['raw'] / searches * 1e3:.2f} ms allow_raw"
    )
    print(f"time: {elapsed:.1f} s (replay, export, handoff and search of every scenario)")
    leaked = sum(len(v) for v in leaks.values())
    return 0 if leaked == 0 and recall >= RECALL_TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Accuracy of the rule-based type classifier (:mod:`retain.text.classify`) on scenario files.

Reads every ``*.json`` scenario (format ``retain-scenario/1``) under ``--data``, classifies each
event from its ``role`` and ``text`` only (``gold`` is the answer key and is never shown to the
classifier), and prints:

- per-type precision, recall, F1 and support, overall ``type_accuracy`` (share of events whose
  predicted type equals ``gold.type``) and macro F1;
- a confusion summary: the full gold x predicted matrix and the most frequent confusions;
- accuracy per role and per scenario;
- a rule-level leave-one-scenario-out estimate: the rules were written after reading all scenarios,
  so for each scenario every rule that fires *only* in that scenario is switched off (it may have
  been written for it; the private rule tables of :mod:`retain.text.classify` are patched for the
  duration) and the scenario is classified again. Rules that fire in at least two scenarios are
  kept. Conservative for rare general rules (an IBAN detector is dropped too), optimistic for the
  one Chinese scenario: Chinese cues share rules with their English counterparts and stay on;
- a leakage check: scenario ids found in the classifier's source, words from its rule patterns
  that occur in one scenario only and look like names there (capitalised mid-sentence), and CJK
  phrases of three or more characters from the rules that occur in one scenario only (listed for
  a reviewer to judge; idioms are expected).

Usage::

    .venv/bin/python benchmarks/classify_accuracy.py [--data DIR] [--errors]

``--data`` defaults to ``../shared/scenarios`` relative to the repository root. Scenario data is
read in place and never copied.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from retain.record import MemoryType
from retain.text.classify import classify_with_reason

# The module itself: ``import retain.text.classify as m`` binds the function that ``retain`` re-exports
# under the same name, so patching its rule tables and reading its source would silently do nothing.
classify_module = importlib.import_module("retain.text.classify")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "scenarios"
TYPES = [t.value for t in MemoryType]
ABBREV = {
    "hard_constraint": "hard",
    "soft_preference": "soft",
    "fact": "fact",
    "goal": "goal",
    "plan_step": "plan",
    "observation": "obs",
    "reasoning": "reas",
    "action_result": "res",
    "sensitive": "sens",
    "chatter": "chat",
}


@dataclass(frozen=True)
class Row:
    scenario: str
    event_id: str
    role: str
    text: str
    gold: str
    pred: str
    reason: str


def load_rows(data: Path) -> tuple[list[Row], dict[str, str]]:
    """Classify every event of every scenario under ``data``; also return each scenario's full text."""
    files = sorted(data.glob("*.json"))
    if not files:
        raise SystemExit(f"--data: no *.json scenario files in {data}")
    rows: list[Row] = []
    texts: dict[str, str] = {}
    for path in files:
        scenario = json.loads(path.read_text(encoding="utf-8"))
        sid = scenario.get("id", path.stem)
        texts[sid] = "\n".join(e["text"] for e in scenario["events"])
        for event in scenario["events"]:
            pred, reason = classify_with_reason(event["text"], event.get("role"))
            rows.append(
                Row(sid, event["id"], event.get("role", ""), event["text"], event["gold"]["type"], pred.value, reason)
            )
    return rows, texts


def per_type_table(rows: list[Row]) -> str:
    lines = [f"{'type':<16} {'support':>7} {'pred':>5} {'precision':>9} {'recall':>7} {'f1':>6}"]
    f1s = []
    for t in TYPES:
        tp = sum(r.gold == t and r.pred == t for r in rows)
        support = sum(r.gold == t for r in rows)
        predicted = sum(r.pred == t for r in rows)
        precision = tp / predicted if predicted else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if support:
            f1s.append(f1)
        lines.append(f"{t:<16} {support:>7} {predicted:>5} {precision:>9.3f} {recall:>7.3f} {f1:>6.3f}")
    accuracy = sum(r.gold == r.pred for r in rows) / len(rows)
    lines.append(f"\ntype_accuracy = {accuracy:.3f}  ({sum(r.gold == r.pred for r in rows)}/{len(rows)} events)")
    lines.append(f"macro F1 (types with support) = {sum(f1s) / len(f1s):.3f}")
    return "\n".join(lines)


def confusion(rows: list[Row], top: int = 12) -> str:
    counts = Counter((r.gold, r.pred) for r in rows)
    header = "gold \\ pred".ljust(12) + "".join(f"{ABBREV[t]:>6}" for t in TYPES)
    lines = [header]
    for g in TYPES:
        cells = "".join(f"{counts[(g, p)] or '.':>6}" for p in TYPES)
        lines.append(f"{ABBREV[g]:<12}{cells}")
    lines.append("\nmost frequent confusions (gold -> predicted):")
    errors = Counter({k: v for k, v in counts.items() if k[0] != k[1]})
    for (g, p), n in errors.most_common(top):
        lines.append(f"  {n:>3}  {g} -> {p}")
    return "\n".join(lines)


def grouped_accuracy(rows: list[Row], key: str) -> str:
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(getattr(r, key), []).append(r)
    lines = []
    accs = []
    for name, members in sorted(groups.items()):
        acc = sum(r.gold == r.pred for r in members) / len(members)
        accs.append(acc)
        lines.append(f"  {name:<40} {acc:.3f}  (n={len(members)})")
    lines.append(f"  {'min / mean / max':<40} {min(accs):.3f} / {sum(accs) / len(accs):.3f} / {max(accs):.3f}")
    return "\n".join(lines)


@contextmanager
def rules_disabled(names: set[str]) -> Iterator[None]:
    """Temporarily drop the named cue rules from every rule table of :mod:`retain.text.classify`."""
    with ExitStack() as stack:
        for attr, value in vars(classify_module).items():
            if (
                isinstance(value, tuple)
                and value
                and all(isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], re.Pattern) for r in value)
            ):
                kept = tuple(r for r in value if r[0] not in names)
                stack.enter_context(mock.patch.object(classify_module, attr, kept))
        yield


def leave_one_scenario_out(rows: list[Row]) -> str:
    scenarios_of: dict[str, set[str]] = {}
    for r in rows:
        scenarios_of.setdefault(r.reason, set()).add(r.scenario)
    lines = []
    correct = total = 0
    for sid in sorted({r.scenario for r in rows}):
        own = {name for name, where in scenarios_of.items() if where == {sid}}
        members = [r for r in rows if r.scenario == sid]
        with rules_disabled(own):
            hits = sum(classify_with_reason(r.text, r.role)[0].value == r.gold for r in members)
        correct += hits
        total += len(members)
        full = sum(r.gold == r.pred for r in members) / len(members)
        dropped = ", ".join(sorted(own)) or "-"
        lines.append(f"  {sid:<40} {hits / len(members):.3f}  (all rules {full:.3f}; dropped: {dropped})")
    lines.append(f"  {'pooled':<40} {correct / total:.3f}")
    return "\n".join(lines)


def rule_literals() -> list[str]:
    """Every string literal in the classifier's source (the rule patterns live there)."""
    source = Path(classify_module.__file__).read_text(encoding="utf-8")
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def leakage_report(texts: dict[str, str]) -> str:
    literals = "\n".join(rule_literals())
    rule_words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", literals)}
    rule_cjk = set(re.findall(r"[\u4e00-\u9fff]{3,}", literals))
    names = []
    for word in sorted(rule_words):
        hits = [sid for sid, text in texts.items() if re.search(rf"\b{word}\b", text, re.IGNORECASE)]
        if len(hits) == 1 and re.search(rf"(?<=[a-z,;] ){word.capitalize()}\b", texts[hits[0]]):
            names.append(f"{word} ({hits[0]})")
    phrases = [
        f"{p} ({hits[0]})"
        for p in sorted(rule_cjk)
        if len(hits := [sid for sid, text in texts.items() if p in text]) == 1
    ]
    ids = [sid for sid in texts if sid in literals]
    return "\n".join(
        [
            f"  scenario ids referenced by the rules: {ids or 'none'}",
            f"  name-like words (capitalised mid-sentence) from one scenario only: {', '.join(names) or 'none'}",
            f"  CJK phrases (3+ chars) from one scenario only, for review: {', '.join(phrases) or 'none'}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of scenario *.json files")
    parser.add_argument("--errors", action="store_true", help="also list every misclassified event")
    args = parser.parse_args(argv)
    rows, texts = load_rows(args.data)
    print(f"retain.text.classify on {len(texts)} scenarios, {len(rows)} events ({args.data})\n")
    print(per_type_table(rows))
    print("\nconfusion matrix (rows = gold, columns = predicted)")
    print(confusion(rows))
    print("\naccuracy by role")
    print(grouped_accuracy(rows, "role"))
    print("\naccuracy by scenario")
    print(grouped_accuracy(rows, "scenario"))
    print("\nleave-one-scenario-out (rules firing only in the held-out scenario switched off)")
    print(leave_one_scenario_out(rows))
    print("\nleakage check")
    print(leakage_report(texts))
    if args.errors:
        print("\nmisclassified events")
        for r in rows:
            if r.gold != r.pred:
                text = r.text.replace("\n", " | ")[:110]
                print(
                    f"  {r.scenario[:14]:<14} {r.event_id:<4} {r.role:<13} {r.gold:<15} -> {r.pred:<15} "
                    f"[{r.reason}] {text}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

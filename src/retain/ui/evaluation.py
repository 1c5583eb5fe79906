"""The budget-performance curve of the last evaluation, for the budget page.

Where the evaluation is found: the JSON report that ``retain eval <dataset> --json PATH`` writes, at
the path given to ``retain ui --eval-json PATH`` / ``retain serve --eval-json PATH`` (or
``create_app(eval_json=...)``), else ``<store file>.eval.json`` beside the store (:func:`default_path`).
It is read on each request to the budget page, so the newest report written there is the one shown.

Its budgeted runs (``runs`` entries with a ``budget`` below 1.0, or without a ``retriever``: the
EMBER runs of ``retain eval --budget``) give one line per eviction policy: recall@10 and hit rate
(0..1, higher = better) against the budget (the share of the conversation's turns kept hot).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retain.ui import charts

__all__ = ["EVAL_SUFFIX", "curves", "default_path"]

EVAL_SUFFIX = ".eval.json"
"""The suffix of the default evaluation report beside a store file."""
_MAX_BYTES = 20 * 1024 * 1024
_METRICS = (("recall@10", "recall@10 (hot memory)"), ("hit_rate", "hit rate (evidence held)"))


def default_path(location: str) -> Path | None:
    """``<store file>.eval.json`` for a store file, None for an in-memory store."""
    if not location or location == ":memory:" or location.startswith("file::memory:"):
        return None
    return Path(location).with_name(Path(location).name + EVAL_SUFFIX)


def _budgeted(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    runs = report.get("runs")
    if not isinstance(runs, list):
        raise ValueError('no "runs" list')
    out = []
    for run in runs:
        if not isinstance(run, Mapping) or not isinstance(run.get("budget"), int | float):
            continue
        if run.get("budget", 1.0) != 1.0 or "retriever" not in run:
            out.append(run)
    return out


def _series(runs: Sequence[Mapping[str, Any]], metric: str) -> list[tuple[str, list[tuple[float, float]]]]:
    lines: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        value = run.get(metric)
        if isinstance(value, int | float) and not isinstance(value, bool):
            lines.setdefault(str(run.get("policy", "?")), []).append((float(run["budget"]), float(value)))
    return [(policy, sorted(points)) for policy, points in lines.items()]


def curves(path: Path | None) -> dict[str, Any]:
    """What the budget page shows of the evaluation at ``path``: ``path`` (text), ``status`` ("none":
    no report there; "unreadable": not a report, with ``problem``; "no budget": a report without
    budgeted runs; "ok"), ``dataset``, ``charts`` (SVG, one per metric) and ``rows`` (policy,
    budget, recall@10, hit rate). Never raises for a bad file: the page says what is wrong."""
    out: dict[str, Any] = {"path": "" if path is None else str(path), "charts": [], "rows": [], "dataset": ""}
    if path is None or not path.is_file():
        return out | {"status": "none"}
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise ValueError(f"over {_MAX_BYTES // (1024 * 1024)} MiB")
        report = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(report, Mapping):
            raise ValueError("not a JSON object")
        runs = _budgeted(report)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        return out | {"status": "unreadable", "problem": str(exc)[:300]}
    out["dataset"] = str(report.get("dataset", ""))
    if not runs:
        return out | {"status": "no budget"}
    for metric, label in _METRICS:
        out["charts"].append(charts.xy(_series(runs, metric), f"{label} against the budget", ("budget", metric)))
    out["rows"] = [
        {"policy": r.get("policy", "?"), "budget": r["budget"], "recall": r.get("recall@10"), "hit": r.get("hit_rate")}
        for r in sorted(runs, key=lambda r: (str(r.get("policy")), float(r["budget"])))
    ]
    return out | {"status": "ok"}

"""Reports of evaluation runs: a Markdown file with tables and matplotlib charts (PNG)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["METRICS", "markdown_table", "write_json", "write_locomo_report"]

METRICS = ("recall@5", "recall@10", "hit@5", "hit@10", "mrr")


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(report: dict[str, Any], path: str | Path) -> Path:
    """Write ``report`` as UTF-8 JSON (literal characters) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    return target


def _bar_chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in report["runs"] if r.get("budget", 1.0) == 1.0]
    categories = sorted({c for r in runs for c in r["by_category"]}, key=int)
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(8, 4))
    for j, run in enumerate(runs):
        values = [run["by_category"].get(c, {}).get("recall@10") or 0.0 for c in categories]
        xs = [i + j * width for i in range(len(categories))]
        ax.bar(xs, values, width=width, label=run.get("retriever", run["policy"]))
    labels = [f"{c} {runs[0]['by_category'].get(c, {}).get('name', '')}" for c in categories] if runs else []
    ax.set_xticks([i + width * (len(runs) - 1) / 2 for i in range(len(categories))], labels)
    ax.set_ylabel("turn-level recall@10")
    ax.set_ylim(0, 1)
    ax.set_title(f"{report['dataset']}: recall@10 by category")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_locomo_report(report: dict[str, Any], directory: str | Path) -> Path:
    """Write ``report.md`` and ``recall_by_category.png`` into ``directory``; returns the .md path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    chart = out / "recall_by_category.png"
    _bar_chart(report, chart)
    rows = [
        [r.get("retriever", ""), r["policy"], r["budget"], *(r.get(m) for m in METRICS), r.get("questions")]
        for r in report["runs"]
    ]
    parts = [
        f"# {report['dataset']} evaluation",
        "",
        f"{report['conversations']} conversations, {report['questions']} questions, "
        f"{report.get('turns', '?')} turns. Headline = categories 1-4; turn-level evidence retrieval.",
        "",
        markdown_table(["retriever", "policy", "budget", *METRICS, "questions"], rows),
        "",
    ]
    for run in report["runs"]:
        parts.append(f"## {run.get('retriever', run['policy'])} (budget {run['budget']}) by category")
        parts.append("")
        cat_rows = [[c, v["name"], v["questions"], *(v.get(m) for m in METRICS)] for c, v in run["by_category"].items()]
        parts.append(markdown_table(["category", "name", "questions", *METRICS], cat_rows))
        parts.append("")
    timing = report["runs"][0]
    parts.append(
        f"Ingest {timing.get('ingest_turns_per_s')} turns/s (embedding included); search p50 "
        f"{timing.get('search_ms_p50')} ms, p95 {timing.get('search_ms_p95')} ms (query embedding included)."
    )
    parts += ["", f"![recall@10 by category]({chart.name})", ""]
    path = out / "report.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path

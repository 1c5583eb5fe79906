"""Reports of evaluation runs: a Markdown file with tables and matplotlib charts (PNG)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BUDGET_COLUMNS",
    "METRICS",
    "budget_curve",
    "budget_section",
    "finish_report",
    "markdown_table",
    "write_json",
    "write_locomo_report",
]

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

    runs = [r for r in report["runs"] if r.get("budget", 1.0) == 1.0 and "retriever" in r]
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


BUDGET_COLUMNS = (
    "hit_rate",
    "recall@10",
    "hit@5",
    "mrr",
    "utility_density",
    "evictions",
    "decision_ms_p50",
    "decision_ms_p95",
)


def budget_curve(runs: Sequence[dict[str, Any]], path: Path, title: str) -> None:
    """Budget-performance curves: hit rate and recall@10 against budget, one line per policy (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for policy in dict.fromkeys(r["policy"] for r in runs):
        mine = sorted((r for r in runs if r["policy"] == policy), key=lambda r: r["budget"])
        xs = [r["budget"] for r in mine]
        axes[0].plot(xs, [r["hit_rate"] or 0.0 for r in mine], marker="o", label=policy)
        axes[1].plot(xs, [r["recall@10"] or 0.0 for r in mine], marker="o", label=policy)
    for ax, name in zip(axes, ("hit rate (evidence held)", "recall@10 (hot memory)"), strict=True):
        ax.set_xlabel("budget (share of turns)")
        ax.set_ylabel(name)
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def budget_section(runs: Sequence[dict[str, Any]], chart: Path) -> list[str]:
    """Markdown lines: the budget table and the curve."""
    rows = [[r["policy"], r["budget"], *(r.get(c) for c in BUDGET_COLUMNS)] for r in runs]
    return [
        "## Budgeted memory (EMBER)",
        "",
        "Capacity = budget x the conversation's turns (records); questions asked against the hot memory. "
        "Learned utility evaluated leave-one-conversation-out.",
        "",
        markdown_table(["policy", "budget", *BUDGET_COLUMNS], rows),
        "",
        f"![budget-performance curves]({chart.name})",
        "",
    ]


def write_locomo_report(report: dict[str, Any], directory: str | Path) -> Path:
    """Write ``report.md`` and ``recall_by_category.png`` (and ``budget_curves.png`` when there are
    budgeted runs) into ``directory``; returns the .md path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    chart = out / "recall_by_category.png"
    _bar_chart(report, chart)
    full_runs = [r for r in report["runs"] if r.get("budget", 1.0) == 1.0 and "retriever" in r]
    budget_runs = [r for r in report["runs"] if r not in full_runs]
    rows = [
        [r.get("retriever", ""), r["policy"], r["budget"], *(r.get(m) for m in METRICS), r.get("questions")]
        for r in full_runs
    ]
    parts = [
        f"# {report['dataset']} evaluation",
        "",
        f"{report['conversations']} conversation(s), {report['questions']} questions, "
        f"{report.get('turns', '?')} turns. Turn-level evidence retrieval, no LLM. The headline figures "
        "cover categories 1-4 (multi-hop, temporal, open-domain, single-hop) over questions whose evidence "
        "resolves to turns; category 5 (adversarial) is shown per category only.",
        "",
        "Retrievers: `learned` = the default search with the shipped fusion model (fitted on the LoCoMo dev "
        "conversations, so in-sample there); `learned-loco` = the fusion refitted for each conversation on the "
        "others only (out-of-sample); `rrf` = plain reciprocal rank fusion of BM25 and MiniLM. "
        "recall@k = |evidence in top k| / |evidence|; hit@k = any evidence in the top k; MRR = mean 1/rank of "
        "the first evidence turn. Policy `full` at budget 1.0 = unbounded memory.",
        "",
        markdown_table(["retriever", "policy", "budget", *METRICS, "questions"], rows),
        "",
    ]
    for run in full_runs:
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
    return finish_report(out, parts, budget_runs, str(report["dataset"]))


def finish_report(out: Path, parts: list[str], budget_runs: Sequence[dict[str, Any]], dataset: str) -> Path:
    """Append the budget section (table and ``budget_curves.png``) when there are budgeted runs, and
    write ``out/report.md``; returns its path."""
    if budget_runs:
        curves = out / "budget_curves.png"
        budget_curve(budget_runs, curves, f"{dataset}: budget-performance")
        parts += budget_section(budget_runs, curves)
    path = out / "report.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path

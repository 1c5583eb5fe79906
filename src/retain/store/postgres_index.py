"""The HNSW indexes of the Postgres backend: when they are built, and with how much memory.

One pgvector HNSW index per embedding dimension (``vector_cosine_ops`` over ``embedding::vector(d)``,
partial on ``vdim = d``), built once the first namespace holds ``threshold`` records (the store's
``ANN_MIN_RECORDS``). Once it exists every insert updates it, one vector at a time, so a bulk load
is faster without it: pgvector's own advice is to load the rows first and build the index after,
which builds the graph in memory (when ``maintenance_work_mem`` holds it) with parallel workers.
:func:`build` is that build; :func:`index_large` the automatic one inside a write. The figures are
in docs/benchmarks.md ("Postgres bulk load").
"""

from __future__ import annotations

from typing import Any

__all__ = ["build", "index_large", "large", "memory_mb"]

_GRAPH_BYTES = 720
"""Bytes of graph (neighbour lists, element and tuple headers) pgvector keeps per vector beside the
vector itself at the default ``m = 16`` (its build reports the graph no longer fitting past about
780 bytes a 16-dim row)."""
_MAX_MEMORY_MB = 8_192


def memory_mb(rows: int, dim: int) -> int:
    """``maintenance_work_mem`` (MB) that holds an HNSW graph of ``rows`` vectors of ``dim`` float32s,
    with a fifth to spare; at least 64 (the server's default), at most 8,192."""
    need = rows * (4 * dim + _GRAPH_BYTES) * 1.2 / 2**20
    return int(min(_MAX_MEMORY_MB, max(64, need)))


def large(cur: Any, threshold: int, namespaces: list[str] | None = None) -> bool:
    """True when some namespace (of ``namespaces``; None: any) holds at least ``threshold`` records."""
    if namespaces is None:
        row = cur.execute("SELECT max(records) FROM ns_stats").fetchone()
    else:
        row = cur.execute("SELECT max(records) FROM ns_stats WHERE namespace = ANY(%s)", (namespaces,)).fetchone()
    return row is not None and row[0] is not None and int(row[0]) >= threshold


def index_large(cur: Any, namespaces: list[str], threshold: int) -> None:
    """Build the HNSW index of every dimension not indexed yet once a namespace in ``namespaces`` (those
    just written) holds ``threshold`` records (small stores never pay for the index on
    each insert). Runs inside the writing transaction."""
    if namespaces and large(cur, threshold, namespaces):
        build(cur)


def build(cur: Any) -> list[int]:
    """Build the HNSW index of every dimension not indexed yet, each with the ``maintenance_work_mem``
    its rows need when the server's setting is smaller (``SET LOCAL``: this transaction only; a
    parallel build takes that much shared memory, so a container needs a ``/dev/shm`` as large) and
    no ``statement_timeout`` (a build of a million rows takes minutes); returns the dimensions
    indexed. The table stays readable meanwhile; writers wait for the build (``CREATE INDEX`` holds
    a ``SHARE`` lock)."""
    built = []
    cur.execute("SET LOCAL statement_timeout = 0")
    row = cur.execute("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'").fetchone()
    configured = 64 if row is None else int(row[0]) // 1024  # the setting is in kB
    for (dim,) in cur.execute("SELECT vdim FROM vec_dims WHERE NOT indexed ORDER BY vdim").fetchall():
        rows = int(cur.execute("SELECT count(*) FROM records WHERE vdim = %s", (dim,)).fetchone()[0])
        cur.execute(f"SET LOCAL maintenance_work_mem = '{max(configured, memory_mb(rows, int(dim)))}MB'")
        cur.execute(
            f"CREATE INDEX IF NOT EXISTS records_vec_{int(dim)} ON records "
            f"USING hnsw ((embedding::vector({int(dim)})) vector_cosine_ops) WHERE vdim = {int(dim)}"
        )
        cur.execute("UPDATE vec_dims SET indexed = true WHERE vdim = %s", (dim,))
        built.append(int(dim))
    return built

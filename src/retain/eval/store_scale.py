"""``retain bench scale``: store figures at growing namespace sizes, with an exact numpy scan of the
same vectors as the reference measured in the same run.

Per backend and size ``n``: ``n`` synthetic records of one namespace (384-d float32 unit vectors of a
low intrinsic dimension, as text embeddings are: 256 topics in a 32-d latent space mapped to 384
dimensions plus isotropic noise; texts of 3 common and 2 rare words) are written through
``Store.put`` in batches of 1,000 (no encoder runs: ingest records/s is the store's own cost). Then, in
a fresh process (so its resident memory is the store's, not the generator's): the time of the first
default hybrid search after opening, 100 default hybrid searches (``Memory.search``, preset
"default", k=10; the query embedding excluded: a lookup encoder hands back precomputed vectors) and
100 dense-only searches (``Store.search_vector``, k=10), p50 / p95 in milliseconds, and peak RSS.
Recall@10 of the dense answers against the exact top-10; bytes on disk per record. Last, with the
namespace at capacity (``Budget(n)``), 100 adds each evicting one record: the retention decision's
p50 / p95 apart from the whole add's (:func:`measure_decisions`; peak RSS is read before it).

A size below the SQLite store's HNSW threshold is answered by its exact scan; above it the graph is
built after ingest (its build time is reported apart, not in ingest records/s).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.record import MemoryRecord

__all__ = ["corpus_vectors", "run_scale"]

DIM = 384
LATENT = 32
TOPICS = 256
NAMESPACE = "big"
BATCH = 1_000
COMMON = ["budget", "venue", "flight", "hotel", "deadline", "owner", "report", "train", "museum", "dinner"]


def _rare(i: int) -> str:
    """A pseudo-word of a 20,000-word vocabulary (so a lexical query names a few hundred records at 1M)."""
    j = (i * 7919) % 20_000
    return "w" + "".join("bcdfghjklmnpqrstvz"[(j // 18**k) % 18] for k in range(4))


def corpus_vectors(n: int, seed: int = 7, start: int = 0, count: int | None = None) -> npt.NDArray[np.float32]:
    """Rows ``start`` to ``start + count`` of the ``n``-record corpus's vectors ((count, 384) float32,
    unit length), the same on every call (generated in blocks of 10,000 from ``seed``)."""
    count = n - start if count is None else count
    basis_rng = np.random.default_rng(seed)
    project = basis_rng.standard_normal((LATENT, DIM)).astype(np.float32)
    centres = basis_rng.standard_normal((TOPICS, LATENT)).astype(np.float32) * 1.5
    out = []
    first, last = start // 10_000, (start + count - 1) // 10_000
    for block in range(first, last + 1):
        rng = np.random.default_rng([seed, block])
        lat = centres[rng.integers(0, TOPICS, 10_000)] + rng.standard_normal((10_000, LATENT)).astype(np.float32)
        vecs = lat @ project + 2.0 * rng.standard_normal((10_000, DIM)).astype(np.float32)
        out.append(vecs)
    matrix = np.concatenate(out)[start - first * 10_000 :][:count]
    unit: npt.NDArray[np.float32] = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _text(i: int) -> str:
    return f"note {i} about the {COMMON[i % 10]} and the {COMMON[(i * 7) % 10]} with {_rare(i)} and {_rare(i * 13 + 5)}"


def queries(n: int, count: int = 100, seed: int = 11) -> tuple[list[str], npt.NDArray[np.float32]]:
    """(texts, vectors) of ``count`` queries: each near a random stored record (its vector plus noise;
    its text's rare words and one common word)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, count)
    vecs = np.concatenate([corpus_vectors(n, start=int(r), count=1) for r in rows])
    vecs = vecs + 0.02 * rng.standard_normal(vecs.shape).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    texts = [f"what about the {COMMON[int(r) % 10]} and {_rare(int(r))}" for r in rows]
    return texts, vecs.astype(np.float32)


def _batches(n: int) -> Iterator[list[MemoryRecord]]:
    block = np.zeros((0, DIM), dtype=np.float32)
    for start in range(0, n, BATCH):
        if start % 10_000 == 0:  # one generator block serves ten batches
            block = corpus_vectors(n, start=start, count=min(10_000, n - start))
        vecs = block[start % 10_000 : start % 10_000 + min(BATCH, n - start)]
        yield [
            MemoryRecord(
                id=f"r{start + j:09d}", namespace=NAMESPACE, content=_text(start + j), embedding=v, encoder="bench-384"
            )
            for j, v in enumerate(vecs)
        ]


def _open(backend: str, location: str, bulk: bool = False) -> Any:
    """The store at ``location`` (Postgres: ``URL#schema``, a schema of its own per run; ``bulk``: no
    write builds its HNSW index, :meth:`~retain.store.postgres.PostgresStore.build_index` does)."""
    from retain.store.postgres import PostgresStore
    from retain.store.sqlite import SQLiteStore

    if backend == "postgres":
        url, schema = location.rsplit("#", 1)
        return PostgresStore(url, schema=schema, index_on_write=not bulk)
    return SQLiteStore(Path(location))


def ingest(backend: str, location: str, n: int) -> dict[str, float]:
    """Write the corpus; returns ingest records/s (wall, and by this process's CPU time: the store's own
    cost on a shared host) and the seconds of the one HNSW build after it (SQLite: the graph of a
    namespace past the threshold, in the background; Postgres: pgvector's index, loaded first and
    indexed after, as pgvector advises for bulk loads)."""
    store = _open(backend, location, bulk=True)
    store.setup()
    store.set_meta("encoder_name", "bench-384")
    store.set_meta("encoder_dim", str(DIM))
    seconds = cpu = 0.0
    for batch in _batches(n):  # only the writes are timed, not the generator
        start, start_cpu = time.perf_counter(), time.process_time()
        store.put(batch)
        seconds, cpu = seconds + time.perf_counter() - start, cpu + time.process_time() - start_cpu
    out = {"ingest_rps": n / seconds, "ingest_cpu_rps": n / cpu}
    start, start_cpu = time.perf_counter(), time.process_time()
    if hasattr(store, "build_index"):  # one index build after the bulk ingest
        store.build_index(NAMESPACE)
        store.wait_for_index()
        out["index_build_s"] = time.perf_counter() - start
        if backend == "sqlite":  # every thread's; Postgres builds in the server's processes
            out["index_build_cpu_s"] = time.process_time() - start_cpu
    store.close()
    return out


def measure(backend: str, location: str, n: int, count: int, decisions: bool = True) -> dict[str, Any]:
    """Searches in this process on a store just opened (run by :func:`run_scale` in a child process);
    then, when ``decisions``, :func:`measure_decisions`."""
    from retain.memory import Memory

    texts, vecs = queries(n, count)
    lookup = {t: v for t, v in zip(texts, vecs, strict=True)}
    encoder = _LookupEncoder(lookup)
    start = time.perf_counter()
    store = _open(backend, location)
    mem = Memory(store=store, encoder=encoder)
    mem.search(texts[0], namespace=NAMESPACE, k=10)
    first = time.perf_counter() - start
    hybrid, dense, found = [], [], []
    for text, vec in zip(texts, vecs, strict=True):
        t = time.perf_counter()
        mem.search(text, namespace=NAMESPACE, k=10)
        hybrid.append(time.perf_counter() - t)
        t = time.perf_counter()
        hits = store.search_vector(NAMESPACE, vec, limit=10)
        dense.append(time.perf_counter() - t)
        found.append([int(h.id[1:]) for h in hits])
    mem.close()
    return {
        "first_search_s": first,
        "hybrid_ms": _percentiles(hybrid),
        "dense_ms": _percentiles(dense),
        "found": found,
        "peak_rss_mb": peak_rss_mb(),
        **(measure_decisions(backend, location, n, count) if decisions else {}),
    }


def measure_decisions(backend: str, location: str, n: int, count: int) -> dict[str, Any]:
    """``count`` adds into the ``n``-record namespace held at capacity by ``Budget(n)`` (the default
    "utility" policy), each evicting one record: the retention decision of each add
    (``Core.apply_budget``: the offer to the hot set, the victims, their eviction entries) timed apart
    from the whole add. The first decision, which builds the hot set from the store, is reported on its
    own (``first_decision_s``); ``decision_ms`` and ``add_ms`` are p50 / p95 of the others. The query
    embedding is excluded (precomputed vectors). ``hot_after``: the namespace's hot count at the end
    (= ``n`` when the budget held)."""
    from retain.memory import Memory
    from retain.retention.budget import Budget

    rng = np.random.default_rng(13)
    texts = [f"probe {i} on the {COMMON[i % 10]} with {_rare(n + i)} and {_rare(3 * n + i)}" for i in range(count + 1)]
    vecs = corpus_vectors(n, start=0, count=count + 1) + 0.5 * rng.standard_normal((count + 1, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    mem = Memory(
        store=_open(backend, location), encoder=_LookupEncoder(dict(zip(texts, vecs, strict=True))), budget=Budget(n)
    )
    core, decisions = mem.core, []
    decide = core.apply_budget

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return decide(*args, **kwargs)
        finally:
            decisions.append(time.perf_counter() - t)

    core.apply_budget = timed  # type: ignore[method-assign]
    adds = []
    for text in texts:
        t = time.perf_counter()
        mem.add(text, namespace=NAMESPACE)
        adds.append(time.perf_counter() - t)
    hot = mem.store.count(NAMESPACE)
    mem.close()
    return {
        "first_decision_s": decisions[0],
        "decision_ms": _percentiles(decisions[1:]),
        "add_ms": _percentiles(adds[1:]),
        "hot_after": hot,
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB: ``VmHWM`` of its own address space where Linux
    reports it (``ru_maxrss`` carries the parent's resident size over fork and exec, so a child of a
    large benchmark process would report the parent's), else ``ru_maxrss``."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _LookupEncoder:
    """Hands back the precomputed vector of each query text (the query embedding is excluded)."""

    name = "bench-384"
    dim = DIM

    def __init__(self, lookup: dict[str, npt.NDArray[np.float32]]) -> None:
        self._lookup = lookup

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._lookup.get(t, np.full(DIM, DIM**-0.5, dtype=np.float32)) for t in texts])

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]


def _percentiles(seconds: Sequence[float]) -> list[float]:
    ms = np.asarray(seconds) * 1000
    return [float(np.percentile(ms, 50)), float(np.percentile(ms, 95))]


def exact_reference(n: int, count: int) -> tuple[list[list[int]], list[float]]:
    """The exact top-10 of each query by a numpy scan of the same vectors, and its p50 / p95 ms."""
    from threadpoolctl import threadpool_limits

    matrix = corpus_vectors(n)
    _, vecs = queries(n, count)
    tops, times = [], []
    with threadpool_limits(1):  # a threaded BLAS product stalls on a busy host; one core is the fair reference
        for q in vecs:
            t = time.perf_counter()
            scores = matrix @ q
            top = np.argpartition(-scores, 10)[:10]
            times.append(time.perf_counter() - t)
            tops.append(top.tolist())
    return tops, _percentiles(times)


def _disk_bytes(backend: str, location: str) -> int | None:
    if backend == "postgres":  # every table of the run's schema, with its indexes and TOAST
        import psycopg

        url, schema = location.rsplit("#", 1)
        sql = (
            "SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class "
            "WHERE relkind = 'r' AND relnamespace = %s::regnamespace"
        )
        with psycopg.connect(url) as conn:
            found = conn.execute(sql, (schema,)).fetchone()
        return None if found is None else int(found[0])
    paths = [Path(location), Path(location + "-wal")]
    ann = Path(location + ".ann")
    paths += list(ann.glob("*")) if ann.exists() else []
    return sum(p.stat().st_size for p in paths if p.exists())


def run_one(
    backend: str, n: int, count: int, folder: Path, decisions: bool = True, keep: bool = False
) -> dict[str, Any]:
    """One backend at one size: ingest here, searches (and, when ``decisions``, the retention decisions
    at capacity) in a child process, the reference here. A Postgres run's schema is dropped after,
    unless ``keep`` (its ``URL#schema`` is then in the row's ``location``)."""
    if backend == "postgres":
        sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
        from postgres_server import postgres_url

        location = f"{postgres_url()}#bench_{uuid.uuid4().hex[:10]}"
    else:
        location = str(folder / f"scale-{n}.db")
    row: dict[str, Any] = {"backend": backend, "n": n, **ingest(backend, location, n)}
    code = (
        "import json, sys; from retain.eval.store_scale import measure; "
        f"print(json.dumps(measure({backend!r}, {location!r}, {n}, {count}, {decisions!r})))"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    measured = json.loads(child.stdout.strip().splitlines()[-1])
    found = measured.pop("found")
    tops, reference = exact_reference(n, count)
    row.update(measured)
    row["recall_at_10"] = float(np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, tops, strict=True)]))
    row["numpy_exact_ms"] = reference
    disk = _disk_bytes(backend, location)
    row["bytes_per_record"] = None if disk is None else disk / n
    if backend == "postgres":
        if keep:
            row["location"] = location
        else:
            _drop_schema(location)
    return row


def _drop_schema(location: str) -> None:
    import psycopg

    url, schema = location.rsplit("#", 1)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def run_scale(
    sizes: Sequence[int],
    backends: Sequence[str],
    count: int = 100,
    decisions_max: int | None = None,
    keep: Path | None = None,
) -> list[dict[str, Any]]:
    """Every backend at every size (see the module docstring); one row each. The retention decisions
    are measured for sizes up to ``decisions_max`` (every size when None: a ``Budget`` of a million
    records is far above the budgets retain is tuned for, and its adds take seconds each). SQLite
    stores are written into ``keep`` and left there when it is given (``scale-<n>.db``, for
    ``benchmarks/hybrid_scale.py --db``), else into a temporary folder removed after each size; a
    Postgres run's schema is kept when ``keep`` is given (its ``URL#schema`` in the row's
    ``location``), else dropped."""
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("RETAIN_BENCH_DIR")) as tmp:
        folder = Path(tmp) if keep is None else keep
        folder.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            for backend in backends:
                timed = decisions_max is None or n <= decisions_max
                rows.append(run_one(backend, n, count, folder, timed, keep is not None))
                print(table_row(rows[-1]), flush=True)
                if keep is None:
                    _empty(folder)
    return rows


def _empty(folder: Path) -> None:
    for path in folder.glob("*"):
        if path.is_dir():
            for f in path.glob("*"):
                f.unlink()
            path.rmdir()
        else:
            path.unlink()


TABLE_HEAD = (
    "| records | backend | ingest rec/s | graph build s | first search s | hybrid p50 / p95 ms | "
    "dense p50 / p95 ms | recall@10 | numpy exact p50 / p95 ms | bytes/record | peak RSS MB | "
    "first decision s | decision p50 / p95 ms | add at capacity p50 / p95 ms |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def table_row(r: dict[str, Any]) -> str:
    """One markdown row of :data:`TABLE_HEAD`."""
    build = f"{r['index_build_s']:.1f}" if "index_build_s" in r else "-"
    build += f" (CPU {r['index_build_cpu_s']:.1f})" if "index_build_cpu_s" in r else ""
    cpu = f" (CPU {r['ingest_cpu_rps']:,.0f})" if "ingest_cpu_rps" in r else ""
    decided = "- | - | -"
    if "decision_ms" in r:
        decided = (
            f"{r['first_decision_s']:.2f} | {r['decision_ms'][0]:.2f} / {r['decision_ms'][1]:.2f} | "
            f"{r['add_ms'][0]:.1f} / {r['add_ms'][1]:.1f}"
        )
    size = "-" if r["bytes_per_record"] is None else f"{r['bytes_per_record']:,.0f}"
    return (
        f"| {r['n']:,} | {r['backend']} | {r['ingest_rps']:,.0f}{cpu} | {build} | {r['first_search_s']:.2f} | "
        f"{r['hybrid_ms'][0]:.1f} / {r['hybrid_ms'][1]:.1f} | {r['dense_ms'][0]:.2f} / {r['dense_ms'][1]:.2f} | "
        f"{r['recall_at_10']:.3f} | {r['numpy_exact_ms'][0]:.2f} / {r['numpy_exact_ms'][1]:.2f} | {size} | "
        f"{r['peak_rss_mb']:,.0f} | {decided} |"
    )

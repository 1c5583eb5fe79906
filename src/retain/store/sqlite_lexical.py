"""The SQLite backend's lexical channel: FTS5 BM25 over ``records_fts`` (one table for every
namespace), score = -bm25() (higher = more relevant).

Two plans, one answer: for a namespace below the HNSW threshold the FTS match is joined with
``records`` and filtered in one query; for a large namespace the FTS index's own best matches are
read first (``ORDER BY rank LIMIT``, no row of ``records`` touched per match), then only those rows
are filtered, reading deeper (x8 each round) when the filter drops too many."""

from __future__ import annotations

import json
import sqlite3

from retain.store.filters import RecordFilter
from retain.store.ops import LexicalSearch, ScoredId
from retain.store.sqlite_rows import filter_sql

__all__ = ["lexical_search"]

_FIRST_DEPTH = 200
_MAX_DEPTH = 200_000


def match_expression(terms: list[str]) -> str:
    """The FTS5 query: any of the terms, each quoted."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def lexical_search(conn: sqlite3.Connection, op: LexicalSearch, flt: RecordFilter, large: bool) -> list[ScoredId]:
    """BM25 top ``op.limit`` of ``op.terms`` among the records of ``op.namespace`` that ``flt`` keeps,
    best first; ``large`` picks the FTS-first plan (see the module docstring)."""
    terms = [t for t in op.terms if t]
    if not terms:
        return []
    match = match_expression(terms)
    where, params = filter_sql(op.namespace, flt, alias="r.")
    limit = int(op.limit)
    depth = max(_FIRST_DEPTH, 8 * limit)
    while large and depth <= _MAX_DEPTH:
        best = conn.execute(
            "SELECT rowid, bm25(records_fts) AS s FROM records_fts WHERE records_fts MATCH ? ORDER BY s LIMIT ?",
            (match, depth),
        ).fetchall()
        scores = {int(r[0]): float(r[1]) for r in best}
        rows = conn.execute(
            f"SELECT r.rowid, r.id FROM json_each(?) AS k CROSS JOIN records AS r ON r.rowid = k.value WHERE {where}",
            (json.dumps(list(scores)), *params),
        ).fetchall()
        if len(rows) >= limit or len(best) < depth:
            found = sorted(((scores[r[0]], r[1]) for r in rows), key=lambda x: x[0])[:limit]
            return [ScoredId(i, -s) for s, i in found]
        depth *= 8
    rows = conn.execute(
        "SELECT r.id, bm25(records_fts) AS s FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
        f"WHERE records_fts MATCH ? AND {where} ORDER BY s LIMIT ?",
        (match, *params, limit),
    ).fetchall()
    return [ScoredId(r[0], -float(r[1])) for r in rows]

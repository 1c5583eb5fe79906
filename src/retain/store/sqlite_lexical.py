"""The SQLite backend's lexical channel: FTS5 BM25 over ``records_fts`` (one table for every
namespace), score = -bm25() (higher = more relevant).

Two plans, one answer: for a namespace below the HNSW threshold the FTS match is joined with
``records`` and filtered in one query, FTS5 reading only the range of rowids the namespace spans
(one cursor: a namespace written before or after a large one never enumerates that one's matches;
BM25's IDF, as FTS5 computes it, still counts each query term's records over the whole table, once
per query); for a large namespace the FTS index's own best matches are
read first (``ORDER BY rank LIMIT``, no row of ``records`` touched per match), then only those rows
are filtered, reading deeper (x8 each round) when the filter drops too many. In that plan a term in
more than :data:`COMMON_SHARE` of all indexed records (``fts5vocab``) is left out of the match when
the query has a rarer one: its BM25 weight (IDF) is near zero, and ranking every record that holds
it is what made a search cost grow with the namespace. Records matching only such terms then rank
after those matching a rarer term (an approximation, as the dense channel's HNSW graph is).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from retain.store.filters import RecordFilter
from retain.store.fts5_tokens import fts5_tokens
from retain.store.ops import LexicalSearch, ScoredId
from retain.store.sqlite_rows import filter_sql

__all__ = ["LexicalMemo", "lexical_search", "rare_terms"]

_FIRST_DEPTH = 200
_MAX_DEPTH = 200_000
COMMON_SHARE = 0.02
"""Share of all indexed records above which a query term is left out of the large-namespace plan."""
COMMON_FLOOR = 1_000
"""Records a term must be in, at least, to be left out (ranking fewer costs little)."""


@dataclass
class LexicalMemo:
    """What the large-namespace plan looks up per query term, kept between searches of one connection.

    ``df``: the document count in ``records_fts`` of each query term's FTS5 stems
    (:mod:`retain.store.fts5_tokens`), and ``total`` the records' largest rowid; both are read afresh
    after any write or another connection's commit (the store calls :meth:`clear`), so a search
    decides on the same counts as an uncached one. Reading a stem's count walks its whole posting list
    (``fts5vocab``): for a term in a fifth of the records that was the one per-query cost growing with
    the index's size."""

    df: dict[str, int] = field(default_factory=dict)
    total: int | None = None

    def clear(self) -> None:
        """Forget the counts (the index changed)."""
        self.df.clear()
        self.total = None


def _selective(conn: sqlite3.Connection, terms: list[str], memo: LexicalMemo | None = None) -> list[str]:
    """``terms`` without those in more than :data:`COMMON_SHARE` of the indexed records (all of them
    when none is rarer). Each term's stems (FTS5's tokenizer, :mod:`retain.store.fts5_tokens`) are looked
    up in the index's vocabulary (``fts5vocab``); ``memo`` keeps the counts between calls (:class:`LexicalMemo`)."""
    memo = LexicalMemo() if memo is None else memo
    stems = fts5_tokens().each(terms)
    wanted = sorted({s for group in stems for s in group} - memo.df.keys())
    if wanted:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.records_fts_vocab USING fts5vocab(main, records_fts, 'row')"
        )
        marks = ",".join("?" * len(wanted))
        counts = dict(conn.execute(f"SELECT term, doc FROM temp.records_fts_vocab WHERE term IN ({marks})", wanted))
        memo.df.update((s, int(counts.get(s, 0))) for s in wanted)
    if memo.total is None:
        memo.total = int(conn.execute("SELECT coalesce(max(rowid), 0) FROM records").fetchone()[0])
    return rare_terms(terms, [max((memo.df[s] for s in group), default=0) for group in stems], memo.total)


def rare_terms(terms: list[str], df: list[int], total: int) -> list[str]:
    """``terms`` without those whose document count (``df``, one per term) is over :data:`COMMON_SHARE`
    of ``total`` records and at least :data:`COMMON_FLOOR`; all of them when no rarer term matches
    anything (rank with them all). The rule of both backends' large-namespace plans."""
    cap = max(COMMON_SHARE * total, COMMON_FLOOR)
    if not any(0 < d <= cap for d in df):
        return terms
    return [t for t, d in zip(terms, df, strict=True) if d <= cap]


def match_expression(terms: list[str]) -> str:
    """The FTS5 query: any of the terms, each quoted."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def lexical_search(
    conn: sqlite3.Connection, op: LexicalSearch, flt: RecordFilter, large: bool, memo: LexicalMemo | None = None
) -> list[ScoredId]:
    """BM25 top ``op.limit`` of ``op.terms`` among the records of ``op.namespace`` that ``flt`` keeps,
    best first (ties by rowid); ``large`` picks the FTS-first plan (see the module docstring). When the
    rarer terms match nothing the filter keeps (they may be another namespace's), every term is ranked.
    ``memo``: the connection's :class:`LexicalMemo` (None: look every term up afresh)."""
    terms = [t for t in op.terms if t]
    if not terms:
        return []
    match = match_expression(terms)
    where, params = filter_sql(op.namespace, flt, alias="r.")
    limit = int(op.limit)
    if large:
        selective = match_expression(_selective(conn, terms, memo))
        found = _fts_first(conn, selective, where, params, limit)
        if found is not None and (found or selective == match):
            return found
        if selective != match and (found := _fts_first(conn, match, where, params, limit)) is not None:
            return found
    span = conn.execute(_SPAN, (op.namespace, op.namespace)).fetchone()
    if span is None or span[0] is None:  # an empty namespace: nothing to match
        return []
    rows = conn.execute(  # FTS5 first (one cursor, MATCH and the rowid range), then each match's row
        "SELECT r.id, bm25(records_fts) AS s FROM records_fts CROSS JOIN records r ON r.rowid = records_fts.rowid "
        f"WHERE records_fts MATCH ? AND records_fts.rowid BETWEEN ? AND ? AND {where} ORDER BY s, r.rowid LIMIT ?",
        (match, span[0], span[1], *params, limit),
    ).fetchall()
    return [ScoredId(r[0], -float(r[1])) for r in rows]


_SPAN = (
    "SELECT (SELECT rowid FROM records INDEXED BY records_ns WHERE namespace = ? ORDER BY rowid LIMIT 1), "
    "(SELECT rowid FROM records INDEXED BY records_ns WHERE namespace = ? ORDER BY rowid DESC LIMIT 1)"
)
"""The first and last rowid of a namespace: two reads of the ``(namespace)`` index, whose entries are
ordered by rowid within a namespace."""


def _fts_first(
    conn: sqlite3.Connection, match: str, where: str, params: tuple[object, ...], limit: int
) -> list[ScoredId] | None:
    """The best ``limit`` of the FTS index's own best matches that pass ``where``, reading deeper
    (x8) while too few pass; None past :data:`_MAX_DEPTH` (the caller joins instead)."""
    depth = max(_FIRST_DEPTH, 8 * limit)
    while depth <= _MAX_DEPTH:
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
    return None

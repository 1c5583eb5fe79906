"""The Postgres backend's lexical channel: BM25 as SQLite's FTS5 computes it (k1 = 1.2, b = 0.75, idf =
ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6; N, n and the mean length over the whole table, read from
``lex_stats`` and ``lex_df``), over the terms of :func:`retain.store.postgres_sql.lex_terms`, score
higher = more relevant.

Two plans, one rule shared with the SQLite store (:mod:`retain.store.sqlite_lexical`): in a namespace
below the HNSW threshold every record matching any term is ranked. In a large one, a query term in
more than :data:`~retain.store.sqlite_lexical.COMMON_SHARE` of all records (and at least
:data:`~retain.store.sqlite_lexical.COMMON_FLOOR` of them) is left out of the match and of the score
when the query has a rarer term that matches something: only the records holding a rare term are
read from the GIN index and scored, so a search no longer scores every record holding "the". When
the rare terms match nothing the filter keeps, every term is ranked as in the small plan. The
document frequencies are a table kept in each write transaction (``lex_df``), so deciding which
terms are common costs one primary-key look-up per term, whatever the namespace's size.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import retain.store.sqlite_lexical as shared
from retain.record import search_text
from retain.store.ops import LexicalSearch, ScoredId
from retain.store.postgres_sql import (
    COLUMNS,
    filter_sql,
    lex_terms,
    lex_terms_many,
    pg_row_to_record,
    tsquery_literal,
    tsvector_literal,
)
from retain.text.lexical import index_terms

__all__ = ["lexical_search", "relex"]

_RELEX_BATCH = 2_000
_NO_EMBEDDING = COLUMNS.replace("embedding", "NULL::vector")
"""The record columns without the embedding (the search text does not need it; decoding it is slow)."""

_K1, _B = 1.2, 0.75


def _idf(docs: int, hits: int) -> float:
    """FTS5's BM25 idf: ln((N - n + 0.5) / (n + 0.5)), or 1e-6 when that is not positive."""
    ratio = (docs - hits + 0.5) / (hits + 0.5)
    return math.log(ratio) if ratio > 1 else 1e-6


def lexical_search(cur: Any, op: LexicalSearch, large: bool) -> list[ScoredId]:
    """BM25 top ``op.limit`` of ``op.terms`` among the records of ``op.namespace`` that ``op.filter``
    keeps, best first (ties by write order); ``large`` picks the rare-terms-first plan."""
    terms = lex_terms([t for t in op.terms if t])
    if not terms or int(op.limit) <= 0:
        return []
    counts = Counter(terms)
    docs, tokens = cur.execute("SELECT docs, tokens FROM lex_stats WHERE k = 1").fetchone()
    if not docs:
        return []
    df = dict(cur.execute("SELECT term, df FROM lex_df WHERE term = ANY(%s)", (list(counts),)).fetchall())
    names = list(counts)
    if large:
        rare = shared.rare_terms(names, [df.get(t, 0) for t in names], int(docs))
        if len(rare) < len(names):
            found = _rank(cur, op, rare, counts, df, (int(docs), int(tokens)))
            if found:
                return found
    return _rank(cur, op, names, counts, df, (int(docs), int(tokens)))


def _rank(
    cur: Any, op: LexicalSearch, names: list[str], counts: Counter[str], df: dict[str, int], stats: tuple[int, int]
) -> list[ScoredId]:
    """BM25 of ``names`` (each weighted by its count in the query, as FTS5 sums a repeated phrase)
    over the records matching any of them: the GIN index finds them, each is scored once."""
    docs, tokens = stats
    weights = [counts[t] * _idf(docs, df.get(t, 0)) for t in names]
    where, params = filter_sql(op.namespace, op.filter, alias="r.")
    sql = (
        "SELECT r.id, SUM(q.w * (cardinality(u.positions) * %s) / "
        "(cardinality(u.positions) + %s * (%s + %s * r.lex_len / %s))) AS s "
        "FROM records r CROSS JOIN LATERAL unnest(r.lex) AS u(lexeme, positions, weights) "
        "JOIN unnest(%s::text[], %s::float8[]) AS q(term, w) ON q.term = u.lexeme "
        f"WHERE r.lex @@ %s::tsquery AND {where} GROUP BY r.id, r.rowid ORDER BY s DESC, r.rowid LIMIT %s"
    )
    args = [_K1 + 1, _K1, 1 - _B, _B, tokens / docs, names, weights, tsquery_literal(names), *params]
    rows = cur.execute(sql, [*args, int(op.limit)]).fetchall()
    return [ScoredId(r[0], float(r[1])) for r in rows]


def relex(cur: Any) -> int:
    """Index every record's terms afresh (``lex``, ``lex_len``) with :func:`lex_terms`, then count the
    BM25 statistics (``lex_df``, ``lex_stats``) again from the rows: migration 3, for stores written
    while terms were stemmed by snowball's Porter stemmer (a few words, "psychology", "trekked", were
    indexed under other stems than FTS5 gives, so a query stemmed now would miss them). Reads the
    table in rowid order, :data:`_RELEX_BATCH` rows at a time, in the caller's transaction, and rewrites
    only the rows whose terms changed. Returns their number."""
    last, done = 0, 0
    while True:
        rows = cur.execute(
            f"SELECT rowid, tsvector_to_array(lex), lex_len, {_NO_EMBEDDING} FROM records WHERE rowid > %s "
            f"ORDER BY rowid LIMIT {_RELEX_BATCH}",
            (last,),
        ).fetchall()
        if not rows:
            break
        lexes = lex_terms_many([index_terms(search_text(pg_row_to_record(row[3:]))) for row in rows])
        changed = [  # an update rewrites the row in every index (HNSW too): only rows whose terms differ
            (tsvector_literal(terms), len(terms), row[0])
            for row, terms in zip(rows, lexes, strict=True)
            if sorted(set(terms)) != sorted(row[1]) or len(terms) != int(row[2])
        ]
        if changed:
            cur.executemany("UPDATE records SET lex = %s::tsvector, lex_len = %s WHERE rowid = %s", changed)
        last, done = int(rows[-1][0]), done + len(changed)
    cur.execute("DELETE FROM lex_df")
    cur.execute("INSERT INTO lex_df (term, df) SELECT word, ndoc FROM ts_stat('SELECT lex FROM records')")
    cur.execute(
        "UPDATE lex_stats SET docs = (SELECT count(*) FROM records), "
        "tokens = (SELECT coalesce(sum(lex_len), 0) FROM records) WHERE k = 1"
    )
    return done

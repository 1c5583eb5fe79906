"""Words tokenized by SQLite FTS5's own tokenizer (``porter unicode61 remove_diacritics 2``, the tokenizer
of the SQLite store's ``records_fts``), memoised: both backends index and query the very same terms, and
the SQLite store's large-namespace plan looks query terms up in its vocabulary by the same stems.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["TOKENIZER", "Fts5Tokens", "fts5_tokens"]

TOKENIZER = "porter unicode61 remove_diacritics 2"
"""FTS5's tokenizer of the SQLite store's ``records_fts`` (:mod:`retain.store.sqlite_schema`)."""
_MEMO_LIMIT = 200_000


class Fts5Tokens:
    """Each distinct word's tokens as SQLite's FTS5 tokenizer makes them (an in-memory SQLite database
    with a contentless FTS5 table and its ``fts5vocab`` instance view), memoised (at most
    :data:`_MEMO_LIMIT` words, then begun again): the tokenizer itself, not a re-implementation (Porter
    stemmers differ: FTS5's follows Porter's C release, "psychology" -> "psycholog", snowball's the
    paper). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._memo: dict[str, tuple[str, ...]] = {}
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE words USING fts5 (w, content = '', tokenize = '{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")

    def each(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        """The tokens of each of ``words``, in order (a word may give none, or several)."""
        memo = self._memo  # entries are never removed from this dict: a full memo is replaced, not emptied
        todo = [w for w in dict.fromkeys(words) if w not in memo]
        if not todo:
            return [memo[word] for word in words]
        with self._lock:
            found = self._tokenize(todo)
        return [found[word] if word in found else memo[word] for word in words]

    def terms(self, words: Sequence[str]) -> list[str]:
        """The tokens of ``words`` in order, as one list."""
        return [token for tokens in self.each(words) for token in tokens]

    def _tokenize(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        """Tokenize ``words`` into the memo (a new memo when it would pass :data:`_MEMO_LIMIT`); returns
        their tokens. ASCII letters and digits are token characters to every
        ``unicode61``, so an ASCII alphanumeric word is exactly one token: those go in as one document
        (token i is word i; one FTS5 row instead of one per word); any other word is a document of its
        own (it may give no token or several)."""
        plain = [w for w in words if w.isascii() and w.isalnum()]
        other = [w for w in words if not (w.isascii() and w.isalnum())]
        conn, found = self._conn, dict[str, tuple[str, ...]]()
        with conn:
            conn.execute("INSERT INTO words (words) VALUES ('delete-all')")
            rows = [(0, " ".join(plain))] if plain else []
            conn.executemany("INSERT INTO words (rowid, w) VALUES (?, ?)", rows + list(enumerate(other, start=1)))
            by_doc: dict[int, list[tuple[int, str]]] = {}
            for term, doc, offset in conn.execute("SELECT term, doc, offset FROM tokens"):
                by_doc.setdefault(int(doc), []).append((int(offset), str(term)))
        tokens = [t for _, t in sorted(by_doc.pop(0, []))]
        if len(tokens) != len(plain):  # pragma: no cover - an ASCII alphanumeric word is one token
            raise AssertionError(f"FTS5 made {len(tokens)} tokens of {len(plain)} ASCII words")
        found.update((w, (t,)) for w, t in zip(plain, tokens, strict=True))
        found.update((w, tuple(t for _, t in sorted(by_doc.get(i, ())))) for i, w in enumerate(other, start=1))
        memo = {} if len(self._memo) + len(words) > _MEMO_LIMIT else self._memo
        memo.update(found)
        self._memo = memo
        return found


@lru_cache(maxsize=1)
def fts5_tokens() -> Fts5Tokens:
    """The process's one :class:`Fts5Tokens`."""
    return Fts5Tokens()

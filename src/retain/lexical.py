"""Lexical analysis shared by every backend's BM25 channel.

SQLite's ``unicode61`` tokenizer treats a run of Chinese or Japanese characters as one token, so
"用户喜欢绿茶" would never match "绿茶". Before indexing, :func:`index_terms` rewrites runs of CJK
characters as overlapping character bigrams (plus unigrams for one-character runs), the standard
approach of CJK search engines (Lucene's CJKBigramFilter). Latin text is lower-cased words;
stemming is left to the backend (FTS5 ``porter``).
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "index_terms", "query_terms"]

# Han, Hiragana, Katakana, Hangul syllables, CJK punctuation excluded.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_]+", re.UNICODE)
_CJK_RUN = re.compile(rf"^[{_CJK}]+$")

# English function words plus question words: they carry no evidence in a memory query.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t don didn doesn isn wasn ve ll
    re d m o y also ever really kind like get got go went say said tell told thing things
    """.split()  # noqa: SIM905 - a word list reads better as one string
)


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_terms(text: str) -> list[str]:
    """Terms to index for ``text``: lower-cased words; CJK runs as character bigrams.

    Returns a list of str in text order (duplicates kept: term frequency matters for BM25).
    """
    terms: list[str] = []
    for tok in _TOKEN.findall(text):
        if _CJK_RUN.match(tok):
            terms.extend(_cjk_terms(tok))
        else:
            terms.append(tok.lower())
    return terms


def query_terms(text: str, *, drop_stopwords: bool = True) -> list[str]:
    """Distinct query terms in first-seen order: :func:`index_terms` minus stopwords.

    When every term is a stopword the stopwords are kept, so a query is never emptied by cleaning.
    """
    terms = list(dict.fromkeys(index_terms(text)))
    if not drop_stopwords:
        return terms
    kept = [t for t in terms if t not in STOPWORDS]
    return kept or terms

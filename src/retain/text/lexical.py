"""Lexical analysis shared by every backend's BM25 channel.

SQLite's ``unicode61`` tokenizer treats a run of Chinese or Japanese characters as one token, so
"用户喜欢绿茶" would never match "绿茶". Before indexing, :func:`index_terms` rewrites runs of CJK
characters as overlapping character bigrams plus the single characters, the standard approach of
CJK search engines (Lucene's CJKBigramFilter with unigrams kept). Queries use the bigrams of a run
(the single character when the run is one character long), so "绿茶" matches by its bigram and "猫"
by its unigram. Latin text is lower-cased words;
stemming is left to the backend (FTS5 ``porter``).
"""

from __future__ import annotations

import re
import unicodedata

from retain.errors import InvalidInput

__all__ = ["MAX_QUERY_CHARS", "STOPWORDS", "TERSE_FILLERS", "check_query", "index_terms", "is_terse", "query_terms"]

MAX_QUERY_CHARS = 10_000
"""Longest query (characters, ``len(query)``) that search and context packing accept. Queries are
questions and task descriptions: MiniLM embeds only the first 256 word pieces (about 1,000
characters of English); a longer query costs time linear in its length (lexical terms, time
parser, the encoder's hashing or tokenizing) and is stored whole as context provenance
(``Memory.context``)."""

# Han, Hiragana, Katakana, Hangul syllables, CJK punctuation excluded.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"([{_CJK}]+)|([^\W_]+)", re.UNICODE)
_HAS_CJK = re.compile(rf"[{_CJK}]")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

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


def _cjk_terms(run: str, unigrams: bool) -> list[str]:
    if len(run) == 1:
        return [run]
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    return bigrams + list(run) if unigrams else bigrams


def index_terms(text: str, *, unigrams: bool = True) -> list[str]:
    """Terms to index for ``text``: lower-cased words; CJK runs as character bigrams followed by
    their single characters (``unigrams=False``: bigrams only, the query form).

    Returns a list of str in text order (duplicates kept: term frequency matters for BM25).
    """
    if not _HAS_CJK.search(text):
        return _WORD.findall(text.lower())
    terms: list[str] = []
    for cjk, word in _TOKEN.findall(text):
        if cjk:
            terms.extend(_cjk_terms(cjk, unigrams))
        else:
            terms.append(word.lower())
    return terms


def check_query(query: object) -> str:
    """``query`` when it is a string of at most :data:`MAX_QUERY_CHARS` characters.

    Raises:
        InvalidInput: not a string, or longer than the limit (the message gives both lengths).
    """
    if not isinstance(query, str):
        raise InvalidInput(f"query: must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"query: {len(query):,} characters, the limit is {MAX_QUERY_CHARS:,} "
            "(retain.text.lexical.MAX_QUERY_CHARS); search with the question, not the whole text"
        )
    return query


def query_terms(text: str, *, drop_stopwords: bool = True) -> list[str]:
    """Distinct query terms in first-seen order: :func:`index_terms` minus stopwords.

    When every term is a stopword the stopwords are kept, so a query is never emptied by cleaning.
    """
    terms = list(dict.fromkeys(index_terms(text, unigrams=False)))
    if not drop_stopwords:
        return terms
    kept = [t for t in terms if t not in STOPWORDS]
    return kept or terms


# Words and phrases that carry no content in a memory query: continuation prompts ("ok, continue",
# "go ahead", "what next?", "好的继续"). English phrases match whole words, case-insensitively;
# Chinese / Japanese phrases match as substrings.
TERSE_FILLERS: tuple[str, ...] = (
    # English
    "ok", "okay", "k", "yes", "yeah", "yep", "sure", "right", "fine", "great", "good", "cool", "thanks",
    "thank you", "please", "pls", "alright", "all right", "so", "and", "then", "now", "next", "step",
    "continue", "carry on", "keep going", "go", "go on", "go ahead", "ahead", "proceed", "do it",
    "what", "what's", "whats", "what is", "and then", "then what", "what now", "wrap up", "wrap it up",
    "close it out", "close out", "finish", "finish up", "let's", "lets", "let us", "the", "it", "on",
    "up", "out",
    # German / Spanish
    "ja", "weiter", "mach weiter", "los", "sí", "si", "vale", "sigue", "adelante", "continúa", "continua",
    # Chinese / Japanese
    "好的", "好", "行", "嗯", "继续", "下一步", "接下来", "然后", "呢", "吧", "啊", "请", "続けて",
    "はい",
)  # fmt: skip
_LATIN_FILLERS = sorted((f for f in set(TERSE_FILLERS) if not _HAS_CJK.search(f)), key=len, reverse=True)
_CJK_FILLERS = sorted((f for f in set(TERSE_FILLERS) if _HAS_CJK.search(f)), key=len, reverse=True)
_LATIN_RE = re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(f) for f in _LATIN_FILLERS) + r")(?![\w'])")


def is_terse(query: str) -> bool:
    """True when ``query`` has no content term: a continuation prompt such as "ok, continue".

    Definition: NFKC-normalise and lower-case the query; delete every phrase of
    :data:`TERSE_FILLERS` (English ones as whole words, CJK ones as substrings), then every
    character that is not a letter or digit. The query is terse when nothing is left. So "ok,
    continue", "go ahead", "what next?", "next step", "好的继续" and "下一步呢？" are terse; "check the
    references", "can we go to 100% this week?" and "湖畔云栖那家的房间够不够我们住？" are not.
    An empty query is terse.
    """
    text = unicodedata.normalize("NFKC", query).lower().replace("\u2019", "'")
    text = _LATIN_RE.sub(" ", text)
    for phrase in _CJK_FILLERS:
        text = text.replace(phrase, " ")
    return not any(ch.isalnum() for ch in text)

"""The large-namespace lexical plan's behaviour, checked the same way on every backend
(tests/store/test_sqlite_ann.py, tests/store/test_postgres_lexical.py)."""

from __future__ import annotations

from collections.abc import Sequence

from retain.record import MemoryRecord
from retain.store.base import Store


def check_rare_terms_first(store: Store, recs: Sequence[MemoryRecord], small: MemoryRecord) -> None:
    """``recs`` fill the large namespace "big" with "common words ..." and "zebra" in one record in 100;
    ``small`` ("common zebra") goes to the namespace "small". The rare term decides the ranking, the
    common term alone ranks nothing in, a query of common terms still answers, the small namespace
    ranks every term, and once the rare records are gone the common term ranks again."""
    store.put([small])
    zebras = {r.id for i, r in enumerate(recs) if i % 100 == 0}
    hits = store.search_lexical("big", ["common", "zebra"], limit=len(zebras))
    assert {h.id for h in hits} == zebras  # "common" is in every record: the rare term decides
    more = store.search_lexical("big", ["common", "zebra"], limit=len(zebras) + 5)
    assert len(more) == len(zebras)  # the common term alone ranks nothing in (left out of the match)
    assert store.search_lexical("big", ["common"], limit=3)  # a query of common terms only still answers
    assert len(store.search_lexical("small", ["common", "zebra"])) == 1  # small namespace: every term
    store.delete("big", list(zebras))  # the rare term now matches nothing here: the common one ranks again
    assert len(store.search_lexical("big", ["common", "zebra"], limit=5)) == 5

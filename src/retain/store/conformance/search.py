"""Conformance tests of the two search channels, lexical (BM25) and dense (cosine), with filters,
and of listings that agree with them.

Mixed into :class:`retain.store.conformance.StoreConformance`, which holds the fixtures ``store``
and ``corpus``.
"""

from __future__ import annotations

import itertools
from datetime import timedelta

import numpy as np
import pytest

from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, Tier
from retain.store.base import Store
from retain.store.conformance.helpers import DIM, T0, cosine, ids, make, names, unit
from retain.store.filters import ALL_RECORDS, RecordFilter
from retain.text.lexical import query_terms

__all__ = ["SearchTests"]


class SearchTests:
    """The two search channels: lexical (BM25) and dense (cosine), with filters, and listings that agree with them."""

    # --- lexical channel -------------------------------------------------------------------------

    def test_lexical_finds_english_words_best_first(self, store: Store) -> None:
        tea = make("ns", "The user drinks green tea every morning")
        teas = make("ns", "Green tea, green tea, always green tea")
        coffee = make("ns", "The user drinks black coffee")
        store.put([tea, teas, coffee])

        hits = store.search_lexical("ns", query_terms("green tea"))
        assert ids(hits) == [teas.id, tea.id]
        assert hits[0].score > hits[1].score > 0
        # porter stemming on both sides: "drinking" matches "drinks"
        assert set(ids(store.search_lexical("ns", query_terms("drinking")))) == {tea.id, coffee.id}
        assert store.search_lexical("ns", query_terms("zeppelin")) == []
        assert ids(store.search_lexical("ns", query_terms("coffee"), limit=1)) == [coffee.id]

    @pytest.mark.parametrize(
        ("content", "queries"),
        [
            ("用户喜欢绿茶", ["绿茶", "喜欢", "用户喜欢绿茶"]),
            ("私は抹茶アイスが好きです", ["抹茶", "アイス", "好き"]),
            ("東京でラーメンを食べました", ["ラーメン", "東京", "食べ"]),
            ("おすしがすきです", ["すし"]),
            ("저는 녹차를 좋아해요", ["녹차"]),
        ],
    )
    def test_lexical_finds_cjk_terms(self, store: Store, content: str, queries: list[str]) -> None:
        target = make("ns", content)
        decoys = [make("ns", "The user likes green tea"), make("ns", "今日は雨です"), make("ns", "他爱喝咖啡")]
        store.put([target, *decoys])
        for query in queries:
            terms = query_terms(query)
            assert terms, query
            hits = store.search_lexical("ns", terms)
            assert hits and hits[0].id == target.id, query
        assert target.id not in ids(store.search_lexical("ns", query_terms("咖啡")))

    def test_lexical_honours_filters(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        def found(words: str, flt: RecordFilter = RecordFilter()) -> list[str]:
            return names(corpus, store.get("ns", ids(store.search_lexical("ns", query_terms(words), flt))))

        assert found("old five archived four") == []
        assert sorted(found("old five archived four", ALL_RECORDS)) == ["archived", "old"]
        assert found("goal plan", RecordFilter(types=(MemoryType.PLAN_STEP,))) == ["plan"]
        assert found("fact core", RecordFilter(segments=("s2",))) == ["core"]
        assert found("fact goal", RecordFilter(start=T0 + timedelta(hours=1))) == ["fact"]
        assert found("fact goal", RecordFilter(seqs=(0,))) == ["goal"]

    # --- dense channel ---------------------------------------------------------------------------

    def test_vector_search_matches_reference_cosine(self, store: Store) -> None:
        records = [make("ns", f"record {i}", seed=100 + i) for i in range(12)]
        store.put(records)
        raw_query = unit(999) * 3.5 + 0.1  # deliberately not unit length
        hits = store.search_vector("ns", raw_query.astype(np.float32))

        reference = sorted(((cosine(raw_query, r.embedding), r.id) for r in records), reverse=True)
        assert ids(hits) == [rid for _, rid in reference]
        np.testing.assert_allclose([h.score for h in hits], [s for s, _ in reference], rtol=1e-5, atol=1e-6)
        assert all(-1.0 - 1e-6 <= h.score <= 1.0 + 1e-6 for h in hits)

        top3 = store.search_vector("ns", raw_query.astype(np.float32), limit=3)
        assert ids(top3) == [rid for _, rid in reference[:3]]

    def test_vector_search_exact_match_scores_one(self, store: Store) -> None:
        records = [make("ns", f"record {i}", seed=i) for i in range(5)]
        store.put(records)
        hits = store.search_vector("ns", unit(3))
        assert hits[0].id == records[3].id
        assert hits[0].score == pytest.approx(1.0, abs=1e-6)

    def test_vector_search_honours_filters(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        query = unit(5)  # exactly the superseded "old" record

        def found(flt: RecordFilter) -> list[str]:
            return sorted(names(corpus, store.get("ns", ids(store.search_vector("ns", query, flt)))))

        assert "old" not in found(RecordFilter())
        assert found(RecordFilter()) == ["core", "fact", "goal", "plan"]
        assert store.search_vector("ns", query, ALL_RECORDS)[0].id == corpus["old"].id
        assert found(ALL_RECORDS) == ["archived", "core", "fact", "goal", "old", "plan"]
        assert found(RecordFilter(tiers=(Tier.ARCHIVE,))) == ["archived"]
        assert found(RecordFilter(types=(MemoryType.GOAL,))) == ["goal"]
        assert found(RecordFilter(segments=("s1",), include_superseded=True)) == ["fact", "goal", "old"]
        assert found(RecordFilter(seqs=(2, 5))) == ["core", "fact"]
        any_collection = RecordFilter(seqs=frozenset({2, 5}))  # type: ignore[arg-type]  # accepted at run time
        assert found(any_collection) == ["core", "fact"]  # any collection of positions
        assert found(RecordFilter(start=T0 + timedelta(days=1), end=T0 + timedelta(days=3))) == ["fact", "plan"]
        assert found(RecordFilter(start=T0 + timedelta(days=30))) == []

    def test_vector_search_sees_writes_and_rejects_wrong_dimension(self, store: Store) -> None:
        assert store.search_vector("ns", unit(1)) == []
        first = make("ns", "first", seed=1)
        store.put([first])
        assert ids(store.search_vector("ns", unit(1))) == [first.id]
        second = make("ns", "second", seed=2)
        store.put([second])  # a cached matrix must not hide the new row
        assert store.search_vector("ns", unit(2))[0].id == second.id
        with pytest.raises(InvalidInput, match="dimension"):
            store.search_vector("ns", unit(1, dim=DIM + 1))

    def test_multi_vector_search_answers_each_row_as_a_single_search(
        self, store: Store, corpus: dict[str, MemoryRecord]
    ) -> None:
        queries = np.stack([unit(5), unit(1) * 2.0, unit(77), np.zeros(DIM, np.float32)])  # scaled, zero rows too
        for flt in (RecordFilter(), ALL_RECORDS, RecordFilter(tiers=(Tier.CORE,)), RecordFilter(seqs=(2, 5))):
            for limit in (1, 3, 50):
                many = store.search_vectors("ns", queries, flt, limit)
                single = [store.search_vector("ns", q, flt, limit) for q in queries]
                assert [ids(h) for h in many] == [ids(h) for h in single]
                for a, b in zip(many, single, strict=True):
                    np.testing.assert_allclose([h.score for h in a], [h.score for h in b], rtol=1e-5, atol=1e-6)
                again = store.search_vectors("ns", queries, flt, limit)  # a repeated search: the same answer
                assert [ids(h) for h in again] == [ids(h) for h in many]
        assert store.search_vectors("empty", queries) == [[], [], [], []]
        assert store.search_vectors("ns", np.zeros((0, DIM), np.float32)) == []
        with pytest.raises(InvalidInput, match="vectors"):
            store.search_vectors("ns", unit(1))
        with pytest.raises(InvalidInput, match="dimension"):
            store.search_vectors("ns", np.stack([unit(1, dim=DIM + 1)]))

    def test_multi_vector_search_sees_every_kind_of_write(self, store: Store) -> None:
        first = make("ns", "first", seed=1)
        store.put([first])
        probe = np.stack([unit(2), unit(3)])
        assert [ids(h) for h in store.search_vectors("ns", probe)] == [[first.id], [first.id]]
        second = make("ns", "second", seed=2)
        store.put([second])  # an add after a search is seen by the next search
        assert store.search_vectors("ns", probe)[0][0].id == second.id
        store.put([second.evolve(tier=Tier.ARCHIVE)])  # archived: out of the hot memory
        assert ids(store.search_vectors("ns", probe)[0]) == [first.id]
        store.put([second.evolve(tier=Tier.DYNAMIC, embedding=unit(3))])  # re-embedded in place
        assert store.search_vectors("ns", probe)[1][0].id == second.id
        store.delete("ns", [second.id])
        assert [ids(h) for h in store.search_vectors("ns", probe)] == [[first.id], [first.id]]
        store.delete_namespace("ns")
        assert store.search_vectors("ns", probe) == [[], []]

    def test_list_ids_are_the_ids_of_list_records(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        filters = (RecordFilter(), ALL_RECORDS, RecordFilter(tiers=(Tier.CORE,)), RecordFilter(seqs=(0, 2, 3)))
        for flt, order, limit in itertools.product(filters, ("created", "seq", "event", "recent"), (None, 1, 2)):
            listed = ids(store.list_records("ns", flt, order=order, limit=limit))
            assert store.list_ids("ns", flt, order=order, limit=limit) == listed
            store.search_vector("ns", unit(1))  # the same answer with the namespace's vectors cached
            assert store.list_ids("ns", flt, order=order, limit=limit) == listed
        late = make("ns", "written last", seed=8)
        store.put([late])  # a write after a listing is seen by the next one
        assert store.list_ids("ns", RecordFilter(tiers=None), order="recent", limit=1) == [late.id]
        with pytest.raises(InvalidInput, match="order"):
            store.list_ids("ns", order="sideways")

    def test_records_handed_out_reflect_the_latest_write(self, store: Store) -> None:
        rec = make("ns", "cached then changed", seed=4)
        store.put([rec])
        assert store.get("ns", [rec.id])[0].importance == rec.importance
        store.put([rec.evolve(importance=0.9, tier=Tier.CORE)])
        got = store.get("ns", [rec.id])[0]
        assert (got.importance, got.tier) == (0.9, Tier.CORE)
        assert store.list_records("ns", RecordFilter(tiers=(Tier.CORE,)))[0].importance == 0.9
        store.delete("ns", [rec.id])
        assert store.get("ns", [rec.id]) == []

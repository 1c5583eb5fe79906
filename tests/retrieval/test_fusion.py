import numpy as np
import pytest

from retain.errors import InvalidInput
from retain.retrieval.fusion import (
    FEATURE_NAMES,
    LinearFusion,
    SearchConfig,
    fusion_features,
    mmr,
    proper_nouns,
    relation_query,
    rrf,
    train_fusion,
)


def test_rrf_matches_hand_computation():
    scores = rrf([["a", "b", "c"], ["c", "a"]], k=60)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert max(scores, key=scores.get) == "a"


def test_rrf_weights_must_match_rankings():
    with pytest.raises(InvalidInput):
        rrf([["a"], ["b"]], weights=[1.0])


def _mmr_reference(vectors, rel, lam, k):
    rel = (rel - rel.min()) / (rel.max() - rel.min())
    picked = []
    while len(picked) < k:
        best, best_v = None, -np.inf
        for i in range(len(rel)):
            if i in picked:
                continue
            red = max((float(vectors[i] @ vectors[j]) for j in picked), default=0.0)
            v = lam * rel[i] - (1 - lam) * red
            if v > best_v:
                best, best_v = i, v
        picked.append(best)
    return picked


def test_mmr_matches_reference_and_skips_duplicates():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(8, 5)).astype(np.float32)
    vecs[1] = vecs[0]
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rel = np.array([1.0, 0.99, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0])
    got = mmr(vecs, rel, lam=0.5, k=4)
    assert got == _mmr_reference(vecs, rel, 0.5, 4)
    assert got[0] == 0 and 1 not in got[:2]


def _features(n=4):
    return fusion_features(
        bm25=np.array([4.0, 2.0, 0.0, 1.0][:n]),
        bm25_rank=np.array([0, 1, 100, 2][:n], dtype=float),
        dense=np.array([0.5, 0.7, 0.2, 0.1][:n]),
        dense_rank=np.array([1, 0, 2, 3][:n], dtype=float),
        prev_index=np.array([-1, 0, 1, 2][:n]),
        next_index=np.array([1, 2, 3, -1][:n]),
        segment=["s1", "s1", "s2", "s2"][:n],
        mentions_speaker=np.array([True, False, False, True][:n]),
        mentions_other=np.array([False, True, True, False][:n]),
        coverage=np.array([1.0, 0.5, 0.0, 0.5][:n]),
        length_terms=np.array([10, 3, 5, 7][:n], dtype=float),
        is_question=np.array([False, True, False, False][:n]),
        n_query_terms=2,
    )


def test_fusion_features_values():
    x = _features()
    assert x.shape == (4, len(FEATURE_NAMES))
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    assert x[:, col["bm25_norm"]].tolist() == [1.0, 0.5, 0.0, 0.25]
    # neighbour of item 2 are items 1 and 3: max bm25_norm = 0.5
    assert x[2, col["neighbor_bm25"]] == 0.5
    assert x[1, col["dense_gap"]] == 0.0
    assert x[0, col["segment_dense"]] == pytest.approx(np.mean([0.5 - 0.7, 0.0]))


def test_linear_fusion_round_trip_and_direction():
    x = _features()
    y = np.array([True, False, False, False])
    model = train_fusion([x, x], [y, y], trained_on="unit")
    again = LinearFusion.from_json(model.to_json())
    np.testing.assert_allclose(again.score(x), model.score(x))
    assert int(np.argmax(model.score(x))) == 0
    assert again.trained_on == "unit"


def test_fusion_rejects_other_feature_names():
    model = LinearFusion(
        weights=np.ones(2),
        bias=0.0,
        mean=np.zeros(2),
        scale=np.ones(2),
        low=-np.ones(2),
        high=np.ones(2),
        feature_names=("a", "b"),
    )
    with pytest.raises(InvalidInput):
        LinearFusion.from_json(model.to_json())


def test_train_fusion_needs_both_classes():
    with pytest.raises(InvalidInput):
        train_fusion([_features()], [np.zeros(4, dtype=bool)])


def test_shipped_fusion_loads_and_documents_its_training():
    model = LinearFusion.load()
    assert model.feature_names == FEATURE_NAMES
    assert "locomo" in model.trained_on.lower()


def test_relation_query_drops_the_named_people_and_their_possessive():
    assert relation_query("What books has Melanie read?", {"melanie"}) == "What books has read?"
    assert relation_query("What do Melanie's kids like?", {"Melanie"}) == "What do kids like?"
    assert relation_query("Which city have both Jean and John visited?", {"jean", "john"}) == (
        "Which city have both and visited?"
    )
    assert relation_query("Did Johnny call John?", {"john"}) == "Did Johnny call ?"  # whole words only
    assert relation_query("What books has Melanie read?", set()) == "What books has Melanie read?"


def test_proper_nouns_skip_sentence_openers():
    assert proper_nouns("Hey Gina! I went to Paris. Then Rome and New York.") == 5  # Gina Paris Rome New York
    assert proper_nouns("We went hiking. It was nice") == 0
    assert proper_nouns("我们去了巴黎") == 0


def test_turn_position_nouns_and_relation_features():
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    base = _features()
    assert base[:, col["turn_position"]].tolist() == pytest.approx([1 / 3] * 4)  # unknown position
    assert base[:, col["relation_dense"]].tolist() == base[:, col["dense"]].tolist()  # no relation query
    x = fusion_features(
        bm25=np.array([4.0, 2.0, 0.0, 1.0]),
        bm25_rank=np.array([0, 1, 100, 2], dtype=float),
        dense=np.array([0.5, 0.7, 0.2, 0.1]),
        dense_rank=np.array([1, 0, 2, 3], dtype=float),
        prev_index=np.array([-1, 0, 1, 2]),
        next_index=np.array([1, 2, 3, -1]),
        segment=["s1", "s1", "s2", "s2"],
        mentions_speaker=np.array([True, False, False, True]),
        mentions_other=np.array([False, True, True, False]),
        coverage=np.array([1.0, 0.5, 0.0, 0.5]),
        length_terms=np.array([10, 3, 5, 7], dtype=float),
        is_question=np.array([False, True, False, False]),
        n_query_terms=2,
        earlier_turns=np.array([0, 1, 2, -1]),
        proper_noun_counts=np.array([0.0, 1.0, 3.0, 0.0]),
        relation_dense=np.array([0.1, 0.4, 0.6, 0.0]),
    )
    assert x[:, col["turn_position"]].tolist() == pytest.approx([1.0, 0.5, 1 / 3, 1 / 3])
    assert x[:, col["proper_nouns"]].tolist() == pytest.approx(np.log1p([0, 1, 3, 0]).tolist())
    assert x[:, col["relation_dense"]].tolist() == [0.1, 0.4, 0.6, 0.0]
    assert x[:, col["relation_gap"]].tolist() == pytest.approx([-0.5, -0.2, 0.0, -0.6])


def test_search_config_refuses_negative_relation_candidates():
    with pytest.raises(InvalidInput, match="relation_candidates"):
        SearchConfig(relation_candidates=-1)

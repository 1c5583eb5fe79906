"""retain.text.typemodel: the learned type classifier, its guards and its JSON form."""

from __future__ import annotations

import numpy as np
import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput
from retain.eval.type_train import Example, accuracy, fit_type_model
from retain.record import MemoryType
from retain.text.typemodel import TypeModel, char_ngrams, load_type_model, never_hard, type_features, weigh


@pytest.mark.parametrize(
    ("text", "role"),
    [
        ("What's your total budget?", "assistant"),
        ("How are we doing against the budget?", "user"),
        ("Preparing the budget summary.", "assistant"),
        ("Summary so far: 6 nights, trains only, under 5000 EUR in total.", "assistant"),
        ("Long time no talk!", "Caroline"),
        ("Long time no talk", "Melanie"),
        ("It must have been special", "Caroline"),
        ("It must have been special.", "user"),
        ("Und bitte keine Anwaltskosten?", "user"),
        ("好的，收到", "user"),
        ("Summary so far: budget under 5000 EUR, no flights, vegetarian meals only.", "agent_thought"),
        ("Recap: the hotel must stay below 140 EUR a night.", "assistant"),
        ("ok, noted", "user"),
        ("User no longer likes spicy food", None),
    ],
)
def test_questions_acks_and_agent_recaps_are_never_hard_constraints(text: str, role: str | None) -> None:
    assert load_type_model().predict(text, role) is not MemoryType.HARD_CONSTRAINT


def test_a_short_self_statement_is_not_chatter() -> None:
    assert load_type_model().predict("I am vegetarian.", "user") is not MemoryType.CHATTER


def test_guards() -> None:
    assert never_hard("Is the budget 5000?", "user")
    assert never_hard("The budget is 5000 EUR.", "agent_thought")
    assert not never_hard("The budget is 5000 EUR, never more.", "user")
    model = load_type_model()
    assert model.predict("card 4111 1111 1111 1111, exp 12/29", "user") is MemoryType.SENSITIVE
    assert model.predict("   ", "user") is MemoryType.CHATTER
    with pytest.raises(TypeError):
        model.predict(3, "user")  # type: ignore[arg-type]


def test_features_are_deterministic_and_the_weighted_block_unit_norm() -> None:
    named, counts = type_features("The budget must stay under 5000 EUR.", "user")
    again = type_features("The budget must stay under 5000 EUR.", "user")
    assert (named, counts) == again
    assert "role:person" in named and "cue:hard_strong" in named
    hashed = weigh(counts, load_type_model().idf)
    assert abs(sum(v * v for v in hashed.values()) - 1.0) < 1e-9
    assert weigh({}, load_type_model().idf) == {}


def test_char_ngrams_follow_scikit_learn_char_wb() -> None:
    from sklearn.feature_extraction.text import CountVectorizer

    text = "Und bitte KEINE Anwaltskosten. 预算是80人天 a ab abc"
    analyse = CountVectorizer(analyzer="char_wb", ngram_range=(2, 4)).build_analyzer()
    assert char_ngrams(text) == analyse(text)
    assert char_ngrams("   ") == []


def _toy() -> list[Example]:
    words = {MemoryType.HARD_CONSTRAINT: "must never exceed", MemoryType.CHATTER: "haha nice one"}
    return [Example("s", f"{words[t]} {i}", "user", t) for i in range(12) for t in words]


def test_fit_round_trip_and_refusals() -> None:
    examples = _toy()
    model = fit_type_model(examples, encoder=HashingEncoder(dim=16), c=10.0)
    assert accuracy(model, examples) == 1.0
    again = TypeModel.from_dict(model.to_dict())
    assert np.allclose(
        again.logits("must never exceed 3", "user"), model.logits("must never exceed 3", "user"), atol=1e-3
    )
    with pytest.raises(InvalidInput):
        TypeModel.from_dict({**model.to_dict(), "format": "other/1"})
    with pytest.raises(InvalidInput):
        TypeModel.from_dict({**model.to_dict(), "types": ["fact"]})
    with pytest.raises(InvalidInput):
        TypeModel.from_dict({**model.to_dict(), "idf": [1.0, 2.0]})
    with pytest.raises(InvalidInput):
        TypeModel.from_dict({**model.to_dict(), "idf": None})


def test_the_embedding_head_is_used_only_for_its_width() -> None:
    enc = HashingEncoder(dim=16)
    model = fit_type_model(_toy(), encoder=enc, c=10.0)
    vector = enc.encode(["user: must never exceed 3"])[0]
    assert not np.allclose(
        model.logits("must never exceed 3", "user", vector), model.logits("must never exceed 3", "user")
    )
    other_width = np.ones(8, dtype=np.float32) / np.sqrt(8)
    assert np.allclose(
        model.logits("must never exceed 3", "user", other_width), model.logits("must never exceed 3", "user")
    )


def test_memory_types_with_the_learned_model_and_refuses_an_unknown_classifier() -> None:
    from retain.config import MemoryConfig

    with Memory(encoder=HashingEncoder(dim=32), config=MemoryConfig(type_classifier="learned")) as mem:
        rid = mem.add("What's your total budget?", namespace="n", role="assistant")
        assert mem.get(rid, namespace="n").type is not MemoryType.HARD_CONSTRAINT
        given = mem.add("What's the budget?", namespace="n", role="user", type="hard_constraint")
        assert mem.get(given, namespace="n").type is MemoryType.HARD_CONSTRAINT
    with pytest.raises(InvalidInput):
        MemoryConfig(type_classifier="llm")


def test_embeddings_are_cached_by_encoder_and_texts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from retain.eval.type_train import embed_examples

    enc = HashingEncoder(dim=16)
    first = embed_examples(_toy(), enc, tmp_path)
    assert len(list(tmp_path.glob("types-*.npy"))) == 1
    assert np.array_equal(embed_examples(_toy(), enc, tmp_path), first)
    embed_examples(_toy()[:3], enc, tmp_path)
    assert len(list(tmp_path.glob("types-*.npy"))) == 2


@pytest.mark.parametrize(
    "text",
    [
        "Und bitte keine Gerichtskosten, das zahlen wir auf keinen Fall.",
        "Das Budget liegt bei höchstens 3.000 Euro, mehr geht nicht.",
        "预算不能超过5万元。",
        "ホテルは1泊1万円以内でお願いします。",
    ],
)
def test_non_english_hard_constraints_are_not_chatter(text: str) -> None:
    """A user's limit in German, Chinese or Japanese (the rule cascade types the first one chatter)."""
    assert load_type_model().predict(text, "user") is MemoryType.HARD_CONSTRAINT

"""retain.text.typemodel: the learned type classifier, its guards and its JSON form."""

from __future__ import annotations

import numpy as np
import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput
from retain.eval.type_train import Example, accuracy, fit_type_model
from retain.record import MemoryType
from retain.text.typemodel import TypeModel, load_type_model, never_hard, type_features


@pytest.mark.parametrize(
    ("text", "role"),
    [
        ("What's your total budget?", "assistant"),
        ("How are we doing against the budget?", "user"),
        ("Preparing the budget summary.", "assistant"),
        ("Summary so far: 6 nights, trains only, under 5000 EUR in total.", "assistant"),
        ("Long time no talk!", "Caroline"),
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


def test_features_are_deterministic_and_the_hashed_block_unit_norm() -> None:
    named, hashed = type_features("The budget must stay under 5000 EUR.", "user")
    again = type_features("The budget must stay under 5000 EUR.", "user")
    assert (named, hashed) == again
    assert "role:person" in named and "cue:hard_strong" in named
    assert abs(sum(v * v for v in hashed.values()) - 1.0) < 1e-9


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

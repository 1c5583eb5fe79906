"""FTS5's own tokenizer, memoised (:mod:`retain.store.fts5_tokens`)."""

from __future__ import annotations

import pytest

from retain.store import fts5_tokens as module
from retain.store.fts5_tokens import Fts5Tokens


def test_words_are_stemmed_as_fts5_stems_them() -> None:
    tokens = Fts5Tokens()
    assert tokens.each(["psychology", "Treks", "naïve", "--", "東京タワー"]) == [
        ("psycholog",),
        ("trek",),
        ("naiv",),
        (),
        ("東京タワー",),
    ]
    assert tokens.terms(["running", "dogs"]) == ["run", "dog"]


def test_a_full_memo_begins_again_without_losing_the_words_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call naming words memoised before and new ones that fill the memo gets every word's tokens
    (the memo begun again holds only the new ones)."""
    monkeypatch.setattr(module, "_MEMO_LIMIT", 5)
    tokens = Fts5Tokens()
    assert tokens.terms(["user", "budgets", "hotels"]) == ["user", "budget", "hotel"]
    words = ["user", "flights", "venues", "owners", "trains"]  # 3 memoised + 4 new > 5: a new memo
    assert tokens.terms(words) == ["user", "flight", "venu", "owner", "train"]
    assert tokens.terms(["user", "budgets"]) == ["user", "budget"]  # tokenized again after the reset

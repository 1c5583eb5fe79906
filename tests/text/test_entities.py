"""Entity extraction (:mod:`retain.text.entities`): names, quantities and ids as normalised keys."""

from __future__ import annotations

import pytest

from retain.text.entities import extract_entities


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The total budget must stay under 5000 EUR.", {"qty:5000 eur"}),
        ("Budget: €5,000 over 6 years", {"qty:5000 eur", "qty:6 year"}),
        ("We fly with Caroline Smith from Brennick (BRK).", {"name:caroline smith"}),
        ("The Louvre Museum opens at nine.", {"name:louvre museum"}),
        ("Merged PR #884; tag PC118232 fixes ABC-123.", {"id:pr#884", "id:PC118232", "id:ABC-123"}),
        ("see #12 for details", {"id:#12"}),
        ("Paris is lovely. Rome too.", set()),
        ("nothing to see here", set()),
    ],
)
def test_extract_entities(text: str, expected: set[str]) -> None:
    assert extract_entities(text) == expected

"""The write path's drafting (:mod:`retain.ingest.draft`): what counts as a duplicate within one call."""

from __future__ import annotations

import pytest

from retain.encoders.basis import HashingEncoder
from retain.memory import Memory
from retain.store import ALL_RECORDS


@pytest.mark.parametrize(
    "first, second",
    [
        ({"segment": None}, {"segment": "None"}),  # no segment is not a segment named "None"
        ({"role": "a|b", "segment": "c"}, {"role": "a", "segment": "b|c"}),  # the separator in a field
        ({"role": "x|s", "segment": None, "seq": 3}, {"role": "x", "segment": "s|None", "seq": 3}),
    ],
)
def test_one_call_keeps_the_same_words_in_different_contexts_apart(first: dict, second: dict) -> None:
    mem = Memory(encoder=HashingEncoder(64))
    ids = mem.add_many([{"content": "Sounds good!", **first}, {"content": "Sounds good!", **second}], namespace="n")

    assert ids[0] != ids[1]  # as two separate adds would (the store's look-up compares each field)
    assert mem.store.count("n", ALL_RECORDS) == 2
    again = mem.add_many([{"content": "Sounds good!", **first}, {"content": "Sounds good!", **second}], namespace="n")
    assert again == ids

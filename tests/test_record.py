"""Records (:mod:`retain.record`): the metadata a caller gets back is read-only, so no caller can change
the copy the store keeps in its decoded-record cache."""

from __future__ import annotations

import pytest

from retain import HashingEncoder, Memory


def test_a_caller_cannot_corrupt_cached_records_through_their_metadata() -> None:
    m = Memory(encoder=HashingEncoder(dim=384))
    rid = m.add("Alice likes green tea.", namespace="n", metadata={"speaker": "Alice", "tags": ["a"], "d": {"x": 1}})
    rec = m.get(rid, namespace="n")
    with pytest.raises(TypeError):
        rec.metadata["speaker"] = "Mallory"  # type: ignore[index]
    with pytest.raises(TypeError):
        rec.metadata["tags"].append("x")
    with pytest.raises(TypeError):
        rec.metadata["d"]["x"] = 2
    again = m.get(rid, namespace="n")
    assert again.metadata == {"speaker": "Alice", "tags": ["a"], "d": {"x": 1}}
    (hit,) = m.search("green tea", namespace="n", k=1, allow_raw=True)
    assert hit.record.metadata["speaker"] == "Alice"
    copy = dict(rec.metadata)  # a caller's copy is theirs to change, and stores as JSON again
    copy["speaker"] = "Bob"
    new = m.update(rid, "Bob likes green tea.", namespace="n")
    assert m.get(new, namespace="n").metadata["speaker"] == "Alice"
    assert '"tags": [\n' in m.export(namespace="n")

"""The frozen configuration objects: bad values are refused at construction, naming the field and limit."""

from __future__ import annotations

import pytest

from retain import InvalidInput, MemoryConfig


@pytest.mark.parametrize("value", [0, 1, 15, -5, 2.5, None, "100", True])
def test_tiny_or_wrong_record_limits_are_refused(value: object) -> None:
    with pytest.raises(InvalidInput, match="max_record_chars"):
        MemoryConfig(max_record_chars=value)  # type: ignore[arg-type]

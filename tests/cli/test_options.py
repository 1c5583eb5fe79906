"""The CLI's shared option parsing (:mod:`retain.cli.options`): ``--state`` refuses what it cannot read."""

from pathlib import Path

import pytest

from retain.cli.options import STATE_FILE_LIMIT, parse_state
from retain.errors import InvalidInput


def test_state_option_refuses_deep_json_and_huge_files(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(InvalidInput, match="nested too deeply"):
        parse_state(f"@{deep}")
    with pytest.raises(InvalidInput, match="nested too deeply"):
        parse_state('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    big = tmp_path / "big.json"
    big.write_text(" " * (STATE_FILE_LIMIT + 1) + "{}", encoding="utf-8")
    with pytest.raises(InvalidInput, match="larger than"):
        parse_state(f"@{big}")
    with pytest.raises(InvalidInput, match="larger than"):
        parse_state("@/dev/zero")

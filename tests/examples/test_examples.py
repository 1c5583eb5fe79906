"""The examples run: the scripted trip agent end to end, and the endpoint one refuses to start unconfigured."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(EXAMPLES))


def test_scripted_trip_answers_from_the_packed_memory() -> None:
    result = load("scripted_trip").main(["--hashing", "--quiet"])
    assert result.turns == 59
    # the 900 EUR budget was said at turn 2 and the booking references came from tool results many
    # turns back: the answer holds them only if retain's context (capacity 25, 350 tokens) carried them
    assert result.answer.startswith("Spent 409 EUR of the 900 EUR budget: within budget.")
    assert "R-001, R-002, R-003" in result.answer
    assert len(result.procedures) == 4  # requirements, flights, hotels, itinerary completed


def test_openai_trip_unconfigured_exits_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    code = load("openai_trip").main([], env={})
    assert code == 2
    err = capsys.readouterr().err
    assert "RETAIN_EXAMPLE_BASE_URL" in err and "RETAIN_EXAMPLE_MODEL" in err and "Nothing was sent" in err

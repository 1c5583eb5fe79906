"""EMBER's agent-stream utility: the agent gate, the guaranteed order, training, the shipped model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from retain import Budget, Memory, MemoryType, Tier
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.eval.scenarios import load_scenarios
from retain.eval.utility_traces import scenario_traces
from retain.record import MemoryRecord
from retain.retention.agent_utility import (
    AGENT_FEATURES,
    CHATTER_CEILING,
    RESULT_FLOOR,
    AgentUtility,
    agent_features,
    is_agent_record,
    train_agent_utility,
)
from retain.retention.utility import RulePrior, UtilityContext

EMPTY = np.zeros((0, 0), dtype=np.float32)


def _rec(text: str, role: str, type_: MemoryType, phase: str | None = "book") -> MemoryRecord:
    return MemoryRecord(
        id=f"r{abs(hash((text, role))) % 10**8}",
        namespace="ns",
        content=text,
        type=type_,
        role=role,
        metadata={"phase": phase} if phase else {},
    )


def _trained() -> AgentUtility:
    return train_agent_utility(scenario_traces(load_scenarios("scenarios/train")), RulePrior())


def test_gate_reads_phase_and_agent_roles_only() -> None:
    assert is_agent_record(_rec("x", "user", MemoryType.FACT))
    assert is_agent_record(_rec("x", "tool", MemoryType.OBSERVATION, phase=None))
    assert not is_agent_record(_rec("x", "user", MemoryType.FACT, phase=None))
    assert not is_agent_record(_rec("x", "assistant", MemoryType.FACT, phase=None))  # a BEAM chat


def test_non_agent_records_keep_the_base_score_exactly() -> None:
    model, base = _trained(), RulePrior()
    recs = [_rec("I adopted a dog named Rex in May.", "Ann", MemoryType.FACT, phase=None)]
    ctx = [UtilityContext(EMPTY)]
    assert model.score(recs, ctx)[0] == base.score(recs, ctx)[0]


def test_a_tool_result_always_outscores_chatter() -> None:
    model = _trained()
    tool = _rec("ok", "tool", MemoryType.CHATTER)  # the weakest tool output there is
    chat = _rec(
        "Thanks, great, perfect, sounds good! Flight AB1234 on 3 May, 420 EUR total.", "user", MemoryType.CHATTER
    )
    scores = model.score([tool, chat], [UtilityContext(EMPTY), UtilityContext(EMPTY)])
    assert scores[0] >= RESULT_FLOOR > CHATTER_CEILING >= scores[1]


def test_features_are_causal_and_named() -> None:
    a, b = _rec("Booked: ref QX7781, 420 EUR", "tool", MemoryType.ACTION_RESULT), _rec("next", "user", MemoryType.FACT)
    one = agent_features([a], [UtilityContext(EMPTY)])
    two = agent_features([a, b], [UtilityContext(EMPTY), UtilityContext(EMPTY, a)])
    assert one.shape == (1, len(AGENT_FEATURES)) and np.array_equal(one[0], two[0])
    row = dict(zip(AGENT_FEATURES, one[0], strict=True))
    assert row["role_tool"] == 1 and row["codes"] > 0 and row["amounts"] > 0 and row["confirmation"] > 0


def test_json_round_trip_and_bad_json() -> None:
    model = _trained()
    again = AgentUtility.from_json(model.to_json(), RulePrior())
    assert np.allclose(again.weights, model.weights, rtol=1e-4)
    raw = json.loads(model.to_json())
    raw["feature_names"] = ["x"]
    with pytest.raises(InvalidInput):
        AgentUtility.from_json(json.dumps(raw), RulePrior())
    with pytest.raises(InvalidInput):
        AgentUtility.from_json("{", RulePrior())


def test_training_needs_both_labels() -> None:
    traces = scenario_traces(load_scenarios("scenarios/train")[:1])
    recs, ctxs, labels = traces[0]
    with pytest.raises(InvalidInput):
        train_agent_utility([(recs, ctxs, np.zeros_like(labels))], RulePrior())


def test_shipped_model_loads_with_the_same_features() -> None:
    model = AgentUtility.load(base=RulePrior())
    assert model.weights.shape == (len(AGENT_FEATURES),) and "rebuild:" in model.trained_on


def test_at_capacity_tool_results_stay_and_chatter_goes() -> None:
    model = AgentUtility.load(base=RulePrior())
    with Memory(encoder=HashingEncoder(64), budget=Budget(capacity=4), utility=model) as mem:
        state = {"phase": "book"}
        for i in range(3):
            mem.add(f"Flight search result {i}: AB12{i} 3 May, {400 + i} EUR", namespace="t", role="tool", state=state)
        for text in ("thanks!", "ok great", "haha cool", "sounds good"):
            mem.add(text, namespace="t", role="user", type="chatter", state=state)
        hot = [r for r in mem.records(namespace="t") if r.tier is not Tier.ARCHIVE]
        assert sum(r.role == "tool" for r in hot) == 3

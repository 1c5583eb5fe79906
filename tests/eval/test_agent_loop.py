"""retain eval agent: the context packed at every probe is scored against the scenario's gold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from retain import HashingEncoder, InvalidInput
from retain.cli.app import app
from retain.eval.agent_loop import run_agent_eval, summarise_context_rows
from retain.eval.scenarios import load_scenario

DOC: dict[str, Any] = {
    "format": "retain-scenario/1",
    "id": "trip-agent-001",
    "events": [
        {"id": "e1", "t": "2026-03-01T09:00:00Z", "role": "user", "text": "The total budget must stay under 5000 EUR.",
         "gold": {"type": "hard_constraint"}},
        {"id": "e2", "t": "2026-03-01T09:01:00Z", "role": "user", "text": "We fly from Lisbon on 3 May.",
         "gold": {"type": "fact"}},
        {"id": "e3", "t": "2026-03-01T09:02:00Z", "role": "user", "text": "ok", "gold": {"type": "chatter"}},
        {"id": "e4", "t": "2026-03-01T09:03:00Z", "role": "user", "text": "No red-eye flights, ever.",
         "gold": {"type": "hard_constraint"}},
        {"id": "e5", "t": "2026-03-01T09:04:00Z", "role": "user",
         "text": "Our spending limit moved: the whole trip can cost up to 6000 EUR.",
         "gold": {"type": "hard_constraint", "supersedes": ["e1"]}},
    ],
    "probes": [
        {"id": "p1", "after": "e2", "query": "when do we fly", "needed": ["e2"], "forbidden": []},
        {"id": "p2", "after": "e5", "query": "ok, continue", "state": {"phase": "book_flight"},
         "needed": ["e2", "e5"], "forbidden": ["e1"]},
    ],
}  # fmt: skip


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "trip.json"
    path.write_text(json.dumps(DOC), encoding="utf-8")
    return path


def test_the_context_of_each_probe_is_scored(scenario_file: Path) -> None:
    sc = load_scenario(scenario_file)
    result = run_agent_eval([sc], HashingEncoder(384), tokens=(1000, 12), progress=False, oracle_supersedes=True)
    assert result["oracle_supersedes"] is True and [r["tokens"] for r in result["runs"]] == [1000, 12]
    roomy, tight = (r["overall"] for r in result["runs"])
    rows = result["runs"][0]["scenarios"][0]["probes"]
    assert [r["constraints"] for r in rows] == [["e1"], ["e4", "e5"]]  # e1 is superseded (gold) at p2
    assert roomy["needed_recall"] == 1.0 and roomy["forbidden_rate"] == 0.0  # the oracle retired e1
    assert roomy["final_coverage"] == 1.0 and roomy["final_all"] == 1.0 and roomy["final_constraints"] == 2
    assert tight["tokens_max"] is not None and tight["tokens_max"] <= 12
    assert tight["final_coverage"] is not None and tight["final_coverage"] < 1.0  # both do not fit in 12 tokens
    assert tight["infeasible_probes"] == 0  # degraded, not failed


def test_without_the_oracle_an_undetected_supersede_is_forbidden_shown(scenario_file: Path) -> None:
    sc = load_scenario(scenario_file)
    run = run_agent_eval([sc], HashingEncoder(384), tokens=(1000,), progress=False)["runs"][0]
    last = run["scenarios"][0]["probes"][-1]
    if "e1" in last["forbidden_shown"]:  # the rules did not link e5 -> e1: the old budget is shown as current
        assert run["overall"]["forbidden_rate"] == 0.5
    else:
        assert run["overall"]["forbidden_rate"] == 0.0


def test_summaries_over_hand_made_rows() -> None:
    rows = [
        {"needed_recall": 1.0, "forbidden_shown": [], "constraints": ["a"], "constraints_in": ["a"], "tokens": 10,
         "infeasible": False},
        {"needed_recall": 0.5, "forbidden_shown": ["x"], "constraints": ["a", "b"], "constraints_in": ["b"],
         "tokens": 30, "infeasible": False},
        {"needed_recall": None, "forbidden_shown": [], "constraints": [], "constraints_in": [], "tokens": 0,
         "infeasible": True},
    ]  # fmt: skip
    got = summarise_context_rows(rows, rows[1:2])
    assert got["needed_recall"] == 0.75 and got["forbidden_rate"] == round(1 / 3, 4)
    assert got["final_coverage"] == 0.5 and got["final_all"] == 0.0 and got["coverage"] == round(2 / 3, 4)
    assert got["tokens_mean"] == 13.3 and got["tokens_max"] == 30 and got["infeasible_probes"] == 1


@pytest.mark.parametrize(("tokens", "capacities"), [((), ()), ((0,), ()), ((100, 100), ()), ((100,), (-1,))])
def test_bad_grids_are_refused(scenario_file: Path, tokens: tuple[int, ...], capacities: tuple[int, ...]) -> None:
    with pytest.raises(InvalidInput):
        run_agent_eval([load_scenario(scenario_file)], HashingEncoder(384), tokens=tokens, capacities=capacities)


def test_cli_eval_agent_prints_and_writes_the_figures(scenario_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "agent.json"
    args = ["eval", "agent", "--data", str(scenario_file), "--tokens", "1000", "--capacity", "3", "--policy", "fifo"]
    result = CliRunner().invoke(app, [*args, "--encoder", "hashing-384", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "Agent loop" in result.output and "needed in ctx" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [(r["capacity"], r["tokens"]) for r in report["runs"]] == [(None, 1000), (3, 1000)]
    bad = CliRunner().invoke(app, ["eval", "agent", "--data", str(scenario_file), "--tokens", "0"])
    assert bad.exit_code != 0

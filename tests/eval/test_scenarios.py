"""Scenario files: the validating loader, the replay, the metrics, budgets and gold-blindness."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from retain import HashingEncoder, InvalidInput
from retain.cli.app import app
from retain.eval.scenario_runner import (
    RETRIEVERS,
    content_retriever,
    get_retriever,
    register_retriever,
    run_scenarios,
    summarise_probes,
)
from retain.eval.scenarios import FORMAT, is_terse, load_scenario, load_scenarios
from retain.retrieval.fusion import Hit

SHARED_SCENARIOS = Path(__file__).resolve().parents[2].parent / "shared" / "scenarios"

FILLER = [
    ("user", "haha nice weather today"),
    ("tool", "Weather: sunny, 21C"),
    ("user", "thanks!"),
    ("agent_action", 'search_hotels(city="Paris")'),
]


def event(i: int, text: str, role: str = "user", gtype: str = "chatter", supersedes: list[str] | None = None):
    return {
        "id": f"e{i}",
        "t": f"2026-03-01T09:{i:02d}:00Z",
        "role": role,
        "text": text,
        "state": {"phase": "plan", "subgoals": ["a", "b"], "constraints": {"n": i}},
        "gold": {"type": gtype, "supersedes": supersedes or []},
    }


def scenario(events: list[dict[str, Any]], probes: list[dict[str, Any]], sid: str = "sc-1") -> dict[str, Any]:
    return {"format": FORMAT, "id": sid, "domain": "test", "language": "en", "events": events, "probes": probes}


def probe(pid: str, after: str, query: str = "ok, continue", needed=(), forbidden=()) -> dict[str, Any]:
    return {
        "id": pid,
        "after": after,
        "query": query,
        "state": {"phase": "book", "last_result": None},
        "needed": list(needed),
        "forbidden": list(forbidden),
    }


def numbered(n: int) -> list[dict[str, Any]]:
    """n events with distinct texts (event ids e1..en)."""
    return [event(i, f"Note number {i}: the {['red', 'blue', 'green'][i % 3]} item {i * 7}.") for i in range(1, n + 1)]


def write(tmp_path: Path, data: dict[str, Any], name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


# --- loader ---------------------------------------------------------------------------------


def test_loader_builds_typed_objects_and_keeps_state(tmp_path):
    data = scenario(numbered(3), [probe("p1", "e2", needed=["e1"], forbidden=["e2"])])
    sc = load_scenario(write(tmp_path, data))
    assert sc.id == "sc-1" and [e.id for e in sc.events] == ["e1", "e2", "e3"]
    assert [e.index for e in sc.events] == [0, 1, 2]
    assert sc.events[1].t.isoformat() == "2026-03-01T09:02:00+00:00"
    assert sc.events[2].state == data["events"][2]["state"]
    assert sc.events[0].gold is not None and sc.events[0].gold.type == "chatter"
    assert sc.probes[0].state == {"phase": "book", "last_result": None}
    assert sc.probes[0].needed == ("e1",) and sc.probes[0].forbidden == ("e2",) and sc.probes[0].terse


def _break(data: dict[str, Any], how: str) -> None:
    ev, pr = data["events"], data["probes"]
    if how == "format":
        data["format"] = "retain-scenario/2"
    elif how == "duplicate":
        ev[2]["id"] = "e1"
    elif how == "after":
        pr[0]["after"] = "e99"
    elif how == "needed":
        pr[0]["needed"] = ["e1", "e42"]
    elif how == "forbidden":
        pr[0]["forbidden"] = ["nope"]
    elif how == "needed_future":
        pr[0]["needed"] = ["e3"]
    elif how == "supersedes":
        ev[1]["gold"]["supersedes"] = ["e77"]
    elif how == "supersedes_later":
        ev[1]["gold"]["supersedes"] = ["e3"]
    elif how == "t":
        ev[1]["t"] = "yesterday at noon"
    elif how == "t_naive":
        ev[1]["t"] = "2026-03-01T09:00:00"
    elif how == "role":
        ev[2]["role"] = "assistant"
    elif how == "gold_type":
        ev[0]["gold"]["type"] = "rumour"


@pytest.mark.parametrize(
    ("how", "where", "says"),
    [
        ("format", "format", "retain-scenario/1"),
        ("duplicate", "events[2].id", "duplicate event id 'e1'"),
        ("after", "probes[0].after", "unknown event 'e99'"),
        ("needed", "probes[0].needed[1]", "unknown event 'e42'"),
        ("forbidden", "probes[0].forbidden[0]", "unknown event 'nope'"),
        ("needed_future", "probes[0].needed[0]", "comes after"),
        ("supersedes", "events[1].gold.supersedes[0]", "unknown event"),
        ("supersedes_later", "events[1].gold.supersedes[0]", "later event"),
        ("t", "events[1].t", "yesterday at noon"),
        ("t_naive", "events[1].t", "naive"),
        ("role", "events[2].role", "'assistant'"),
        ("gold_type", "events[0].gold.type", "'rumour'"),
    ],
)
def test_loader_errors_name_file_and_json_path(tmp_path, how, where, says):
    data = scenario(numbered(3), [probe("p1", "e2", needed=["e1"])])
    _break(data, how)
    path = write(tmp_path, data, name="broken.json")
    with pytest.raises(InvalidInput) as err:
        load_scenario(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {where}: "), message
    assert says in message


def test_loader_refuses_bad_json_missing_folder_and_duplicate_scenario_ids(tmp_path):
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad\.json: not JSON"):
        load_scenario(tmp_path / "bad.json")
    (tmp_path / "latin1.json").write_bytes('{"id": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(InvalidInput, match=r"latin1\.json: not UTF-8"):
        load_scenario(tmp_path / "latin1.json")
    with pytest.raises(InvalidInput, match="no such scenario file or folder"):
        load_scenarios(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidInput, match=r"no \*\.json"):
        load_scenarios(empty)
    twice = tmp_path / "twice"
    twice.mkdir()
    write(twice, scenario(numbered(2), []), "a.json")
    write(twice, scenario(numbered(2), []), "b.json")
    with pytest.raises(InvalidInput, match="already used"):
        load_scenarios(twice)


@pytest.mark.parametrize(
    ("query", "terse"),
    [
        ("ok, continue", True),
        ("OK. Continue!", True),
        ("go ahead", True),
        ("what next?", True),
        ("next step", True),
        ("ok, wrap up", True),
        ("好的继续", True),
        ("下一步呢？", True),
        ("", True),
        ("check the references", False),
        ("can we go to 100% this week?", False),
        ("what's our rate limit with Paylume now?", False),
        ("ok, book the hotel", False),
        ("湖畔云栖那家的房间够不够我们住？", False),
        ("okapi", False),
    ],
)
def test_terse_definition(query, terse):
    assert is_terse(query) is terse


# --- metrics on a hand-built ranking --------------------------------------------------------

HAND_RANKING = ["e7", "e2", "e1", "e8", "e9", "e10", "e11", "e5", "e12", "e3"]


def _hand_retriever(memory, namespace, query, state, k):
    """Ranks the scenario's records in HAND_RANKING order; marks e4 as superseded (not current)."""
    by_event = {r.source.rsplit(":", 1)[1]: r for r in memory.records(namespace=namespace)}
    order = HAND_RANKING if query != "show e4" else ["e4", "e6"]
    hits = []
    for rank, eid in enumerate(order[:k], start=1):
        record = by_event[eid]
        if eid == "e4":
            record = dataclasses.replace(record, superseded_by="someone-else")
        hits.append(Hit(record=record, score=1.0 / rank, rank=rank))
    return hits


@pytest.fixture
def hand_retriever():
    register_retriever("hand", _hand_retriever)
    yield "hand"
    RETRIEVERS.pop("hand", None)


def test_metric_arithmetic_on_a_hand_built_ranking(tmp_path, hand_retriever):
    probes = [
        # needed e2 (rank 2), e5 (rank 8), e6 (absent); forbidden e1 shown current at rank 3
        probe("p1", "e12", "where were we", needed=["e2", "e5", "e6"], forbidden=["e1"]),
        # nothing needed: skipped for recall/MRR, still counted for forbidden (e4 absent here)
        probe("p2", "e12", "ok", needed=[], forbidden=["e4"]),
        # e4 is returned but marked superseded: not "presented as current"; e6 first at rank 2
        probe("p3", "e12", "show e4", needed=["e6"], forbidden=["e4"]),
    ]
    sc = load_scenario(write(tmp_path, scenario(numbered(12), probes)))
    report = run_scenarios([sc], HashingEncoder(64), retrievers=["hand"], progress=False)
    run = report["runs"][0]
    rows = run["scenarios"][0]["probes"]
    assert rows[0]["top10"] == HAND_RANKING
    assert rows[0]["forbidden_shown"] == ["e1"] and rows[2]["forbidden_shown"] == []
    fig = run["overall"]["all"]
    # p1: r@5 = |{e2}|/3, r@10 = |{e2, e5}|/3, RR = 1/2; p3: r@5 = r@10 = 1, RR = 1/2
    assert fig["recall@5"] == round((1 / 3 + 1) / 2, 4)
    assert fig["recall@10"] == round((2 / 3 + 1) / 2, 4)
    assert fig["mrr"] == 0.5
    assert fig["no_needed"] == 1 and fig["probes"] == 3
    assert fig["forbidden_rate"] == round(1 / 3, 4)
    assert run["overall"]["terse"]["probes"] == 1  # only "ok" is terse
    assert run["overall"]["terse"]["recall@5"] is None  # its only probe has nothing needed


def test_history_is_stored_first_and_its_hits_count_as_misses(tmp_path):
    """``history`` records go into the scenario's namespace before its events (positions first), are
    never needed, and a distractor that outranks a needed event pushes it down (a miss at k = 5)."""
    from retain.ingest.draft import NewMemory

    probes = [probe("p1", "e3", "item 21 blue", needed=["e3"])]
    sc = load_scenario(write(tmp_path, scenario(numbered(3), probes)))
    seen: dict[str, Any] = {}

    def spy(memory, namespace, query, state, k):
        seen["records"] = memory.records(namespace=namespace)
        return content_retriever(memory, namespace, query, state, k)

    register_retriever("spy", spy)
    try:
        # ten copies of the needed event's words, each a distinct history record
        history = [NewMemory(content=f"Note number 3: the blue item 21, copy {i}.", role="user") for i in range(10)]
        plain = run_scenarios([sc], HashingEncoder(64), retrievers=["spy"], progress=False)
        crowded = run_scenarios([sc], HashingEncoder(64), retrievers=["spy"], progress=False, history=history)
    finally:
        RETRIEVERS.pop("spy", None)
    records = sorted(seen["records"], key=lambda r: r.seq)
    assert [r.seq for r in records] == list(range(13))  # history 0..9, events 10..12
    assert records[0].content.endswith("copy 0.") and records[10].source == "scenario:sc-1:e1"
    assert plain["runs"][0]["overall"]["all"]["recall@5"] == 1.0
    row = crowded["runs"][0]["scenarios"][0]["probes"][0]
    assert sum(e.startswith("?") for e in row["top10"]) >= 5  # history hits are shown as unknown events
    assert crowded["runs"][0]["overall"]["all"]["recall@5"] == 0.0
    with pytest.raises(InvalidInput, match="history: item 1 is a dict"):
        run_scenarios([sc], HashingEncoder(64), progress=False, history=[history[0], {"content": "x" * 20}])
    with pytest.raises(InvalidInput, match="not with budgets"):
        run_scenarios([sc], HashingEncoder(64), budgets=[3], progress=False, history=history)


def test_summarise_probes_integrity_pairs_and_minimum():
    rows = [
        {"needed": ["a"], "recall@5": 1.0, "recall@10": 1.0, "mrr": 1.0, "forbidden_shown": [], "terse": True,
         "constraints": ["c1", "c2"], "constraints_held": ["c1"]},
        {"needed": ["a"], "recall@5": 0.0, "recall@10": 0.5, "mrr": 0.25, "forbidden_shown": ["x"], "terse": False,
         "constraints": ["c1"], "constraints_held": ["c1"]},
        {"needed": [], "recall@5": None, "recall@10": None, "mrr": None, "forbidden_shown": [], "terse": False,
         "constraints": [], "constraints_held": []},
    ]  # fmt: skip
    fig = summarise_probes(rows)
    assert fig["integrity"] == round(2 / 3, 4)  # 2 of 3 (probe, constraint) pairs held
    assert fig["integrity_min"] == 0.5
    assert fig["recall@10"] == 0.75 and fig["mrr"] == 0.625 and fig["forbidden_rate"] == round(1 / 3, 4)
    assert summarise_probes([])["recall@5"] is None


def test_unknown_retriever_and_bad_names_are_refused():
    with pytest.raises(InvalidInput, match="unknown 'nope'"):
        get_retriever("nope")
    with pytest.raises(InvalidInput, match="without commas"):
        register_retriever("a,b", content_retriever)


# --- budgets and integrity ------------------------------------------------------------------


def _constraint_scenario() -> dict[str, Any]:
    events = [
        event(1, "The total budget must stay under 5000 EUR.", gtype="hard_constraint"),
        # gold says hard constraint, the classifier says chatter: an evictable record
        event(2, "We picked the blue tiles for the floor.", gtype="hard_constraint"),
    ]
    for i, (role, text) in enumerate(FILLER * 2, start=3):
        events.append(event(i, f"{text} ({i})", role=role))
    events.append(event(11, "Actually the budget must stay under 6000 EUR now.", gtype="hard_constraint",
                         supersedes=["e1"]))  # fmt: skip
    probes = [
        probe("p1", "e2", needed=["e1"]),
        probe("p2", "e10", needed=["e1", "e2"]),
        probe("p3", "e11", needed=["e11"], forbidden=["e1"]),
    ]
    return scenario(events, probes, sid="budget-sc")


def test_integrity_under_a_budget_counts_held_gold_constraints(tmp_path):
    sc = load_scenario(write(tmp_path, _constraint_scenario()))
    report = run_scenarios([sc], HashingEncoder(64), budgets=[3], policy="fifo", progress=False)
    full, budgeted = report["runs"]
    assert full["budget"] is None and full["overall"]["all"]["integrity"] == 1.0
    rows = budgeted["scenarios"][0]["probes"]
    # p1: e1 (core) and e2 (dynamic) are both hot
    assert rows[0]["constraints"] == ["e1", "e2"] and rows[0]["constraints_held"] == ["e1", "e2"]
    # p2: fifo has evicted e2 (predicted chatter) to the archive; e1 is core
    assert rows[1]["constraints_held"] == ["e1"]
    # p3: e1 is superseded by gold e11, so only e2 and e11 count; e11 is core, e2 archived
    assert rows[2]["constraints"] == ["e2", "e11"] and rows[2]["constraints_held"] == ["e11"]
    fig = budgeted["overall"]["all"]
    assert fig["integrity"] == round(4 / 6, 4)
    assert fig["integrity_min"] == 0.5


def test_infeasible_budget_is_reported_not_raised(tmp_path):
    data = _constraint_scenario()
    # a second, unrelated hard constraint (no correction: e1 stays mandatory) overflows a budget of 1
    data["events"][-1] |= {
        "text": "Our flights must never leave before 7 am, a hard rule.",
        "gold": {"type": "hard_constraint"},
    }
    data["probes"][-1]["forbidden"] = []
    sc = load_scenario(write(tmp_path, data))
    other = load_scenario(write(tmp_path, scenario(numbered(4), [probe("p1", "e4", needed=["e1"])], "calm"), "b.json"))
    report = run_scenarios([sc, other], HashingEncoder(64), budgets=[1], policy="fifo", progress=False)
    run = report["runs"][1]
    assert run["feasible"] == "1/2"
    assert run["infeasible"] == [{"scenario": "budget-sc", "event": "e11"}]
    bad = run["scenarios"][0]
    assert bad["status"] == "infeasible" and bad["figures"] is None and "e11" not in bad["predicted_types"]
    assert len(bad["probes"]) == 2  # the probes before the failing event are kept for debugging
    assert run["overall"]["all"]["probes"] == 1  # the overall row is over the feasible scenario


# --- gold-blindness -------------------------------------------------------------------------


def _rankings(report: dict[str, Any]) -> list[Any]:
    return [
        (run["budget"], sc["id"], sc["predicted_types"], [row["top10"] for row in sc["probes"]])
        for run in report["runs"]
        for sc in run["scenarios"]
    ]


def test_gold_is_never_shown_to_the_system(tmp_path):
    data = _constraint_scenario()
    data["events"] += [event(12, "I would prefer a window seat.", gtype="soft_preference")]
    data["probes"].append(probe("p4", "e12", "which seat?", needed=["e12"]))
    altered = copy.deepcopy(data)
    types = ["fact", "goal", "sensitive", "reasoning", "observation"]
    for i, ev in enumerate(altered["events"]):
        ev["gold"] = {"type": types[i % len(types)], "supersedes": []}
    stripped = copy.deepcopy(data)
    for ev in stripped["events"]:
        del ev["gold"]
    runs = []
    for name, variant in (("a", data), ("b", altered), ("c", stripped)):
        sc = load_scenario(write(tmp_path, variant, f"{name}.json"))
        runs.append(run_scenarios([sc], HashingEncoder(64), budgets=[3], policy="fifo", progress=False))
    assert _rankings(runs[0]) == _rankings(runs[1]) == _rankings(runs[2])
    # ...while the gold-dependent figures do change, so the comparison is not vacuous
    assert runs[0]["runs"][0]["overall"]["type_accuracy"] != runs[1]["runs"][0]["overall"]["type_accuracy"]
    assert runs[2]["runs"][0]["overall"]["type_accuracy"] is None


# --- CLI ------------------------------------------------------------------------------------


def test_cli_eval_scenarios_writes_figures_and_probe_details(tmp_path, monkeypatch):
    folder = tmp_path / "sc"
    folder.mkdir()
    write(folder, _constraint_scenario())
    monkeypatch.setenv("RETAIN_SCENARIOS", str(folder))
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app,
        ["eval", "scenarios", "--budget", "3,0", "--policy", "fifo", "--encoder", "hashing-64", "--json", str(out)],
    )
    assert result.exit_code == 0, result.output
    assert "infeasible at event e1 " in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [r["budget"] for r in report["runs"]] == [None, 3, 0]
    row = report["runs"][0]["scenarios"][0]["probes"][2]
    assert row["probe"] == "p3" and row["needed"] == ["e11"] and row["forbidden"] == ["e1"]
    assert 0 < len(row["top10"]) <= 10


def test_cli_eval_scenarios_scores_every_data_path_given(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write(first, _constraint_scenario(), "one.json")
    other = _constraint_scenario()
    other["id"] = "constraint-two"
    write(second, other, "two.json")
    out = tmp_path / "out.json"
    args = ["eval", "scenarios", "--data", str(first), "--data", str(second / "two.json")]
    result = CliRunner().invoke(app, [*args, "--encoder", "hashing-64", "--json", str(out)])
    assert result.exit_code == 0, result.output
    scored = [sc["id"] for sc in json.loads(out.read_text(encoding="utf-8"))["runs"][0]["scenarios"]]
    assert sorted(scored) == sorted([_constraint_scenario()["id"], "constraint-two"])
    twice = CliRunner().invoke(
        app, ["eval", "scenarios", "--data", str(first), "--data", str(first), "--encoder", "hashing-64"]
    )
    assert twice.exit_code == 2 and "already used" in twice.output


def test_cli_eval_scenarios_invalid_file_is_a_clear_error(tmp_path):
    data = _constraint_scenario()
    data["format"] = "something-else"
    path = write(tmp_path, data)
    result = CliRunner().invoke(app, ["eval", "scenarios", "--data", str(path), "--encoder", "hashing-64"])
    assert result.exit_code == 2
    assert "format" in result.output and "retain-scenario/1" in result.output


# --- the shared scenarios -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_SCENARIOS.is_dir(), reason="shared scenarios not present")
def test_shared_scenarios_load_and_replay():
    scenarios = load_scenarios(SHARED_SCENARIOS)
    assert len(scenarios) >= 1
    report = run_scenarios(scenarios, HashingEncoder(64), budgets=[10], policy="fifo", progress=False)
    full, budgeted = report["runs"]
    assert report["probes"] == sum(len(s.probes) for s in scenarios) == full["overall"]["all"]["probes"]
    assert report["terse_probes"] == sum(is_terse(p.query) for s in scenarios for p in s.probes) > 0
    assert full["overall"]["all"]["integrity"] == 1.0
    for run in (full, budgeted):
        for sc in run["scenarios"]:
            for row in sc["probes"]:
                assert len(row["top10"]) == len(set(row["top10"])) <= 10
                assert set(row["top10"]) <= {e.id for s in scenarios if s.id == sc["id"] for e in s.events}
    assert 0.0 <= full["overall"]["type_accuracy"] <= 1.0


class _CountingEncoder(HashingEncoder):
    """HashingEncoder(384) that counts every text it embeds (384: the shipped state scorer's width)."""

    def __init__(self) -> None:
        super().__init__(384)
        self.texts: list[str] = []

    def encode(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().encode(texts)


@pytest.mark.skipif(not SHARED_SCENARIOS.is_dir(), reason="shared scenarios not present")
def test_trace_embeds_no_more_than_one_scenario_of_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    """``retain trace`` replays its scenario once: each event and each probe query embedded once,
    no text more often than ``run_scenarios`` embeds it for the same scenario (counted work, not time)."""
    from collections import Counter

    import retain.cli.scenarios

    path = SHARED_SCENARIOS / "travel-valmora-family-001.json"
    sc = load_scenario(path)
    counted = _CountingEncoder()
    monkeypatch.setattr(retain.cli.scenarios, "make_encoder", lambda name: counted)
    result = CliRunner().invoke(app, ["trace", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.count("missed needed:") == len(sc.probes)
    in_eval = _CountingEncoder()
    run_scenarios([sc], in_eval, retrievers=("state",), progress=False)
    traced, evaluated = Counter(counted.texts), Counter(in_eval.texts)
    assert not traced - evaluated, traced - evaluated  # nothing embedded that eval does not, or more often
    assert len(counted.texts) <= len(in_eval.texts)
    assert sum(traced[p.query] for p in sc.probes) <= len(sc.probes)


def test_the_report_counts_supersede_links_against_gold(tmp_path):
    events = [
        event(1, "The total budget must stay under 5000 EUR.", gtype="hard_constraint"),
        event(2, "We fly out of Brennick on Friday.", gtype="fact"),
        event(3, "Actually, the total budget is now 6000 EUR.", gtype="hard_constraint", supersedes=["e1"]),
        event(4, "Correction: we fly out of Brennick on Saturday, not Friday.", gtype="fact", supersedes=["e2"]),
        event(5, "The museum shop sells postcards.", gtype="fact"),
        # a gold link no text supports: the store cannot make it, so it counts as missed
        event(6, "Dinner is at the harbour at eight.", gtype="fact", supersedes=["e5"]),
    ]
    sc = load_scenario(write(tmp_path, scenario(events, [probe("p1", "e6", needed=["e3"], forbidden=["e1"])])))
    report = run_scenarios([sc], HashingEncoder(64), progress=False)
    sup = report["runs"][0]["overall"]["supersede"]
    assert sup == {"true": 2, "false": 0, "missed": 1, "precision": 1.0, "recall": 0.6667, "f1": 0.8}
    assert report["runs"][0]["scenarios"][0]["figures"]["supersede"] == sup


def test_supersede_figures_arithmetic():
    from retain.eval.scenario_runner import supersede_figures

    assert supersede_figures(3, 1, 2) == {
        "true": 3,
        "false": 1,
        "missed": 2,
        "precision": 0.75,
        "recall": 0.6,
        "f1": 0.6667,
    }
    assert supersede_figures(0, 0, 0)["precision"] is None
    assert supersede_figures(0, 2, 0)["f1"] is None
    assert supersede_figures(0, 2, 3)["f1"] == 0.0  # links made, none right: F1 0, not unknown

"""The repository's scenario corpus (scenarios/train, dev, test): every file loads, ids are unique and
name their file, and the files of the split protocol (numbered 3NN and 4NN) sit in the split their id hashes to,
so no file was moved between splits after its gold was seen."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from retain.eval.scenarios import load_scenario

CORPUS = Path(__file__).resolve().parents[2] / "scenarios"
SPLITS = ("train", "dev", "test")
FILES = sorted(p for split in SPLITS for p in (CORPUS / split).glob("*.json"))
HASHED = re.compile(r"-[34]\d\d$")


def split_of(scenario_id: str) -> str:
    """train (60%), dev (20%) or test (20%) by the sha256 of the id: fixed before any gold is read."""
    bucket = int(hashlib.sha256(scenario_id.encode()).hexdigest(), 16) % 10
    return "train" if bucket < 6 else "dev" if bucket < 8 else "test"


def test_split_of_is_the_documented_rule() -> None:
    # ids whose split their authors computed by hand before writing the gold
    assert split_of("pm-staffing-zh-301") == "test"
    assert split_of("coding-api-migration-ja-337") == "dev"
    assert split_of("admin-elterngeld-antrag-de-330") == "train"
    counts = {s: 0 for s in SPLITS}
    for i in range(2000):
        counts[split_of(f"scenario-{i}")] += 1
    assert 0.55 < counts["train"] / 2000 < 0.65 and 0.15 < counts["test"] / 2000 < 0.25


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_corpus_file_loads_and_sits_in_its_split(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.id == path.stem
    if HASHED.search(scenario.id):
        assert path.parent.name == split_of(scenario.id)


def test_ids_are_unique_across_splits() -> None:
    stems = [p.stem for p in FILES]
    assert len(stems) == len(set(stems))

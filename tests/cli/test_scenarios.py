"""The scenario commands (:mod:`retain.cli.scenarios`)."""

import json

from typer.testing import CliRunner

from retain.cli.app import app

runner = CliRunner()


def test_cli_trace_of_a_scenario_without_probes_says_so(tmp_path):
    path = tmp_path / "s.json"
    doc = {
        "format": "retain-scenario/1",
        "id": "no-probes-001",
        "events": [{"id": "e1", "t": "2026-03-01T09:00:00Z", "role": "user", "text": "Budget under 5000 EUR."}],
        "probes": [],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = runner.invoke(app, ["trace", str(path), "--encoder", "hashing-384"])
    assert result.exit_code == 0, result.output
    assert "has no probes" in result.output

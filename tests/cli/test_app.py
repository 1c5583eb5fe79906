import json
import re
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from retain.cli.app import app

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


def _commands(typer_app, prefix=""):
    import typer.main

    group = typer.main.get_command(typer_app)
    out = []
    for name, cmd in group.commands.items():
        full = f"{prefix}{name}"
        if hasattr(cmd, "commands"):
            out += [f"{full} {sub}" for sub in cmd.commands]
        else:
            out.append(full)
    return out


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    monkeypatch.setenv("RETAIN_DB", str(tmp_path / "cli.db"))
    return tmp_path


def test_every_command_has_help_and_is_in_readme():
    readme = README.read_text(encoding="utf-8")
    commands = _commands(app)
    assert {"add", "search", "export", "info", "eval locomo"} <= set(commands)
    for command in commands:
        result = runner.invoke(app, [*command.split(), "--help"])
        assert result.exit_code == 0, command
        assert "Usage" in result.output
        assert re.search(rf"retain {re.escape(command)}\b", readme), f"README lacks 'retain {command}'"


def test_add_search_export_info_round_trip(env):
    added = runner.invoke(app, ["add", "用户喜欢绿茶 🍵", "-n", "alice"])
    assert added.exit_code == 0, added.output
    record_id = added.output.strip()
    again = runner.invoke(app, ["add", "用户喜欢绿茶 🍵", "-n", "alice"])
    assert again.output.strip() == record_id
    found = runner.invoke(app, ["search", "绿茶", "-n", "alice", "--json"])
    assert found.exit_code == 0
    hits = json.loads(found.output)
    assert hits[0]["record"]["id"] == record_id
    exported = runner.invoke(app, ["export", "-n", "alice"])
    assert "用户喜欢绿茶 🍵" in exported.output
    info = json.loads(runner.invoke(app, ["info"]).output)
    assert info["encoder"] == "hashing-64"
    assert info["namespaces"]["alice"]["dynamic"] == 1


def test_add_empty_text_fails_cleanly(env):
    result = runner.invoke(app, ["add", "   ", "-n", "alice"])
    assert result.exit_code == 2
    assert "content" in result.output


def test_eval_locomo_missing_data_is_a_clear_error(env):
    result = runner.invoke(app, ["eval", "locomo", "--data", str(env / "missing.json")])
    assert result.exit_code == 2
    assert "no such file" in result.output


def test_an_unknown_namespace_gets_a_hint_on_stderr(env):
    assert runner.invoke(app, ["add", "The ferry leaves at 07:40.", "-n", "trip-42"]).exit_code == 0
    found = runner.invoke(app, ["search", "ferry", "-n", "trip-4"])
    assert found.exit_code == 0 and "namespace 'trip-4' holds no records" in found.stderr
    assert "trip-42" in found.stderr
    exported = runner.invoke(app, ["export", "-n", "trip-4"])
    assert exported.exit_code == 0 and "holds no records" in exported.stderr
    assert json.loads(exported.stdout)["records"] == []
    known = runner.invoke(app, ["search", "ferry", "-n", "trip-42"])
    assert "holds no records" not in known.stderr


@pytest.mark.parametrize("command", [["add", "The museum opens at nine."], ["add-canary", "Canary 7f3: heron."]])
def test_cli_refuses_a_db_whose_folder_does_not_exist(tmp_path, monkeypatch, command):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    db = tmp_path / "missing" / "x.db"
    result = runner.invoke(app, [*command, "-n", "n", "--db", str(db)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert f"{tmp_path / 'missing'}" in result.output and "does not exist" in result.output
    assert not (tmp_path / "missing").exists()


def test_cli_import_refuses_a_db_whose_folder_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"content": "The museum opens at nine."}\n', encoding="utf-8")
    result = runner.invoke(app, ["import", str(lines), "-n", "n", "--db", str(tmp_path / "missing" / "x.db")])
    assert result.exit_code == 2 and "does not exist" in result.output
    assert not (tmp_path / "missing").exists()


def test_cli_read_command_on_a_missing_folder_names_the_folder_not_add_a_memory_first(tmp_path, monkeypatch):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    result = runner.invoke(app, ["info", "--db", str(tmp_path / "missing" / "x.db")])
    assert result.exit_code == 2
    assert "does not exist" in result.output and "add a memory first" not in result.output


def test_eval_without_the_eval_extra_says_how_to_install_it(monkeypatch):
    import importlib.util

    from typer.testing import CliRunner

    from retain.cli.app import app as root

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tqdm" else real(name, *a))
    result = CliRunner().invoke(root, ["eval", "locomo", "--data", "nowhere.json"])
    assert result.exit_code == 2
    assert "retain eval needs the 'eval' extra (tqdm not installed)" in result.output


def test_db_takes_a_postgres_url(tmp_path, monkeypatch):
    """``--db postgresql://...`` opens the Postgres backend in every command that takes --db (here add,
    search, info); a server that cannot be reached is a clear error naming host and database."""
    psycopg = pytest.importorskip("psycopg")
    from postgres_server import postgres_url

    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    schema = f"cli_{uuid.uuid4().hex[:10]}"
    base = postgres_url()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}%2Cpublic"
    added = runner.invoke(app, ["add", "the venue is the museum", "-n", "team", "--db", url])
    assert added.exit_code == 0, added.output
    found = runner.invoke(app, ["search", "venue", "-n", "team", "--json", "--db", url])
    assert json.loads(found.output)[0]["record"]["id"] == added.output.strip()
    info = json.loads(runner.invoke(app, ["info", "--db", url]).output)
    assert info["namespaces"]["team"]["dynamic"] == 1
    down = runner.invoke(app, ["info", "--db", "postgresql://u:secret@127.0.0.1:1/nodb"])
    assert down.exit_code == 2 and "127.0.0.1" in down.output and "nodb" in down.output
    assert "secret" not in down.output

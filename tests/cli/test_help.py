"""Every ``retain`` command has help text and a section in docs/cli.md, and the examples there parse."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main

from retain.cli.app import app

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
HEADING = re.compile(r"^### `retain ([a-z][a-z0-9 -]*)`$", re.MULTILINE)
EXAMPLE = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def _walk(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(full name, click command) of every command and group under ``command``, in help order."""
    found = [(path, command)] if path else []
    for name, sub in getattr(command, "commands", {}).items():
        found += _walk(sub, (*path, name))
    return found


ROOT = typer.main.get_command(app)
COMMANDS = _walk(ROOT)
NAMES = [" ".join(path) for path, _ in COMMANDS]


def test_the_walk_finds_every_command_and_group():
    wanted = {"add", "search", "import", "audit", "audit verify", "eval", "eval locomo", "eval scenarios"}
    wanted |= {"eval agent", "bench scale", "audit keygen"}
    assert wanted <= set(NAMES)
    assert len(NAMES) == len(set(NAMES)) == 46


@pytest.mark.parametrize("name", NAMES)
def test_every_command_has_help_text(name):
    command = dict(zip(NAMES, (c for _, c in COMMANDS), strict=True))[name]
    assert (command.help or "").strip(), f"retain {name} has no help text"
    for param in command.params:
        assert (getattr(param, "help", None) or "").strip(), f"retain {name}: {param.name} has no help text"


def test_the_root_app_has_help_text():
    assert (ROOT.help or "").strip()


def test_every_command_has_a_section_in_docs_cli():
    documented = HEADING.findall(DOCS.read_text(encoding="utf-8"))
    missing = [name for name in NAMES if name not in documented]
    assert not missing, f"docs/cli.md lacks a '### `retain NAME`' section for {missing}"
    assert sorted(documented) == sorted(NAMES), "docs/cli.md documents a command that does not exist, or twice"


def _examples() -> list[str]:
    lines = []
    for block in EXAMPLE.findall(DOCS.read_text(encoding="utf-8")):
        lines += [line for line in block.splitlines() if line.startswith("retain ")]
    return lines


@pytest.mark.parametrize("line", _examples())
def test_every_example_in_docs_cli_parses(line):
    """Each example names a real command with options it accepts (parsed, not run)."""
    args = shlex.split(line)[1:]
    command: Any = ROOT
    while hasattr(command, "commands") and args and args[0] in command.commands:
        command = command.commands[args.pop(0)]
    assert not hasattr(command, "commands"), f"{line!r} names a group, not a command"
    with command.make_context("retain", args) as ctx:  # raises on an unknown option or a missing argument
        assert ctx.params


def test_every_command_has_an_example():
    examples = _examples()
    leaves = [name for (path, c), name in zip(COMMANDS, NAMES, strict=True) if not hasattr(c, "commands")]
    for name in leaves:
        assert any(re.match(rf"retain {re.escape(name)}( |$)", line) for line in examples), f"no example of {name}"

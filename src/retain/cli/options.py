"""Options shared by the ``retain`` commands, and the parser of ``--state``."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from retain.encoders.basis import DEFAULT_ENCODER
from retain.errors import InvalidInput
from retain.state.agent import STATE_KEYS, AgentState

__all__ = [
    "PANEL_INSPECT",
    "PANEL_MEMORY",
    "PANEL_MODELS",
    "STATE_FILE_LIMIT",
    "DbOption",
    "EncoderOption",
    "NamespaceOption",
    "RawOption",
    "StateOption",
    "parse_state",
]

PANEL_MEMORY = "Memory"
PANEL_INSPECT = "Inspect, audit and share"
PANEL_MODELS = "Models and benchmarks"
"""Headings under which ``retain --help`` groups the commands."""

STATE_FILE_LIMIT = 1 << 20
"""Largest ``--state`` value read (bytes of the file or of the UTF-8 argument): 1 MiB."""

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store file or postgresql:// URL (default $RETAIN_DB or ./retain.db)."),
]
EncoderOption = Annotated[
    str, typer.Option("--encoder", help=f"Encoder: 'minilm' ({DEFAULT_ENCODER}, default) or 'hashing-<dim>' (tests).")
]
NamespaceOption = Annotated[str, typer.Option("--namespace", "-n", help="Namespace (tenant / user / agent).")]
RawOption = Annotated[bool, typer.Option("--raw", help="Show secrets and personal data as stored (no redaction).")]
StateOption = Annotated[
    str | None,
    typer.Option(
        "--state",
        help='Agent state as JSON (\'{"phase": "book_hotel", "subgoals": [...]}\') or @FILE holding it; '
        "drives state-adaptive retrieval.",
    ),
]


def parse_state(value: str | None) -> dict[str, Any] | None:
    """The ``--state`` value as a validated agent-state mapping (None when not given).

    Args:
        value: JSON object text, or ``@path`` to a UTF-8 file holding one (the scenario format's
            ``state``: phase, subgoals, constraints, uncertain / open_questions, last_result, ...).

    Raises:
        InvalidInput: unreadable file, over :data:`STATE_FILE_LIMIT` bytes, not JSON (or nested
            past Python's recursion limit), not an object, or a state
            :class:`~retain.state.agent.AgentState` refuses (the message says which).
    """
    if value is None:
        return None
    text = value
    if value.startswith("@"):
        try:
            with Path(value[1:]).open("rb") as handle:  # bounded: "@/dev/zero" must not fill memory
                raw = handle.read(STATE_FILE_LIMIT + 1)
            if len(raw) > STATE_FILE_LIMIT:
                raise InvalidInput(f"--state: {value[1:]!r} is larger than {STATE_FILE_LIMIT} bytes")
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"--state: cannot read {value[1:]!r} ({exc})") from exc
    elif len(value.encode("utf-8", "surrogatepass")) > STATE_FILE_LIMIT:
        raise InvalidInput(f"--state: the value is larger than {STATE_FILE_LIMIT} bytes")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--state: not valid JSON ({exc.msg} at character {exc.pos})") from exc
    except RecursionError as exc:
        raise InvalidInput("--state: JSON nested too deeply") from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"--state: must be a JSON object, got {type(data).__name__}")
    AgentState.from_dict(data)  # validate now: a clear error at the boundary
    for key in data:
        close = difflib.get_close_matches(str(key), sorted(STATE_KEYS), n=1, cutoff=0.75)
        if key not in STATE_KEYS and close:  # kept as a free-form feature, but likely a typo
            typer.echo(
                f"warning: --state key {key!r} is not a state field (did you mean {close[0]!r}?); "
                "it is kept as a free-form feature",
                err=True,
            )
    return data

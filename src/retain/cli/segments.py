"""The ``retain summarize`` and ``retain compress`` commands: segment summaries and compression
(:mod:`retain.sequence.segments`).

Wired into the main app by ``register(app)`` from :mod:`retain.cli.app`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console

from retain.cli.options import PANEL_MEMORY, DbOption, NamespaceOption
from retain.errors import RetainError

__all__ = ["register"]

_console = Console(width=None if sys.stdout.isatty() else 140)


def register(app: typer.Typer) -> None:
    """Add ``summarize`` and ``compress`` to ``app``."""
    from retain.cli.app import _fail, _open

    @app.command("summarize", rich_help_panel=PANEL_MEMORY)
    def summarize_cmd(
        segment: Annotated[str, typer.Argument(help="Segment (session) id, as given to add.")],
        namespace: NamespaceOption,
        sentences: Annotated[int, typer.Option(help="Most sentences in the summary.")] = 3,
        db: DbOption = None,
    ) -> None:
        """Store an extractive summary of one segment (centroid sentence selection, no LLM); prints its
        id and text. The summary is an index entry: plain search leaves it out until the segment is
        compressed."""
        from retain.sequence.segments import CentroidSummariser

        try:
            with _open(db) as mem:
                rec = mem.summarize(namespace, segment, summariser=CentroidSummariser(max_sentences=sentences))
        except RetainError as exc:
            _fail(exc)
            return
        _console.print(rec.id)
        _console.print(rec.content, markup=False)

    @app.command("compress", rich_help_panel=PANEL_MEMORY)
    def compress_cmd(
        segment: Annotated[str, typer.Argument(help="Segment (session) id, as given to add.")],
        namespace: NamespaceOption,
        actor: Annotated[str, typer.Option(help="Who asks (written to the audit log).")] = "user",
        db: DbOption = None,
    ) -> None:
        """Replace a segment's hot turns by its summary record: the turns move to the archive (linked to
        the summary, audited), the summary counts as one record in the budget. Prints the summary id."""
        try:
            with _open(db) as mem:
                rec = mem.compress_segment(namespace, segment, actor=actor)
        except RetainError as exc:
            _fail(exc)
            return
        moved = len(rec.metadata.get("compressed_ids", []))
        _console.print(f"{rec.id} ({moved} turns archived, {len(rec.metadata.get('kept', []))} kept hot)")

"""The ``retain summarize`` and ``retain compress`` commands: segment summaries and compression
(:mod:`retain.sequence.segments`).

Added to the root app by :func:`register` (called by :mod:`retain.cli.app`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from retain.cli.common import Commands, console, fail, open_memory
from retain.cli.options import PANEL_MEMORY, DbOption, NamespaceOption
from retain.errors import RetainError

__all__ = ["compress_cmd", "register", "summarize_cmd"]

commands = Commands()
register = commands.register
"""Adds ``summarize`` and ``compress`` to ``app``."""

SegmentArgument = Annotated[str, typer.Argument(help="Segment (session) id, as given to add.")]


@commands("summarize", PANEL_MEMORY)
def summarize_cmd(
    segment: SegmentArgument,
    namespace: NamespaceOption,
    sentences: Annotated[int, typer.Option(help="Most sentences in the summary.")] = 3,
    db: DbOption = None,
) -> None:
    """Store an extractive summary of one segment (centroid sentence selection, no LLM); prints its
    id and text. The summary is an index entry: plain search leaves it out until the segment is
    compressed."""
    from retain.sequence.segments import CentroidSummariser

    try:
        with open_memory(db) as mem:
            summariser = CentroidSummariser(max_sentences=sentences)
            # Summariser declares `name` settable, the frozen CentroidSummariser has it read-only
            rec = mem.summarize(namespace, segment, summariser=summariser)  # type: ignore[arg-type]
    except RetainError as exc:
        fail(exc)
    console.print(rec.id)
    console.print(rec.content, markup=False)


@commands("compress", PANEL_MEMORY)
def compress_cmd(
    segment: SegmentArgument,
    namespace: NamespaceOption,
    actor: Annotated[str, typer.Option(help="Who asks (written to the audit log).")] = "user",
    db: DbOption = None,
) -> None:
    """Replace a segment's hot turns by its summary record: the turns move to the archive (linked to
    the summary, audited), the summary counts as one record in the budget. Prints the summary id."""
    try:
        with open_memory(db) as mem:
            rec = mem.compress_segment(namespace, segment, actor=actor)
    except RetainError as exc:
        fail(exc)
    moved = len(rec.metadata.get("compressed_ids", []))
    console.print(f"{rec.id} ({moved} turns archived, {len(rec.metadata.get('kept', []))} kept hot)")

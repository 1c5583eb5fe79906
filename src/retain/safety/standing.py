"""Standing directives in force: the user's instructions and preferences a context carries.

A user record whose text sets a standing instruction ("Always include version numbers when I ask
about libraries") or states a preference ("I prefer minimal dependencies") is marked when written
(``metadata["directive"]``, :func:`retain.text.directives.standing_directive`). Such a record shapes
later answers that do not repeat its words, so a search on the later question rarely finds it.
:func:`standing_records` returns those in force (hot, current: a superseded one is history) for
:func:`retain.safety.context.pack` to carry right after the hard constraints, most relevant to the
query first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from retain.record import MemoryRecord, MemoryType
from retain.safety.canary import is_canary
from retain.store import HOT_TIERS, RecordFilter
from retain.text.directives import DIRECTIVE_KEY

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["STANDING_LIMIT", "standing_records"]

STANDING_LIMIT = 10
"""Most standing directives one context carries (the most relevant to the query)."""


def standing_records(core: Core, namespace: str, query: str, limit: int = STANDING_LIMIT) -> list[MemoryRecord]:
    """The namespace's standing directives in force (hot, current, not a hard constraint, which the
    context carries anyway; no canary), at most ``limit``, ordered by cosine similarity of their
    embedding to the query's (higher first; ties and records without an embedding: newest first).
    An empty query keeps the newest first. Records are returned as stored (the caller redacts)."""
    found = [
        r
        for r in core.store.list_records(namespace, RecordFilter(tiers=HOT_TIERS), order="recent")
        if r.metadata.get(DIRECTIVE_KEY)
        and r.is_current
        and r.type is not MemoryType.HARD_CONSTRAINT
        and not is_canary(r)
    ]
    if len(found) > 1 and query.strip():
        q = core.encoder.encode([query])[0]
        sims = [float(np.dot(q, r.embedding)) if r.embedding is not None else -2.0 for r in found]
        found = [r for _, _, r in sorted(zip(sims, range(len(found)), found, strict=True), key=lambda t: (-t[0], t[1]))]
    return found[:limit]

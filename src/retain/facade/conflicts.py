"""``Memory.conflicts`` and ``Memory.resolve_conflict``: open conflicts surfaced, not hidden
(:mod:`retain.safety.conflicts`)."""

from __future__ import annotations

from retain.errors import InvalidInput
from retain.facade.base import FacadeBase
from retain.record import validate_namespace
from retain.safety import conflicts as open_conflicts
from retain.safety.conflicts import Conflict
from retain.safety.redaction import scrub
from retain.safety.resolution import resolve

__all__ = ["ConflictsMixin"]


class ConflictsMixin(FacadeBase):
    """The open-conflict methods of :class:`~retain.memory.Memory`."""

    def conflicts(self, namespace: str, *, include_resolved: bool = False) -> list[Conflict]:
        """The open conflicts of ``namespace`` (and the resolved ones with ``include_resolved``),
        oldest first: two current records that contradict each other where retain did not retire
        either (a tool or another untrusted actor contradicting a hard constraint, a change the
        conflict model is not confident of, two hard constraints of one call that disagree). Each
        :class:`~retain.safety.conflicts.Conflict` holds both records, the actor, the model's
        probability (0..1, higher = more likely the newer one replaces the older), the signals, the
        reason and a clarifying question (:meth:`~retain.safety.conflicts.Conflict.question`).

        Raises:
            InvalidInput: bad namespace, ``include_resolved`` not a bool.
        """
        validate_namespace(namespace)
        if not isinstance(include_resolved, bool):
            raise InvalidInput(f"include_resolved: must be a bool, got {include_resolved!r}")
        return open_conflicts.list_conflicts(self._core.store, namespace, include_resolved=include_resolved)

    def resolve_conflict(
        self, conflict_id: str, *, namespace: str, keep: str, actor: str = "user", reason: str = ""
    ) -> Conflict:
        """Close an open conflict (its :attr:`~retain.safety.conflicts.Conflict.id`), keeping
        ``keep``: ``"new"`` (the newer record supersedes the older; a superseded hard constraint
        passes its type to the newer record), ``"old"`` or ``"both"``. Audited as
        "resolve_conflict" in the same transaction. Returns the closed conflict.

        Raises:
            InvalidInput: bad namespace, malformed id, unknown ``keep``, conflict not open.
            RecordNotFound: no such conflict in ``namespace``.
            Forbidden: ``keep="new"`` would retire a protected record and ``actor`` is not trusted.
            WriteConflict: another writer changed one of the two records meanwhile; nothing written.
        """
        validate_namespace(namespace)
        if not isinstance(reason, str):
            raise InvalidInput(f"reason: must be a string, got {type(reason).__name__}")
        return resolve(self._core, namespace, conflict_id, keep, actor=actor, reason=scrub(reason))

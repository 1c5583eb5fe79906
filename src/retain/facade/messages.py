"""``Memory.add_messages``: a chat transcript stored in one transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retain.errors import InvalidInput
from retain.facade.base import FacadeBase
from retain.ingest import write
from retain.ingest.messages import messages_to_items
from retain.state.agent import AgentState

__all__ = ["MessagesMixin"]


class MessagesMixin(FacadeBase):
    """Adds :meth:`add_messages` to :class:`~retain.memory.Memory`."""

    def add_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        namespace: str,
        state: AgentState | Mapping[str, Any] | None = None,
        actor: str = "user",
    ) -> list[str]:
        """Store chat messages ``[{"role": ..., "content": ...}, ...]`` (user, assistant, system and
        tool results; the shape of chat frameworks and mem0) in one transaction, one record per
        message, in order; returns one id per message. ``state`` (the agent's task state) is stored
        with each; ``actor`` is the audit actor of the batch. The accepted keys and roles are listed
        in :mod:`retain.ingest.messages`; everything else is refused, never dropped.

        Raises:
            InvalidInput: not a non-empty list of messages, or one message malformed, unknown key,
                non-text part, empty (the message names its index: ``messages[7]``); nothing of
                the batch is stored.
            TextTooLong, BudgetInfeasible, Forbidden, WriteConflict: as :meth:`Memory.add_many`
                (naming ``messages[i]``); nothing of the batch is stored.
        """
        items = messages_to_items(messages, state=state)
        try:
            return write.add_many(self._core, items, namespace=namespace, actor=actor)
        except InvalidInput as exc:  # add_many names items; here they are messages
            message = str(exc)
            if not message.startswith("item "):
                raise
            raise exc.__class__("messages[" + message.removeprefix("item ").replace(":", "]:", 1)) from exc

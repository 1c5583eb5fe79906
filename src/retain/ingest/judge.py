"""An optional LLM judge for conflict decisions over any OpenAI-compatible chat endpoint.

:class:`OpenAIJudge` implements :class:`~retain.ingest.conflict.ConflictJudge`: for each update
(or paraphrase) retain proposes, it asks the configured model whether the newer statement replaces
the older one and vetoes the proposal on a "no". Off by default: nothing is sent anywhere unless a
caller builds one with an endpoint and passes it as ``MemoryConfig(conflict_judge=...)``. The two
texts are sent with secrets and personal data scrubbed (:func:`retain.safety.redaction.scrub`).

A judge that cannot answer (timeout, connection refused, HTTP error, a body that is not the
chat-completions JSON, an answer that is neither yes nor no) leaves retain's own decision as it is:
the failure is logged (logger ``retain.judge``, the error's kind, never the texts) and counted in
:attr:`OpenAIJudge.failures`. Standard library only (``urllib``).
"""

from __future__ import annotations

import json
import logging
import re
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from retain.errors import InvalidInput
from retain.ingest.conflict import Relation
from retain.record import MemoryRecord
from retain.safety.redaction import scrub

__all__ = ["OpenAIJudge"]

_log = logging.getLogger("retain.judge")
_YES = re.compile(r"^\W*(yes|true|replaces|update)\b", re.IGNORECASE)
_NO = re.compile(r"^\W*(no|false|keep|different)\b", re.IGNORECASE)
_PROMPT = (
    "You check a memory store for an AI agent. The OLDER statement was recorded first, the NEWER one "
    "later. Answer with one word, yes or no: does the NEWER statement {question}?\n\n"
    "OLDER ({old_role}): {old}\nNEWER ({new_role}): {new}"
)
_QUESTIONS = {
    Relation.UPDATE: "replace or correct the OLDER one, so that the OLDER one is no longer current",
    Relation.PARAPHRASE: "say the same thing as the OLDER one, with nothing changed",
}


@dataclass
class OpenAIJudge:
    """A :class:`~retain.ingest.conflict.ConflictJudge` asking a chat model (OpenAI-compatible
    ``POST {base_url}/chat/completions``).

    Args:
        base_url: the API root, e.g. ``"http://127.0.0.1:8000/v1"`` (http or https).
        model: the model name the endpoint expects.
        api_key: sent as ``Authorization: Bearer ...`` when given.
        timeout: seconds to wait for an answer (> 0); past it the decision stands.

    Attributes:
        failures: how many questions got no usable answer (each logged).

    Raises:
        InvalidInput: ``base_url`` not http(s), empty ``model``, ``timeout`` not a positive number.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 10.0
    failures: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.base_url, str) or not re.match(r"^https?://", self.base_url):
            raise InvalidInput(f"base_url: an http(s) URL, got {self.base_url!r}")
        if not isinstance(self.model, str) or not self.model.strip():
            raise InvalidInput("model: a non-empty model name")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, int | float) or not self.timeout > 0:
            raise InvalidInput(f"timeout: a number of seconds > 0, got {self.timeout!r}")

    def confirm(self, new: MemoryRecord, old: MemoryRecord, relation: Relation) -> bool:
        """True to accept ``relation`` between ``new`` and ``old`` (the model said yes, or gave no
        usable answer); False when the model said no. Never raises."""
        question = _QUESTIONS.get(relation)
        if question is None:
            return True
        prompt = _PROMPT.format(
            question=question, old_role=old.role, old=scrub(old.content), new_role=new.role, new=scrub(new.content)
        )
        try:
            answer = self._ask(prompt)
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:  # URLError, timeouts, bad JSON
            return self._failed(type(exc).__name__)
        if _YES.match(answer):
            return True
        if _NO.match(answer):
            return False
        return self._failed("unreadable answer")

    def _ask(self, prompt: str) -> str:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": 3,
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            self.base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers=headers,
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            data: Any = json.loads(response.read().decode("utf-8"))
        content = data["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("content is not a string")
        return content

    def _failed(self, kind: str) -> bool:
        self.failures += 1
        _log.warning("conflict judge gave no usable answer (%s); the decision stands", kind)
        return True

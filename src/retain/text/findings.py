"""A sensitive span found in a text, and the placeholder that replaces it.

:mod:`retain.text.privacy` runs the detectors (:mod:`retain.text.identifiers`, :mod:`retain.text.phones`,
:mod:`retain.text.credentials`); each yields :class:`Finding` objects with character offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "PLACEHOLDERS",
    "Detector",
    "Finding",
]

PLACEHOLDERS: Mapping[str, str] = MappingProxyType(
    {
        "email": "[EMAIL]",
        "phone": "[PHONE]",
        "card": "[CARD]",
        "cvv": "[CVV]",
        "iban": "[IBAN]",
        "national_id": "[NATIONAL_ID]",
        "passport": "[PASSPORT]",
        "ip": "[IP]",
        "api_key": "[API_KEY]",
        "private_key": "[PRIVATE_KEY]",
        "password": "[PASSWORD]",
        "username": "[USERNAME]",
        "secret": "[SECRET]",
        "address": "[ADDRESS]",
    }
)
"""Placeholder for each kind; an unknown kind becomes ``[KIND]`` (upper-cased)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected span.

    Attributes:
        kind: what it is: a key of :data:`PLACEHOLDERS` ("email", "phone", "card", ...).
        start: first character, a ``str`` index (code points, not bytes).
        end: one past the last character; ``text[start:end]`` is the sensitive value.
        detector: the library and plugin or rule that found it, e.g. ``"stdnum.luhn"``,
            ``"phonenumbers"``, ``"detect_secrets.GitHubTokenDetector"``, ``"prefix:npm"``.
    """

    kind: str
    start: int
    end: int
    detector: str

    @property
    def placeholder(self) -> str:
        """The text that replaces this span in :func:`retain.text.privacy.redact`, e.g. ``"[EMAIL]"``."""
        return PLACEHOLDERS.get(self.kind, f"[{self.kind.upper()}]")


Detector = Callable[[str], Iterator[Finding]]
"""A detector: every span of one family of kinds in a text (overlaps allowed; the caller resolves them)."""

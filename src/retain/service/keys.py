"""API keys of the REST service: a JSON file of key hashes, each mapped to a principal.

A key is ``rk_<id>_<secret>``: ``id`` (12 hex characters) names its entry, ``secret`` (43
characters, 256 random bits from :mod:`secrets`) is shown once, when the key is made, and never
stored: the file keeps ``sha256(secret)`` only and a presented key is checked with a constant-time
comparison. Each entry maps the key to a :class:`~retain.safety.access.Principal`: a tenant, an
actor name (the audit actor of the key's calls) and its grants (a role per namespace prefix).
Revoking a key marks its entry (``revoked_at``); a revoked key is refused like an unknown one.

The file (default ``<db>.keys.json`` next to the store) is written whole to a temporary file and
renamed over the old one, under an exclusive lock of ``<file>.lock``, so concurrent ``retain keys``
commands never lose an entry and a running server never reads half a file; servers reload it when
its modification time or size changes, so a new or revoked key takes effect on the next request.
Stdlib only: the CLI manages keys without the ``server`` extra.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retain.errors import InvalidInput, RecordNotFound, Unauthorized
from retain.safety.access import Grant, Principal

__all__ = ["KEY_PREFIX", "ApiKey", "KeyStore", "default_keys_path"]

KEY_PREFIX = "rk_"
"""Every key starts with it (so a leaked key is recognisable in logs and secret scanners)."""

_FORMAT = 1


def default_keys_path(db: str | Path) -> Path:
    """The keys file of the store ``db``: ``<db>.keys.json`` beside it."""
    return Path(f"{db}.keys.json")


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One entry of the keys file (never the key itself).

    Attributes:
        id: 12 hex characters, the public part of the key.
        tenant, actor, grants: the principal the key stands for.
        created_at, revoked_at: ISO 8601 UTC; ``revoked_at`` None while the key is valid.
        digest: sha256 hex of the secret part.
    """

    id: str
    tenant: str
    actor: str
    grants: tuple[Grant, ...]
    created_at: str
    revoked_at: str | None
    digest: str

    @property
    def principal(self) -> Principal:
        """The :class:`~retain.safety.access.Principal` the key stands for."""
        return Principal(self.actor, grants=self.grants, tenant=self.tenant)

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored (the digest included, the key never)."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "actor": self.actor,
            "grants": [g.to_dict() for g in self.grants],
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
            "digest": self.digest,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ApiKey:
        """An entry read back from the file."""
        return cls(
            id=str(data["id"]),
            tenant=str(data["tenant"]),
            actor=str(data["actor"]),
            grants=tuple(Grant(g["prefix"], g["role"]) for g in data["grants"]),
            created_at=str(data["created_at"]),
            revoked_at=data.get("revoked_at"),
            digest=str(data["digest"]),
        )


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class KeyStore:
    """The keys file at ``path`` (created by the first :meth:`add`).

    Raises:
        InvalidInput: (from the methods) the file is not a keys file of this format.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._keys: dict[str, ApiKey] = {}

    # --- reading ------------------------------------------------------------------------------

    def _read(self) -> dict[str, ApiKey]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
            if data.get("format") != _FORMAT:
                raise ValueError(f"format {data.get('format')!r}")
            return {k["id"]: ApiKey.from_dict(k) for k in data["keys"]}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InvalidInput(f"keys file {self.path}: not a retain keys file ({exc})") from exc

    def _current(self) -> dict[str, ApiKey]:
        """The entries, re-read when the file's modification time or size changed."""
        try:
            st = self.path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._keys = self._read() if stamp is not None else {}
                self._stamp = stamp
            return self._keys

    def list(self) -> list[ApiKey]:
        """Every entry, revoked ones included, oldest first."""
        return sorted(self._current().values(), key=lambda k: (k.created_at, k.id))

    def authenticate(self, key: str | None) -> Principal:
        """The principal of a valid key.

        Raises:
            Unauthorized: no key, a malformed or unknown key, a wrong secret or a revoked key (the
                message says which, never echoing the key).
        """
        if not key:
            raise Unauthorized("no API key: send 'Authorization: Bearer <key>'")
        parts = key.split("_")
        if len(parts) != 3 or f"{parts[0]}_" != KEY_PREFIX:
            raise Unauthorized("malformed API key")
        entry = self._current().get(parts[1])
        # compare against a digest even for an unknown id, so timing does not tell ids apart
        expected = entry.digest if entry is not None else _digest("")
        if not hmac.compare_digest(_digest(parts[2]), expected) or entry is None:
            raise Unauthorized("unknown API key")
        if entry.revoked_at is not None:
            raise Unauthorized(f"API key {entry.id} was revoked at {entry.revoked_at}")
        return entry.principal

    # --- writing ------------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[dict[str, ApiKey]]:
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            keys = self._read()
            yield keys
            body = {"format": _FORMAT, "keys": [k.to_dict() for k in sorted(keys.values(), key=lambda k: k.created_at)]}
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(body, indent=1) + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)

    def add(self, *, tenant: str, actor: str | None = None, grants: Sequence[Grant]) -> tuple[str, ApiKey]:
        """Make a key for ``tenant`` with ``grants``; returns ``(key, entry)``. The key is shown only
        here: the file keeps its hash. ``actor`` defaults to ``"key:<id>"``.

        Raises:
            InvalidInput: a bad tenant or actor name, or no grant.
        """
        if not grants:
            raise InvalidInput("grants: at least one (a namespace prefix and a role)")
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32).replace("_", "-")
        name = actor or f"key:{key_id}"
        Principal(name, grants=tuple(grants), tenant=tenant)  # validates the tenant, actor and grants
        entry = ApiKey(
            id=key_id,
            tenant=tenant,
            actor=name,
            grants=tuple(grants),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            revoked_at=None,
            digest=_digest(secret),
        )
        with self._locked() as keys:
            keys[key_id] = entry
        return f"{KEY_PREFIX}{key_id}_{secret}", entry

    def revoke(self, key_id: str) -> ApiKey:
        """Mark the key ``key_id`` (its id, or the whole key) revoked; returns its entry.

        Raises:
            RecordNotFound: no key with that id.
        """
        wanted = key_id.split("_")[1] if key_id.startswith(KEY_PREFIX) and key_id.count("_") == 2 else key_id
        with self._locked() as keys:
            entry = keys.get(wanted)
            if entry is None:
                raise RecordNotFound(f"no API key with id {wanted!r} in {self.path}")
            if entry.revoked_at is None:
                entry = replace(entry, revoked_at=datetime.now(UTC).isoformat(timespec="seconds"))
                keys[wanted] = entry
        return entry

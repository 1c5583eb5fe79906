"""The keyed audit chain: its key file, and what a verification with or without the key finds.

An unkeyed chain (sha256, :func:`~retain.store.audit_hash`) shows that the log is consistent, but
anyone with write access to the database can compute sha256: a row appended at the end, or a row
rewritten together with every row after it, verifies. A keyed chain stores
``hmac-sha256:<HMAC-SHA256(key, prev_hash + entry)>`` (:data:`~retain.store.KEYED_PREFIX`) under a
key the user keeps outside the database (:class:`~retain.config.MemoryConfig` ``audit_key``): only a
holder of the key can write a row that verifies, so forged appends and rewrites are found.

:func:`chain_modes` checks how the keyed and unkeyed rows of one log are arranged:

* with the key: unkeyed rows are accepted only as a prefix written before the key was set (each
  keyed row's MAC covers the hash of the row before it, so the first keyed row anchors that prefix);
  an unkeyed row after a keyed one was written without the key (forged); a log that holds entries
  but no keyed row authenticates nothing and fails;
* without the key: keyed rows cannot be checked (their links and sequence numbers still are), and
  the report fails saying so, rather than passing rows it could not check.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from retain.errors import InvalidInput
from retain.store import KEYED_PREFIX, check_key

__all__ = ["KEY_BYTES", "chain_modes", "is_keyed", "read_key_file", "write_key_file"]

KEY_BYTES = 32
"""Length of a key made by :func:`write_key_file` (256 bits)."""


def is_keyed(stored_hash: object) -> bool:
    """True when a stored ``hash`` is an HMAC of the keyed chain."""
    return isinstance(stored_hash, str) and stored_hash.startswith(KEYED_PREFIX)


def read_key_file(path: str | Path) -> bytes:
    """The audit key held in the file at ``path``: 64 hex characters (as :func:`write_key_file`
    writes them; surrounding whitespace ignored), else the file's raw bytes (>= 16).

    Raises:
        InvalidInput: the file cannot be read, or holds fewer than 16 bytes of key.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"audit key file {str(path)!r}: cannot be read ({exc.strerror or exc})") from exc
    text = raw.strip()
    try:
        key = bytes.fromhex(text.decode("ascii")) if len(text) == 2 * KEY_BYTES else raw
    except (UnicodeDecodeError, ValueError):
        key = raw
    return check_key(key)


def write_key_file(path: str | Path) -> bytes:
    """Make a random 256-bit key, write it to ``path`` as 64 hex characters (mode 0600; an
    existing file is never overwritten) and return it.

    Raises:
        InvalidInput: ``path`` exists or cannot be created.
    """
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as exc:
        raise InvalidInput(f"audit key file {str(path)!r}: exists already (not overwritten)") from exc
    except OSError as exc:
        raise InvalidInput(f"audit key file {str(path)!r}: cannot be created ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "w") as out:
        out.write(key.hex() + "\n")
    return key


def chain_modes(hashes: Sequence[object], names: Sequence[str], *, keyed_verify: bool) -> list[tuple[int, str]]:
    """Findings about the arrangement of keyed and unkeyed rows, as (position, message).

    Args:
        hashes: the stored ``hash`` of every entry, in stored order.
        names: how each entry is named in a message ("entry 12").
        keyed_verify: the verification holds the key (each keyed row's MAC is checked elsewhere).
    """
    keyed = [p for p, h in enumerate(hashes) if is_keyed(h)]
    if not keyed_verify:
        if not keyed:
            return []
        return [
            (
                keyed[0],
                f"{len(keyed)} entries from {names[keyed[0]]} on are keyed (HMAC-SHA256): "
                "their hashes can be checked only with the key (--key-file)",
            )
        ]
    if not hashes:
        return []
    if not keyed:
        return [(0, f"no entry is keyed: none of the {len(hashes)} entries is authenticated by the key")]
    return [
        (p, f"{names[p]}: not keyed, after keyed {names[keyed[0]]} (written without the key: forged)")
        for p in range(keyed[0] + 1, len(hashes))
        if not is_keyed(hashes[p])
    ]

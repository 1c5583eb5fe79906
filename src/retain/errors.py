"""Errors raised by retain.

Every error derives from :class:`RetainError` and, where one fits, from the builtin it resembles,
so callers can catch either::

    RetainError
    ├── InvalidInput (ValueError)          bad argument at the public boundary; nothing was written
    │   ├── TextTooLong (ValueError)       text over the configured limit when splitting is off
    │   ├── WriteConflict (ValueError)     a guarded batch found a record changed since it was read; nothing written
    │   │   └── DuplicateContent           a batch guarded by RequireUnique met a current copy; nothing written
    │   └── PayloadTooLarge (ValueError)   a request body over the service's size limit; not read, nothing written
    ├── RecordNotFound (KeyError)          no record with that id in that namespace
    ├── EncoderMismatch (ValueError)       store was built with another encoder (name or dimension)
    ├── SchemaError (RuntimeError)         store schema is newer than this library, or not set up
    ├── StoreUnavailable (ConnectionError) a server-backed store cannot be reached (the message names host and database)
    ├── BudgetInfeasible (ValueError)      mandatory items do not fit in the budget
    ├── Forbidden (PermissionError)        an untrusted actor asked to change a protected record, or a
    │                                      principal lacks the role a namespace needs (retain.safety.access)
    ├── Unauthorized (PermissionError)     no credentials, or an unknown or revoked API key (retain serve)
    ├── InvalidUtility (ValueError)        a utility model returned NaN / inf / out-of-range scores
    └── DatasetUnavailable (FileNotFoundError)  evaluation data not on disk and not downloadable
"""

from __future__ import annotations


class RetainError(Exception):
    """Root of every error raised by retain."""


class InvalidInput(RetainError, ValueError):
    """An argument failed validation at the public boundary. Nothing was written."""


class TextTooLong(InvalidInput):
    """A text exceeds the configured maximum length and splitting is disabled."""


class WriteConflict(InvalidInput):
    """A batch guarded by :class:`~retain.store.RequireUnchanged` (or
    :class:`~retain.store.RequireUnique`) found that what the caller read before writing no
    longer holds: another connection or process deleted, superseded or moved a record since. The
    whole batch rolled back: nothing was written; reading again and retrying is safe for the store
    (an operation with effects outside it, such as ``Memory.feedback``'s step of the in-process
    utility model, says so in its docstring).
    """


class DuplicateContent(WriteConflict):
    """A batch guarded by :class:`~retain.store.RequireUnique` found a current record with the
    same content (and role, segment, position) already in the namespace, written by another
    connection since the caller looked. The whole batch rolled back: nothing was written.

    Attributes:
        existing_id: the id of that current record (the one a duplicate lookup now returns), or
            None when not known.
    """

    def __init__(self, message: str, existing_id: str | None = None) -> None:
        super().__init__(message)
        self.existing_id = existing_id


class RecordNotFound(RetainError, KeyError):
    """No record with the given id exists in the given namespace."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "record not found"


class EncoderMismatch(RetainError, ValueError):
    """The store's vectors were made by a different encoder than the one given at open."""


class SchemaError(RetainError, RuntimeError):
    """The on-disk schema is unknown to this version of retain, or `setup()` was not run."""


class StoreUnavailable(RetainError, ConnectionError):
    """A server-backed store (Postgres) cannot be reached, refused the login, or lost the connection
    during a batch that writes (which may or may not have committed). The message names the host and
    database, never a password."""


class BudgetInfeasible(RetainError, ValueError):
    """The mandatory records alone exceed the budget; nothing was evicted or dropped."""


class Forbidden(RetainError, PermissionError):
    """An untrusted actor (tool output, retrieved document, the agent) asked to remove or change a
    protected record (a current hard constraint, or a pinned record), or a
    :class:`~retain.safety.access.Principal` asked for an operation its role on the namespace does
    not allow (another tenant's namespace included). Nothing was read or changed; the refusal is in
    the audit log."""


class Unauthorized(RetainError, PermissionError):
    """A request to the REST service (``retain serve``) carried no API key, or one that is unknown
    or revoked. Nothing was read or written; the refusal is in the audit log."""


class PayloadTooLarge(InvalidInput):
    """A request body is over the REST service's size limit (bytes); it was refused before being
    read in full or parsed, and nothing was written."""


class InvalidUtility(RetainError, ValueError):
    """A utility model produced scores that are NaN, infinite or outside [0, 1]."""


class DatasetUnavailable(RetainError, FileNotFoundError):
    """An evaluation data set is neither on disk nor downloadable."""

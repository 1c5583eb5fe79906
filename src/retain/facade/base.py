"""The base every :class:`~retain.memory.Memory` mixin derives from, and the one boundary where
caller-supplied identifiers are normalised.

Every public method of a :class:`FacadeBase` subclass (``Memory`` and its mixins) is wrapped when the
class is created: before the method runs, its ``namespace`` and ``actor`` arguments are replaced by
their canonical form (:func:`retain.record.validate_namespace`, :func:`retain.record.validate_actor`:
NFC, refused when not a clean string). So the write path, the search path, the logs and the audit
chain only ever see, store and hash the canonical string, and a number, None, bytes or an object given
as an identifier raises :class:`~retain.errors.InvalidInput` before anything is logged or written.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from retain.record import validate_actor, validate_id, validate_namespace, validate_reason

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["IDENTIFIERS", "FacadeBase", "normalised_call"]

IDENTIFIERS: dict[str, Callable[[object], str]] = {
    "namespace": validate_namespace,
    "actor": validate_actor,
    "id": validate_id,
    "src": lambda value: validate_id(value, "src"),
    "dst": lambda value: validate_id(value, "dst"),
    "provenance_id": lambda value: validate_id(value, "provenance_id"),
    "reason": validate_reason,
}
"""The caller-supplied identifiers checked at the boundary: parameter name -> normaliser (namespaces
and actors are NFC-normalised; record ids are checked, not changed)."""


def normalised_call(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` wrapped so that its :data:`IDENTIFIERS` arguments are normalised before it runs.

    A ``namespace`` whose default is None may be given as None (meaning "every namespace"); any
    other value must pass its normaliser. ``func``'s signature is kept (``inspect.signature``
    follows ``__wrapped__``).

    Raises:
        InvalidInput: an identifier argument is not a clean string (see the normalisers).
    """
    signature = inspect.signature(func)
    names = [name for name in IDENTIFIERS if name in signature.parameters]
    if not names:
        return func
    optional = {name for name in names if signature.parameters[name].default is None}

    @functools.wraps(func)
    def inner(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return func(*args, **kwargs)  # the call's own TypeError, as Python raises it
        for name in names:
            if name in bound.arguments:
                value = bound.arguments[name]
                if value is None and name in optional:
                    continue
                bound.arguments[name] = IDENTIFIERS[name](value)
        return func(*bound.args, **bound.kwargs)

    return inner


class FacadeBase:
    """Declares the one attribute a facade mixin may use: ``_core``, the
    :class:`~retain.core.Core` the :class:`~retain.memory.Memory` delegates to; and normalises the
    identifiers of every public method a subclass defines (:func:`normalised_call`)."""

    _core: Core

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if name.startswith("_"):
                continue
            if isinstance(value, classmethod | staticmethod):
                continue
            if inspect.isfunction(value):
                setattr(cls, name, normalised_call(value))

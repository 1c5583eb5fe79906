"""The base every :class:`~retain.memory.Memory` mixin derives from."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["FacadeBase"]


class FacadeBase:
    """Declares the one attribute a facade mixin may use: ``_core``, the
    :class:`~retain.core.Core` the :class:`~retain.memory.Memory` delegates to."""

    _core: Core

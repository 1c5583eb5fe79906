"""Groups of :class:`~retain.memory.Memory` methods kept out of ``memory.py``.

Each module holds one mixin class of thin public methods (validate, delegate to a function over the
core, return) for one feature; ``Memory`` inherits them. They reach the core only through
``self._core`` (declared on :class:`~retain.facade.base.FacadeBase`).
"""

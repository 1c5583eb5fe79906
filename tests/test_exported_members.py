import importlib
import inspect
import typing

import pytest

import retain
from retain.core import Core
from retain.memory import _FromCore


def test_all_is_sorted_and_complete():
    assert retain.__all__ == sorted(retain.__all__)
    for name in retain.__all__:
        assert hasattr(retain, name), name


def test_public_classes_are_exported_once():
    assert len(set(retain.__all__)) == len(retain.__all__)


def _retain_types(annotation: object) -> set[type]:
    """The classes defined in retain that ``annotation`` names (unions and generics walked)."""
    found: set[type] = set()
    origin = typing.get_origin(annotation)
    for inner in typing.get_args(annotation):
        found |= _retain_types(inner)
    target = origin if origin is not None else annotation
    if isinstance(target, type) and target.__module__.split(".")[0] == "retain":
        found.add(target)
    return found


def _core_attribute_type(name: str) -> object:
    """The type of the :class:`~retain.core.Core` attribute ``name`` (a property's return type, else
    the type of the ``__init__`` parameter it is set from)."""
    namespace = {**vars(importlib.import_module("retain.memory")), **vars(importlib.import_module("retain.core"))}
    attr = inspect.getattr_static(Core, name, None)
    if isinstance(attr, property):
        return typing.get_type_hints(attr.fget, namespace)["return"]
    return typing.get_type_hints(Core.__init__, namespace)[name]


def test_memory_attributes_from_the_core_are_read_only():
    mem = retain.Memory(encoder=retain.HashingEncoder(dim=16), state_scorer=False)
    try:
        delegated = [n for n, m in inspect.getmembers(retain.Memory) if isinstance(m, _FromCore)]
        assert {"store", "encoder", "config", "budget", "state_encoder"} <= set(delegated)
        for name in delegated:
            assert getattr(retain.Memory, name).__doc__, name
            with pytest.raises(AttributeError, match="no setter"):
                setattr(mem, name, None)
            with pytest.raises(AttributeError, match="no deleter"):
                delattr(mem, name)
        assert mem.store is mem.core.store and mem.config is mem.core.config
    finally:
        mem.close()


def test_every_type_in_a_public_signature_of_memory_is_exported():
    namespace = vars(importlib.import_module("retain.memory"))
    missing: dict[str, set[str]] = {}
    checked = 0
    for name, member in inspect.getmembers(retain.Memory):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, _FromCore):  # a read-only attribute delegating to the core
            hints = {"return": _core_attribute_type(name)}
        else:
            func = member.fget if isinstance(member, property) else member
            if not callable(func):
                continue
            # a mixin's method (retain.facade) resolves its annotations in its own module
            hints = typing.get_type_hints(func, {**namespace, **getattr(func, "__globals__", {})})
        for annotation in hints.values():
            for cls in _retain_types(annotation):
                checked += 1
                if cls.__name__ not in retain.__all__ or getattr(retain, cls.__name__) is not cls:
                    missing.setdefault(cls.__name__, set()).add(name)
    assert checked > 20  # the annotations were resolved and walked
    assert not missing, f"types in Memory's signatures not exported from retain: {missing}"


def test_memory_methods_keep_the_signatures_of_the_functions_they_delegate_to():
    """The facade spells out its typed public signatures; the functions behind it take the same
    parameters after ``core`` (names, kinds, defaults, annotations), so the two cannot drift."""
    from retain.ingest import write

    delegates = {
        "update": write.update,
        "delete": write.delete,
        "feedback": write.feedback,
        "add_many": write.add_many,
    }
    for name, delegate in delegates.items():
        facade = list(inspect.signature(getattr(retain.Memory, name)).parameters.values())[1:]
        behind = list(inspect.signature(delegate).parameters.values())[1:]
        assert facade == behind, name


def test_every_type_in_the_fields_of_an_exported_dataclass_is_exported():
    import dataclasses

    missing: dict[str, set[str]] = {}
    checked = 0
    for name in retain.__all__:
        cls = getattr(retain, name)
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            continue
        module = vars(importlib.import_module(cls.__module__))
        for field, annotation in typing.get_type_hints(cls, module).items():
            for inner in _retain_types(annotation):
                checked += 1
                if inner.__name__ not in retain.__all__ or getattr(retain, inner.__name__) is not inner:
                    missing.setdefault(inner.__name__, set()).add(f"{name}.{field}")
    assert checked > 5  # the config classes' fields were resolved and walked
    assert not missing, f"types in exported dataclasses' fields not exported from retain: {missing}"


def test_memory_search_takes_the_options_of_search_request():
    """``Memory.search`` spells out its typed options; :class:`SearchRequest` holds the same ones
    (names, order, defaults, annotations), keyword-only, so the two cannot drift."""
    import dataclasses

    from retain.retrieval.search import SearchRequest

    facade = list(inspect.signature(retain.Memory.search).parameters.values())
    assert [p.name for p in facade[:3]] == ["self", "query", "namespace"]
    options = facade[3:]
    fields = dataclasses.fields(SearchRequest)
    assert len(fields) > 10
    assert [p.name for p in options] == [f.name for f in fields]
    for param, field in zip(options, fields, strict=True):
        assert param.kind is inspect.Parameter.KEYWORD_ONLY, param.name
        assert param.default == field.default, param.name
        assert param.annotation == field.type, param.name

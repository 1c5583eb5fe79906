"""The storage contract's value types (:mod:`retain.store.base`): a :class:`RecordFilter` refuses
values it cannot mean, naming the field."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from retain import InvalidInput
from retain.store import RecordFilter

INVALID = {
    "seqs negative": ({"seqs": (-1,)}, "seqs"),
    "seqs float": ({"seqs": (1.5,)}, "seqs"),
    "seqs whole float": ({"seqs": (1.0,)}, "seqs"),
    "seqs string": ({"seqs": ("1",)}, "seqs"),
    "seqs None item": ({"seqs": (None,)}, "seqs"),
    "seqs bool": ({"seqs": (True,)}, "seqs"),
    "seqs nan": ({"seqs": (float("nan"),)}, "seqs"),
    "seqs too large": ({"seqs": (2**63,)}, "seqs"),
    "seqs an int": ({"seqs": 1}, "seqs"),
    "seqs nested": ({"seqs": ([1],)}, "seqs"),
    "seqs mixed": ({"seqs": (1, -2)}, "seqs"),
    "seqs a string": ({"seqs": "12"}, "seqs"),
    "segments None item": ({"segments": (None,)}, "segments"),
    "segments int": ({"segments": (3,)}, "segments"),
    "segments a string": ({"segments": "ab"}, "segments"),
    "segments nested": ({"segments": (["a"],)}, "segments"),
    "types unknown": ({"types": ("nonsense",)}, "type"),
    "tiers unknown": ({"tiers": ("attic",)}, "tier"),
    "include_superseded": ({"include_superseded": "no"}, "include_superseded"),
}


@pytest.mark.parametrize(("kwargs", "match"), INVALID.values(), ids=INVALID.keys())
def test_invalid_filter_values_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        RecordFilter(**kwargs)  # type: ignore[arg-type]


def test_a_segment_with_a_lone_surrogate_is_refused() -> None:
    """SQLite cannot bind a lone surrogate (UnicodeEncodeError) and the namespace index would match
    nothing: the filter refuses it, so both read it the same way."""
    with pytest.raises(InvalidInput, match="segments"):
        RecordFilter(segments=("\ud800",))


def test_the_package_exports_every_public_name_of_ops() -> None:
    """``retain.store.ops`` keeps no ``__all__`` of its own: the package's lists what ops defines."""
    import retain.store
    import retain.store.ops

    tree = ast.parse(Path(retain.store.ops.__file__).read_text(encoding="utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, ast.ClassDef | ast.FunctionDef)}
    defined |= {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    public = {name for name in defined if not name.startswith("_")}
    assert {"Op", "ScoredId", "WRITE_ATTEMPTS", "retry_on_conflict"} <= public
    assert public <= set(retain.store.__all__)
    assert all(getattr(retain.store, name) is getattr(retain.store.ops, name) for name in public)

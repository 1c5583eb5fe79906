"""The rights model: tenants, prefixes (longest wins), roles ordered read < write < admin."""

from __future__ import annotations

import pytest

from retain.errors import InvalidInput
from retain.safety.access import Grant, Principal, Role


def test_roles_are_ordered():
    assert Role.ADMIN.allows(Role.WRITE) and Role.WRITE.allows(Role.READ)
    assert not Role.READ.allows(Role.WRITE) and not Role.WRITE.allows(Role.ADMIN)


def test_the_longest_prefix_decides():
    p = Principal("agent", grants=(Grant("", Role.WRITE), Grant("audit/", Role.READ)))
    assert p.role("notes") is Role.WRITE
    assert p.role("audit/2024") is Role.READ
    assert not p.can("audit/2024", Role.WRITE)


def test_a_tenant_confines_a_principal_to_its_namespaces():
    p = Principal("k1", grants=(("", "admin"),), tenant="acme")
    assert p.can("acme/trip", Role.ADMIN)
    assert p.role("globex/trip") is None and p.role("acme") is None and p.role("acmex/trip") is None
    assert p.visible(["acme/a", "globex/b", "acme/c", "acme-x/d"]) == ["acme/a", "acme/c"]
    assert p.local("acme/a/b") == "a/b" and p.local("globex/a") is None


def test_prefixes_of_a_tenant_are_relative_to_it():
    p = Principal("reviewer", grants=(Grant("shared/", "read"),), tenant="acme")
    assert p.role("acme/shared/plan") is Role.READ
    assert p.role("acme/private") is None
    assert p.role("shared/plan") is None  # not under acme/


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"actor": ""}, "actor"),
        ({"actor": "a\nb"}, "actor"),
        ({"actor": "a", "tenant": "a/b"}, "tenant"),
        ({"actor": "a", "tenant": ""}, "tenant"),
        ({"actor": "a", "grants": (("x", "owner"),)}, "role"),
        ({"actor": "a", "grants": ("x",)}, "grants"),
    ],
)
def test_bad_principals_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(InvalidInput, match=field):
        Principal(**kwargs)

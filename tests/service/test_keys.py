"""The keys file: hashes only, constant-time checks, revocation seen by a running reader."""

from __future__ import annotations

import json
import stat

import pytest

from retain.errors import InvalidInput, RecordNotFound, Unauthorized
from retain.safety.access import Grant, Role
from retain.service.keys import KeyStore


def test_a_key_maps_to_its_principal_and_the_file_keeps_only_a_hash(tmp_path):
    store = KeyStore(tmp_path / "keys.json")
    key, entry = store.add(tenant="acme", actor="planner", grants=[Grant("shared/", "write")])
    principal = store.authenticate(key)
    assert (principal.tenant, principal.actor, principal.grants) == ("acme", "planner", (Grant("shared/", Role.WRITE),))
    text = (tmp_path / "keys.json").read_text()
    assert key not in text and key.split("_")[2] not in text and entry.digest in text
    assert stat.S_IMODE((tmp_path / "keys.json").stat().st_mode) == 0o600


def test_wrong_unknown_malformed_and_revoked_keys_are_refused(tmp_path):
    store = KeyStore(tmp_path / "keys.json")
    key, entry = store.add(tenant="acme", grants=[Grant("", "read")])
    assert entry.actor == f"key:{entry.id}"
    wrong_secret = key[:-1] + ("A" if key[-1] != "A" else "B")
    cases = [(None, "no API key"), ("", "no API key"), ("nonsense", "malformed"), (wrong_secret, "unknown")]
    for bad, why in [*cases, ("rk_ffffffffffff_x", "unknown")]:
        with pytest.raises(Unauthorized, match=why):
            store.authenticate(bad)
    reader = KeyStore(tmp_path / "keys.json")  # a running server's copy
    assert reader.authenticate(key).tenant == "acme"
    store.revoke(entry.id)
    with pytest.raises(Unauthorized, match="revoked"):
        reader.authenticate(key)
    assert [k.revoked_at is not None for k in store.list()] == [True]


def test_revoking_an_unknown_key_and_adding_a_bad_one_are_refused(tmp_path):
    store = KeyStore(tmp_path / "keys.json")
    with pytest.raises(RecordNotFound):
        store.revoke("000000000000")
    with pytest.raises(InvalidInput, match="tenant"):
        store.add(tenant="a/b", grants=[Grant("", "read")])
    with pytest.raises(InvalidInput, match="grants"):
        store.add(tenant="acme", grants=[])
    assert not (tmp_path / "keys.json").exists()


def test_a_file_that_is_not_a_keys_file_is_named(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"format": 99, "keys": []}))
    with pytest.raises(InvalidInput, match="not a retain keys file"):
        KeyStore(path).list()

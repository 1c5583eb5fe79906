"""retain keys add | list | revoke: the key is the last line, the file keeps hashes only."""

from __future__ import annotations

from typer.testing import CliRunner

from retain.cli.app import app
from retain.service.keys import KeyStore

runner = CliRunner()


def test_keys_add_prints_the_key_last_and_list_and_revoke_manage_it(tmp_path):
    db = tmp_path / "agent.db"
    args = ["keys", "add", "--db", str(db), "--tenant", "acme", "--prefix", "shared/", "--prefix", "", "--role", "read"]
    result = runner.invoke(app, [*args, "--role", "admin", "--actor", "ops"])
    assert result.exit_code == 0, result.output
    key = result.output.strip().splitlines()[-1]
    principal = KeyStore(tmp_path / "agent.db.keys.json").authenticate(key)
    assert principal.actor == "ops" and principal.role("acme/shared/x").value == "read"
    assert principal.role("acme/other").value == "admin"

    listed = runner.invoke(app, ["keys", "list", "--db", str(db)])
    assert listed.exit_code == 0 and "acme  ops  shared/=read, *=admin" in listed.output and key not in listed.output
    key_id = key.split("_")[1]
    revoked = runner.invoke(app, ["keys", "revoke", key_id, "--db", str(db)])
    assert revoked.exit_code == 0 and f"revoked key {key_id}" in revoked.output
    assert "revoked" in runner.invoke(app, ["keys", "list", "--db", str(db)]).output


def test_keys_add_refuses_mismatched_roles_and_bad_tenants(tmp_path):
    keys = str(tmp_path / "k.json")
    base = ["keys", "add", "--keys", keys, "--prefix", "a/", "--prefix", "b/"]
    result = runner.invoke(app, [*base, "--tenant", "acme", "--role", "read", "--role", "write", "--role", "admin"])
    assert result.exit_code == 2 and "one per --prefix" in result.output
    result = runner.invoke(app, [*base, "--tenant", "a/b", "--role", "read"])
    assert result.exit_code == 2 and "tenant" in result.output
    assert runner.invoke(app, ["keys", "revoke", "nope", "--keys", keys]).exit_code == 2

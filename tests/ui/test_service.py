"""The dashboard under /ui of ``retain serve``, behind its API keys, in Debian's chromium: a
read-only key sees the pages and no write button, and its forged write gets 403; no key gets 401;
a write key pins (audited with its actor)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from retain.safety.access import Grant, Role
from retain.service.keys import KeyStore, default_keys_path
from ui.conftest import stop, wait_up
from ui.fill import SECRET, Filled, fill

NS = "acme/trip"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], Filled]]:
    folder = tmp_path_factory.mktemp("serve")
    filled = fill(folder / "store.db", ns=NS)
    keys = KeyStore(default_keys_path(filled.path))
    secrets = {
        role.value: keys.add(tenant="acme", actor=f"{role.value}-key", grants=[Grant("", role)])[0]
        for role in (Role.READ, Role.WRITE)
    }
    ready = folder / "ready"
    retain = Path(sys.executable).parent / "retain"
    cmd = [str(retain), "serve", "--db", str(filled.path), "--port", "0", "--ready-file", str(ready)]
    cmd += ["--trusted-actor", "write-key"]  # pinning needs a trusted actor
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    for _ in range(300):
        if ready.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert ready.exists(), proc.stderr.read().decode() if proc.stderr else "no ready file"
    base = f"http://{ready.read_text().strip()}/ui"
    wait_up(base.replace("/ui", "/healthz"))
    yield base, secrets, filled
    stop(proc)


def test_a_read_only_key_sees_no_write_button_and_its_forged_write_gets_403(service, browser: Browser) -> None:
    base, secrets, filled = service
    ctx = browser.new_context(extra_http_headers={"Authorization": f"Bearer {secrets['read']}"})
    page = ctx.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    for path in ("/", f"/records?ns={NS}", f"/budget?ns={NS}", f"/record?ns={NS}&id={filled.secret_id}"):
        assert page.goto(base + path).status == 200, path
    assert page.get_by_role("button", name="Pin").count() == 0
    assert page.get_by_role("button", name="Forget").count() == 0
    assert SECRET not in page.content()
    forged = page.request.post(base + "/record/forget", form={"ns": NS, "id": filled.secret_id, "csrf": "x"})
    assert forged.status == 403
    assert page.goto(base + f"/record?ns={NS}&id={filled.secret_id}&reveal=1").status == 200
    assert SECRET not in page.content()
    assert problems == []
    ctx.close()


def test_no_key_gets_401_and_a_write_key_pins(service, browser: Browser) -> None:
    base, secrets, filled = service
    anonymous = browser.new_context()
    assert anonymous.new_page().goto(base + "/").status == 401
    anonymous.close()
    ctx = browser.new_context(extra_http_headers={"X-API-Key": secrets["write"]})
    page = ctx.new_page()
    page.goto(base + f"/record?ns={NS}&id={filled.plain_id}")
    page.get_by_role("button", name="Pin").click()
    page.wait_for_url("**done=pin*")
    assert page.locator("#pinned").inner_text() == "yes"
    page.goto(base + f"/audit?ns={NS}&op=pin")
    assert "write-key" in page.locator("table.audit tbody tr").first.inner_text()
    ctx.close()

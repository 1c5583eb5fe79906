"""A real ``retain serve`` subprocess on 127.0.0.1 (an ephemeral port) and its API keys, for the
service tests (tests/service) and the load benchmark's checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from retain.safety.access import Grant
from retain.service.keys import KeyStore

STARTUP_SECONDS = 120  # importing the package (torch) on a busy 2-core machine


@dataclass
class Server:
    """A ``retain serve`` process over ``db``: ``url`` is its base URL."""

    db: Path
    keys_path: Path
    folder: Path
    extra: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""
    keys: dict[str, str] = field(default_factory=dict)

    def start(self) -> Server:
        ready = self.folder / "ready"
        ready.unlink(missing_ok=True)
        cmd = [sys.executable, "-c", "from retain.cli.app import app; app()", "serve", "--db", str(self.db)]
        cmd += ["--keys", str(self.keys_path), "--port", "0", "--ready-file", str(ready), *self.extra]
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        log = open(self.folder / "serve.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("retain serve did not start: " + (self.folder / "serve.log").read_text())
            time.sleep(0.1)
        self.url = "http://" + ready.read_text().strip()
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush beyond what SQLite committed."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def make_keys(path: Path) -> dict[str, str]:
    """Keys of two tenants: acme's admin, planner (writes shared/), reviewer (reads shared/),
    a writer whose audit/ prefix is read-only, a revoked key; globex's admin."""
    store = KeyStore(path)
    keys = {
        "admin": store.add(tenant="acme", actor="acme-admin", grants=[Grant("", "admin")])[0],
        "planner": store.add(tenant="acme", actor="planner", grants=[Grant("shared/", "write")])[0],
        "reviewer": store.add(tenant="acme", actor="reviewer", grants=[Grant("shared/", "read")])[0],
        "writer": store.add(tenant="acme", actor="writer", grants=[Grant("", "write"), Grant("audit/", "read")])[0],
        "globex": store.add(tenant="globex", actor="globex-admin", grants=[Grant("", "admin")])[0],
    }
    revoked, entry = store.add(tenant="acme", actor="gone", grants=[Grant("", "admin")])
    store.revoke(entry.id)
    keys["revoked"] = revoked
    return keys

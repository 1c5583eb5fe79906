"""Fixtures of the dashboard tests: a filled store, ``retain ui`` subprocesses on free ports, an
in-process server for other authorisation hooks, and Debian's chromium driven by Playwright."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright.sync_api")
pytest.importorskip("uvicorn")

from playwright.sync_api import Browser, Page, sync_playwright

from ui.fill import Filled, fill

CHROMIUM = "/usr/bin/chromium"
REPORTS = Path(__file__).resolve().parents[2] / "reports" / "ui"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    for _ in range(200):
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def start_ui(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``retain ui --db DB --port P`` as a subprocess; returns it and its base URL (…/ui)."""
    port = free_port()
    retain = Path(sys.executable).parent / "retain"
    proc = subprocess.Popen([str(retain), "ui", "--db", str(db), "--port", str(port)], stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}/ui"
    wait_up(base + "/", proc)
    return proc, base


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    return fill(tmp_path_factory.mktemp("ui") / "store.db")


@pytest.fixture(scope="session")
def server(filled: Filled) -> Iterator[str]:
    proc, base = start_ui(filled.path)
    yield base
    stop(proc)


@pytest.fixture(scope="session")
def broken_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Filled]]:
    """``retain ui`` over a store whose audit chain was edited in place (a reason rewritten)."""
    filled = fill(tmp_path_factory.mktemp("broken") / "store.db")
    conn = sqlite3.connect(filled.path)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET reason = 'rewritten' WHERE seq = 3")
    conn.commit()
    conn.close()
    proc, base = start_ui(filled.path)
    yield base, filled
    stop(proc)


@pytest.fixture(scope="session")
def serve_app() -> Iterator[Callable[..., str]]:
    """Serve a dashboard app in this process (for hooks other than ``retain ui``'s); returns its base URL."""
    import uvicorn
    from fastapi import FastAPI

    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def serve(ui_app: object) -> str:
        root = FastAPI()
        root.mount("/ui", ui_app)  # type: ignore[arg-type]
        port = free_port()
        srv = uvicorn.Server(uvicorn.Config(root, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=srv.run, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{port}/ui"
        wait_up(base + "/")
        servers.append((srv, thread))
        return base

    yield serve
    for srv, thread in servers:
        srv.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: apt-get install -y chromium (.ci/run does)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Watched:
    """A page that records console errors, failed requests and dialogs (a dialog = script ran)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.problems: list[str] = []
        page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url}"))
        page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))

    def visit(self, url: str, *, status: int = 200) -> Page:
        response = self.page.goto(url)
        assert response is not None and response.status == status, (url, response and response.status)
        if status != 200:  # the browser logs the error status of the page itself, as it should
            expected = f"console error: Failed to load resource: the server responded with a status of {status}"
            self.problems = [p for p in self.problems if not p.startswith(expected)]
        assert self.problems == [], self.problems
        return self.page


@pytest.fixture
def watched(browser: Browser) -> Iterator[Callable[[int], Watched]]:
    contexts = []

    def open_page(width: int = 1280) -> Watched:
        ctx = browser.new_context(viewport={"width": width, "height": 900})
        contexts.append(ctx)
        return Watched(ctx.new_page())

    yield open_page
    for ctx in contexts:
        ctx.close()

"""The hooks for other apps (the dashboard): a router with the principal and its view as
dependencies, and an ASGI app mounted behind the same keys; a real server process, httpx client."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from serving import STARTUP_SECONDS, make_keys

SCRIPT = """
import sys
from pathlib import Path

from fastapi import APIRouter
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from retain import AsyncMemory, HashingEncoder
from retain.service.app import serve
from retain.service.auth import ActorMemoryDep, PrincipalDep
from retain.service.keys import KeyStore

router = APIRouter(prefix="/extra")


@router.get("/me")
async def me(principal: PrincipalDep, mem: ActorMemoryDep) -> dict:
    return {"actor": principal.actor, "namespaces": await mem.namespaces()}


async def home(request):
    state = request.state
    return JSONResponse({"actor": state.principal.actor, "namespaces": await state.memory.namespaces()})


db, keys, ready = sys.argv[1:4]
memory = AsyncMemory(db, encoder=HashingEncoder(64), state_scorer=False)
ui = Starlette(routes=[Route("/", home)])
serve(memory, KeyStore(keys), port=0, ready_file=Path(ready), extra_routers=[router], mounts={"/ui": ui})
"""


def test_an_extra_router_and_a_mounted_app_see_the_authenticated_principal(tmp_path):
    keys = make_keys(tmp_path / "keys.json")
    ready = tmp_path / "ready"
    cmd = [sys.executable, "-c", SCRIPT, str(tmp_path / "x.db"), str(tmp_path / "keys.json"), str(ready)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        url = "http://" + ready.read_text().strip()
        with httpx.Client(base_url=url, timeout=60) as http:
            admin, globex = ({"Authorization": f"Bearer {keys[k]}"} for k in ("admin", "globex"))
            body = {"namespace": "acme/ui", "content": "The dashboard shows this memory."}
            assert http.post("/v1/memories", json=body, headers=admin).status_code == 201
            assert http.get("/extra/me", headers=admin).json() == {"actor": "acme-admin", "namespaces": ["acme/ui"]}
            assert http.get("/ui/", headers=globex).json() == {"actor": "globex-admin", "namespaces": []}
            assert http.get("/ui/", headers=admin).json()["namespaces"] == ["acme/ui"]
            for path in ("/ui/", "/extra/me"):
                response = http.get(path)
                assert response.status_code == 401 and response.json()["error"]["type"] == "Unauthorized"
            revoked = {"Authorization": f"Bearer {keys['revoked']}"}
            assert http.get("/ui/", headers=revoked).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)


DASHBOARD = """
import sys
from pathlib import Path

from retain import AsyncMemory, HashingEncoder
from retain.service.app import serve
from retain.service.keys import KeyStore
from retain.service.ui import dashboard

db, keys, ready = sys.argv[1:4]
memory = AsyncMemory(db, encoder=HashingEncoder(64), state_scorer=False)
ui = dashboard(db, encoder=HashingEncoder(64), state_scorer=False)
serve(memory, KeyStore(keys), port=0, ready_file=Path(ready), mounts={"/ui": ui})
"""


def test_the_dashboard_mounted_behind_the_keys_shows_only_what_a_key_may_read(tmp_path):
    keys = make_keys(tmp_path / "keys.json")
    ready = tmp_path / "ready"
    cmd = [sys.executable, "-c", DASHBOARD, str(tmp_path / "x.db"), str(tmp_path / "keys.json"), str(ready)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        with httpx.Client(base_url="http://" + ready.read_text().strip(), timeout=60) as http:
            admin, globex, reviewer = ({"Authorization": f"Bearer {keys[k]}"} for k in ("admin", "globex", "reviewer"))
            for ns, who in (("acme/shared/plan", admin), ("acme/private", admin), ("globex/launch", globex)):
                body = {"namespace": ns, "content": f"A record of {ns} for the dashboard."}
                assert http.post("/v1/memories", json=body, headers=who).status_code == 201
            page = http.get("/ui/", headers=admin)
            assert page.status_code == 200 and "acme/private" in page.text and "globex/launch" not in page.text
            page = http.get("/ui/", headers=reviewer)
            assert "acme/shared/plan" in page.text and "acme/private" not in page.text
            assert http.get("/ui/", headers=globex).text.count("acme/") == 0
            assert http.get("/ui/").status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)

"""The dashboard app: :func:`create_app` builds a FastAPI app serving the pages under its root (mount
it under ``/ui``); every request goes through the authorisation hook, every write through the
:class:`~retain.Memory` API (audited like any call) after a role, CSRF and read-only check."""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.exceptions import HTTPException

from retain.errors import Forbidden, InvalidInput, RecordNotFound
from retain.record import validate_namespace
from retain.ui import ledger, views
from retain.ui.auth import Authorise, Principal, Role, csrf_token
from retain.ui.context import Dashboard

if TYPE_CHECKING:
    from retain.memory import Memory

__all__ = ["WRITE_ACTIONS", "create_app"]

HERE = Path(__file__).parent
WRITE_ACTIONS = ("pin", "unpin", "forget", "resolve")
"""The write buttons of the record page and the conflicts sections (role write or admin)."""

_ENV = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))


def create_app(
    memory: Memory, authorise: Authorise, *, secret: bytes | None = None, eval_json: Path | None = None
) -> FastAPI:
    """The dashboard over ``memory``; ``authorise`` names the caller of each request and their roles.

    Args:
        memory: the :class:`~retain.Memory` to show (its store may be shared with other processes).
        authorise: the hook (:data:`~retain.ui.auth.Authorise`); ``retain ui`` passes
            :func:`~retain.ui.auth.local_admin`.
        secret: key of the forms' CSRF tokens; default a random one per app.
        eval_json: the evaluation report whose budget-performance curve the budget page draws
            (:mod:`retain.ui.evaluation`); default ``<store file>.eval.json``.

    Returns: a FastAPI app whose pages are relative to where it is mounted.
    """
    dash = Dashboard(memory, secret=secret or secrets.token_bytes(32), eval_json=eval_json)
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.dashboard = dash
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    _routes(app, dash, authorise)
    _errors(app, dash, authorise)
    return app


def _render(
    request: Request, dash: Dashboard, principal: Principal | None, name: str, status: int = 200, **data: Any
) -> HTMLResponse:
    status_now = dash.audit_status()
    namespace = data.get("ns")
    page = _ENV.get_template(name).render(
        base=request.scope.get("root_path", ""),
        principal=principal,
        audit=status_now,
        csrf="" if principal is None else csrf_token(dash.secret, principal),
        can_write=principal is not None and namespace is not None and dash.can_write(principal, namespace),
        can_reveal=principal is not None and principal.can_reveal,
        type_names=views.TYPE_NAMES,
        tier_names=views.TIER_NAMES,
        **data,
    )
    headers = {
        "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'"
    }
    return HTMLResponse(page, status_code=status, headers=headers)


def _reader(dash: Dashboard, authorise: Authorise, request: Request, namespace: str | None) -> Principal:
    """The caller, after checking it may read ``namespace`` (403 otherwise; 400 for a bad name)."""
    principal = authorise(request)
    if namespace is not None:
        validate_namespace(namespace)
        if not principal.may(namespace, Role.READ):
            raise HTTPException(403, "no read access to this namespace")
    return principal


def _reveal(principal: Principal, request: Request, namespace: str) -> bool:
    """True when the page asks to reveal and the caller may: ``can_reveal`` and admin of ``namespace``."""
    wanted = request.query_params.get("reveal") == "1"
    return wanted and principal.can_reveal and principal.may(namespace, Role.ADMIN)


def _routes(app: FastAPI, dash: Dashboard, authorise: Authorise) -> None:
    """The namespaces, records and record pages, and the record's write actions."""

    @app.get("/", response_class=HTMLResponse)
    def namespaces(request: Request) -> HTMLResponse:
        principal = _reader(dash, authorise, request, None)
        return _render(
            request, dash, principal, "namespaces.html", title="Namespaces", rows=views.namespace_rows(dash, principal)
        )

    @app.get("/records", response_class=HTMLResponse)
    def records(request: Request, ns: str) -> HTMLResponse:
        principal = _reader(dash, authorise, request, ns)
        args = dict(request.query_params)
        reveal = _reveal(principal, request, ns)
        data = views.records_page(dash, ns, args, reveal=reveal)
        return _render(
            request, dash, principal, "records.html", title=f"Records of {ns}", ns=ns, args=args, reveal=reveal, **data
        )

    @app.get("/record", response_class=HTMLResponse)
    def record(request: Request, ns: str, id: str) -> HTMLResponse:
        principal = _reader(dash, authorise, request, ns)
        reveal = _reveal(principal, request, ns)
        data = views.record_page(dash, ns, id, reveal=reveal)
        return _render(
            request,
            dash,
            principal,
            "record.html",
            title=f"Record {id}",
            ns=ns,
            reveal=reveal,
            done=request.query_params.get("done"),
            **data,
        )

    @app.post("/record/{action}")
    async def write(request: Request, action: str) -> Response:
        form = await request.form()
        ns, rid, token = (str(form.get(k, "")) for k in ("ns", "id", "csrf"))
        principal = authorise(request)
        validate_namespace(ns)
        if action not in WRITE_ACTIONS or not principal.may(ns, Role.WRITE):
            raise HTTPException(403, "this key may not write in this namespace")
        if not hmac.compare_digest(token, csrf_token(dash.secret, principal)):
            raise HTTPException(403, "missing or wrong form token")
        if dash.read_only():
            raise HTTPException(403, "the audit chain is broken: the dashboard is read-only")
        reason = f"dashboard: {principal.name}"
        base = request.scope.get("root_path", "")
        if action == "resolve":
            keep = str(form.get("keep", ""))
            dash.memory.resolve_conflict(rid, namespace=ns, keep=keep, actor=principal.actor, reason=reason)
            back = str(form.get("back", ""))
            target = f"{base}/record?id={_q(back)}&done=resolve&ns=" if back else f"{base}/records?done=resolve&ns="
            return RedirectResponse(target + _q(ns), status_code=303)
        if action == "forget":
            dash.memory.forget(rid, namespace=ns, actor=principal.actor, reason=reason)
        else:
            getattr(dash.memory, action)(rid, namespace=ns, actor=principal.actor, reason=reason)
        target = f"{base}/records?ns=" if action == "forget" else f"{base}/record?id={_q(rid)}&done={action}&ns="
        return RedirectResponse(target + _q(ns), status_code=303)

    _ledger_routes(app, dash, authorise)


def _ledger_routes(app: FastAPI, dash: Dashboard, authorise: Authorise) -> None:
    """The budget, provenance, timeline, audit and diff pages."""

    @app.get("/budget", response_class=HTMLResponse)
    def budget(request: Request, ns: str) -> HTMLResponse:
        principal = _reader(dash, authorise, request, ns)
        return _render(
            request, dash, principal, "budget.html", title=f"Budget of {ns}", ns=ns, **ledger.budget_page(dash, ns)
        )

    @app.get("/provenance", response_class=HTMLResponse)
    def provenance(request: Request, id: str = "") -> HTMLResponse:
        principal = _reader(dash, authorise, request, None)
        if not id.strip():
            return _render(request, dash, principal, "provenance.html", title="Provenance", data=None, pid="")
        stored = dash.store.provenance(id.strip())
        if stored is None or not principal.may(stored["namespace"], Role.READ):  # no hint that it exists elsewhere
            raise RecordNotFound(f"no context provenance {id.strip()!r}")
        ns = stored["namespace"]
        data = ledger.provenance_page(dash, id.strip(), reveal=_reveal(principal, request, ns))
        return _render(request, dash, principal, "provenance.html", title=f"Provenance {id}", ns=ns, pid=id, data=data)

    @app.get("/timeline", response_class=HTMLResponse)
    def timeline(request: Request, ns: str) -> HTMLResponse:
        principal = _reader(dash, authorise, request, ns)
        args = dict(request.query_params)
        data = ledger.timeline_page(dash, ns, args, reveal=_reveal(principal, request, ns))
        return _render(request, dash, principal, "timeline.html", title=f"Timeline of {ns}", ns=ns, args=args, **data)

    @app.get("/audit", response_class=HTMLResponse)
    def audit(request: Request, ns: str) -> HTMLResponse:
        principal = _reader(dash, authorise, request, ns)
        args = dict(request.query_params)
        data = ledger.audit_page(dash, ns, args)
        return _render(request, dash, principal, "audit.html", title=f"Audit trail of {ns}", ns=ns, args=args, **data)

    @app.get("/diff", response_class=HTMLResponse)
    def diff(request: Request, ns: str) -> HTMLResponse:
        principal = _reader(dash, authorise, request, ns)
        args = dict(request.query_params)
        return _render(
            request,
            dash,
            principal,
            "diff.html",
            title=f"Changes in {ns}",
            ns=ns,
            args=args,
            **ledger.diff_page(dash, ns, args),
        )


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def _errors(app: FastAPI, dash: Dashboard, authorise: Authorise) -> None:
    def page(request: Request, status: int, message: str) -> HTMLResponse:
        try:
            principal: Principal | None = authorise(request)
        except HTTPException:
            principal = None
        return _render(request, dash, principal, "error.html", status=status, title=f"Error {status}", message=message)

    @app.exception_handler(RecordNotFound)
    async def not_found(request: Request, exc: RecordNotFound) -> HTMLResponse:
        return page(request, 404, str(exc.args[0]) if exc.args else "not found")

    @app.exception_handler(InvalidInput)
    async def bad_input(request: Request, exc: InvalidInput) -> HTMLResponse:
        return page(request, 400, str(exc))

    @app.exception_handler(Forbidden)
    async def forbidden(request: Request, exc: Forbidden) -> HTMLResponse:
        return page(request, 403, str(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> HTMLResponse:
        return page(request, exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> HTMLResponse:
        return page(request, 500, f"the page failed ({type(exc).__name__}); the server log has the details")

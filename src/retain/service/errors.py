"""retain's errors as JSON responses: ``{"error": {"type": "<class name>", "message": "..."}}``.

Status codes (:data:`STATUS`, the most specific class wins): 400 ``InvalidInput`` and its other
subclasses (``TextTooLong``), ``EncoderMismatch`` and a request that fails validation (malformed
JSON named by its position, a field of the wrong type); 401 ``Unauthorized``; 403 ``Forbidden``;
404 ``RecordNotFound``; 409 ``WriteConflict``, ``DuplicateContent``, ``BudgetInfeasible``; 413
``PayloadTooLarge``; 500 any other ``RetainError`` (``SchemaError``...). An error that is not a
``RetainError`` is a 500 whose body names no internals.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from retain.errors import (
    BudgetInfeasible,
    EncoderMismatch,
    Forbidden,
    InvalidInput,
    PayloadTooLarge,
    RecordNotFound,
    RetainError,
    Unauthorized,
    WriteConflict,
)

__all__ = ["STATUS", "error_body", "install_error_handlers", "status_of"]

STATUS: tuple[tuple[type[RetainError], int], ...] = (
    (PayloadTooLarge, 413),
    (WriteConflict, 409),
    (BudgetInfeasible, 409),
    (InvalidInput, 400),
    (EncoderMismatch, 400),
    (Unauthorized, 401),
    (Forbidden, 403),
    (RecordNotFound, 404),
)
"""Error class -> HTTP status, most specific first; any other ``RetainError`` is 500."""

_HTTP_TYPES = {404: "NotFound", 405: "MethodNotAllowed"}


def status_of(exc: RetainError) -> int:
    """The HTTP status of ``exc`` (:data:`STATUS`)."""
    return next((status for cls, status in STATUS if isinstance(exc, cls)), 500)


def error_body(type_name: str, message: str) -> dict[str, Any]:
    """``{"error": {"type": type_name, "message": message}}``."""
    return {"error": {"type": type_name, "message": message}}


def _validation_message(exc: RequestValidationError, body: bytes) -> str:
    first = exc.errors()[0] if exc.errors() else {}
    loc = tuple(first.get("loc", ()))
    if first.get("type") == "json_invalid":
        pos = int(loc[1]) if len(loc) > 1 and isinstance(loc[1], int) else 0
        line = body.count(b"\n", 0, pos) + 1
        column = pos - (body.rfind(b"\n", 0, pos) + 1) + 1
        reason = (first.get("ctx") or {}).get("error", "invalid JSON")
        return f"malformed JSON at position {pos} (line {line}, column {column}): {reason}"
    where = ".".join(str(part) for part in loc) or "request"
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def install_error_handlers(app: FastAPI) -> None:
    """Make ``app`` answer every error with the JSON body and status above."""

    @app.exception_handler(RetainError)
    async def _retain_error(request: Request, exc: RetainError) -> JSONResponse:
        status = status_of(exc)
        message = str(exc) if status != 500 else f"{type(exc).__name__}: {exc}"
        return JSONResponse(error_body(type(exc).__name__, message), status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        body = await request.body()
        return JSONResponse(error_body("InvalidInput", _validation_message(exc, body)), status_code=400)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        name = _HTTP_TYPES.get(exc.status_code, "HTTPError")
        return JSONResponse(error_body(name, str(exc.detail)), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body("InternalError", "internal server error"), status_code=500)

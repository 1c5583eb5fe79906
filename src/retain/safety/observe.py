"""Observability: structured logs (structlog) and OpenTelemetry spans around retain's operations.

Nothing is configured on import. Logging is off until :func:`configure_logging` is called (the CLI
does it for ``--log json`` or ``RETAIN_LOG=json``); it then writes one JSON object per line to the
given stream, through a logger of retain's own, leaving structlog's global configuration and the
stdlib ``logging`` tree untouched. Spans go through ``opentelemetry.trace.get_tracer("retain")``:
without a tracer provider set by the application they are no-ops, and retain configures no
exporter.

Events and spans carry ids, namespaces, counts, token budgets, latencies and policy names, never
record content, queries or state (they may hold secrets). :func:`operation` enforces it: only the
attribute names in :data:`ALLOWED_FIELDS` are accepted.

Events (``event`` field of a log line; span name ``retain.<event>``):

* ``add``: namespace, n (items asked), ids (ids returned), latency_ms.
* ``search``: namespace, k, n_candidates, n_hits, latency_ms; n_left_out when a query holds more time
  expressions than :data:`retain.text.temporal.MAX_QUERY_TIME_EXPRESSIONS` (those beyond it are not read).
* ``context``: namespace, k, budget_tokens, used_tokens, n_included, n_left_out, provenance_id.
* ``evict`` (the retention decision, span ``retain.evict``): namespace, policy, n_offered,
  n_evicted, ids (evicted), latency_ms.
* ``supersede``: namespace, ids ([old, new]), latency_ms.

A failed operation logs at level ``error`` with ``error`` = the exception's class name (never its
message, which may quote input), and its span records the exception.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TextIO, TypeVar

import structlog
from opentelemetry import trace

from retain.errors import InvalidInput

__all__ = [
    "ALLOWED_FIELDS",
    "LOG_LEVELS",
    "TRACER_NAME",
    "Operation",
    "added",
    "annotate",
    "configure_logging",
    "disable_logging",
    "logging_enabled",
    "observed",
    "offered",
    "operation",
    "searched",
    "superseded",
]

TRACER_NAME = "retain"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

ALLOWED_FIELDS = frozenset(
    {
        "budget_tokens",
        "error",
        "ids",
        "k",
        "n",
        "n_candidates",
        "n_evicted",
        "n_hits",
        "n_included",
        "n_left_out",
        "n_offered",
        "namespace",
        "policy",
        "provenance_id",
        "trigger",
        "used_tokens",
    }
)
"""Attribute names an :class:`Operation` accepts (plus ``latency_ms``, set by retain). A name outside
this set raises :class:`~retain.errors.InvalidInput`: it is how content is kept out of logs."""

_Logger = Any  # structlog's filtering bound logger (its class is made at runtime)
_logger: _Logger | None = None
_current: ContextVar[Operation | None] = ContextVar("retain_operation", default=None)

P = ParamSpec("P")
R = TypeVar("R")
AttrValue = str | int | float | bool | Sequence[str]


def configure_logging(*, json: bool = True, level: str = "INFO", stream: TextIO | None = None) -> None:
    """Turn retain's structured log on.

    Args:
        json: one JSON object per line (``event``, ``level``, ``timestamp`` ISO 8601 UTC, fields);
            False = structlog's human-readable console lines.
        level: lowest level written, one of :data:`LOG_LEVELS` (operations log at INFO, failures
            at ERROR).
        stream: where lines go (default ``sys.stderr`` at the time of the call).

    Only retain's own logger is configured; structlog's global configuration and ``logging`` are
    left as they are.

    Raises:
        InvalidInput: unknown ``level``.
    """
    global _logger
    name = str(level).upper()
    if name not in LOG_LEVELS:
        raise InvalidInput(f"level: {level!r} is not one of {', '.join(LOG_LEVELS)}")
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    _logger = structlog.wrap_logger(
        structlog.PrintLogger(stream if stream is not None else sys.stderr),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(name),
        cache_logger_on_first_use=False,
    )


def disable_logging() -> None:
    """Turn retain's structured log off again (the state before :func:`configure_logging`)."""
    global _logger
    _logger = None


def logging_enabled() -> bool:
    """True between :func:`configure_logging` and :func:`disable_logging`."""
    return _logger is not None


class Operation:
    """Attributes of one running operation; set them with :meth:`set` (or :func:`annotate`)."""

    __slots__ = ("attributes", "name")

    def __init__(self, name: str, attributes: Mapping[str, Any]) -> None:
        self.name = name
        self.attributes: dict[str, AttrValue] = {}
        self.set(**attributes)

    def set(self, **attributes: Any) -> None:
        """Add or replace attributes; None values are skipped.

        Raises:
            InvalidInput: a name outside :data:`ALLOWED_FIELDS`.
        """
        for key, value in attributes.items():
            if key not in ALLOWED_FIELDS:
                raise InvalidInput(f"observe: attribute {key!r} is not allowed (content must not be logged)")
            if value is None:
                continue
            if isinstance(value, str | int | float | bool):
                self.attributes[key] = value
            elif isinstance(value, list | tuple | set | frozenset):
                self.attributes[key] = [str(v) for v in value]
            else:  # an argument not yet validated (the call refuses it): its type name, never its value
                self.attributes[key] = type(value).__name__


@contextmanager
def operation(name: str, **attributes: Any) -> Iterator[Operation]:
    """Run a block as the operation ``name``: a span ``retain.<name>`` and, when logging is on, one
    log line at the end with the attributes and ``latency_ms`` (wall time, milliseconds).

    Raises:
        InvalidInput: an attribute name outside :data:`ALLOWED_FIELDS`.
    """
    op = Operation(name, attributes)
    token = _current.set(op)
    start = time.perf_counter()
    tracer = trace.get_tracer(TRACER_NAME)
    try:
        with tracer.start_as_current_span(f"retain.{name}") as span:
            try:
                yield op
            except BaseException as exc:
                op.attributes["error"] = type(exc).__name__
                raise
            finally:
                span.set_attributes(_span_attributes(op.attributes))
    finally:
        _current.reset(token)
        logger = _logger
        if logger is not None:
            latency = round((time.perf_counter() - start) * 1000.0, 3)
            if "error" in op.attributes:
                logger.error(name, latency_ms=latency, **op.attributes)
            else:
                logger.info(name, latency_ms=latency, **op.attributes)


def annotate(**attributes: Any) -> None:
    """Set attributes on the innermost running :func:`operation` of this thread / task (no-op
    outside one).

    Raises:
        InvalidInput: an attribute name outside :data:`ALLOWED_FIELDS`.
    """
    op = _current.get()
    if op is not None:
        op.set(**attributes)


def observed(
    name: str,
    *,
    args: Sequence[str] = ("namespace",),
    result: Callable[[Sequence[Any], Mapping[str, Any], Any], Mapping[str, Any]] | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function so that each call runs as :func:`operation` ``name``.

    Args:
        args: keyword arguments of the call copied into the attributes (when given as keywords).
        result: ``f(positional_args, keyword_args, returned_value) -> attributes``, added after a
            successful call.
    """

    def wrap(func: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(func)
        def inner(*a: P.args, **kw: P.kwargs) -> R:
            with operation(name, **{key: kw[key] for key in args if key in kw}) as op:
                value = func(*a, **kw)
                if result is not None:
                    op.set(**result(a, kw, value))
                return value

        return inner

    return wrap


# --- attribute extractors for the Memory methods (ids, counts, names; never content) ------------


def added(args: Sequence[Any], kwargs: Mapping[str, Any], ids: Sequence[str]) -> dict[str, Any]:
    """Attributes of ``Memory.add_many``: the ids returned."""
    return {"n": len(ids), "ids": list(ids)}


def searched(args: Sequence[Any], kwargs: Mapping[str, Any], hits: Sequence[Any]) -> dict[str, Any]:
    """Attributes of ``Memory.search``: the number of hits."""
    return {"n_hits": len(hits)}


def offered(args: Sequence[Any], kwargs: Mapping[str, Any], value: Any) -> dict[str, Any]:
    """Attributes of the budget decision ``Memory._apply_budget(namespace, fresh, ...)``, which
    returns (arrivals, moved, audit entries): the policy and the ids evicted."""
    memory, namespace, fresh = args[0], args[1], args[2]
    evicted = [e.record_id for e in value[2] if e.op == "evict"]
    return {
        "namespace": namespace,
        "policy": memory.budget.policy if memory.budget is not None else None,
        "trigger": kwargs.get("trigger"),
        "n_offered": len(fresh),
        "n_evicted": len(evicted),
        "ids": evicted,
    }


def superseded(args: Sequence[Any], kwargs: Mapping[str, Any], new_id: str) -> dict[str, Any]:
    """Attributes of ``Memory.update(id, content, ...)``: [old id, new id]."""
    old = args[1] if len(args) > 1 else kwargs.get("id")
    return {"ids": [str(old), new_id]}


def _span_attributes(attributes: Mapping[str, AttrValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        out[f"retain.{key}"] = value if isinstance(value, str | int | float | bool) else list(value)
    return out

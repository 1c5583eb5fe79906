"""Structured logs and OpenTelemetry spans: emitted with their attributes, never with content."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from retain import HashingEncoder, InvalidInput, Memory
from retain.retention.budget import Budget
from retain.safety.observe import (
    ALLOWED_FIELDS,
    annotate,
    configure_logging,
    disable_logging,
    logging_enabled,
    operation,
)

NS = "obs-test"
SECRET = "zebra-quartz-7781"
_EXPORTER = InMemorySpanExporter()
_INSTALLED: list[bool] = []


def _install_exporter() -> None:
    """One SDK provider per process (OpenTelemetry allows setting the global provider once)."""
    if _INSTALLED:
        return
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    _INSTALLED.append(True)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _install_exporter()
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging(json=True, level="INFO", stream=stream)
    yield stream
    disable_logging()


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def by_name(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def budgeted() -> Memory:
    return Memory(encoder=HashingEncoder(64), budget=Budget(2, policy="fifo"), state_scorer=False)


def test_spans_carry_namespace_counts_and_policy(spans: InMemorySpanExporter) -> None:
    with budgeted() as mem:
        ids = mem.add_many(
            [{"content": f"Turn {i}: we walked to the harbour {SECRET}."} for i in range(4)], namespace=NS
        )
        hits = mem.search("harbour walk", namespace=NS, k=3)
        ctx = mem.context("harbour", namespace=NS, budget_tokens=50, k=3)

    (add,) = by_name(spans, "retain.add")
    assert add.attributes is not None
    assert add.attributes["retain.namespace"] == NS
    assert add.attributes["retain.n"] == 4
    assert list(add.attributes["retain.ids"]) == ids  # type: ignore[arg-type]

    (evict,) = by_name(spans, "retain.evict")  # the retention decision, inside the add
    assert evict.parent is not None and evict.parent.span_id == add.context.span_id
    assert evict.attributes is not None
    assert evict.attributes["retain.policy"] == "fifo"
    assert evict.attributes["retain.n_offered"] == 4
    assert evict.attributes["retain.n_evicted"] == 2
    assert list(evict.attributes["retain.ids"]) == ids[:2]  # type: ignore[arg-type]

    searches = by_name(spans, "retain.search")
    assert len(searches) == 3  # ours, the one inside context, and its archive look-up (records were evicted)
    first = searches[0].attributes
    assert first is not None
    assert first["retain.k"] == 3 and first["retain.n_hits"] == len(hits) == 2
    assert first["retain.n_candidates"] == 2  # only two records are still hot

    (packed,) = by_name(spans, "retain.context")
    assert searches[1].parent is not None and searches[1].parent.span_id == packed.context.span_id
    assert packed.attributes is not None
    assert packed.attributes["retain.budget_tokens"] == 50
    assert packed.attributes["retain.provenance_id"] == ctx.provenance_id
    assert packed.attributes["retain.n_included"] == len(ctx.items)
    for span in spans.get_finished_spans():
        assert all(SECRET not in str(v) for v in (span.attributes or {}).values())


def test_supersede_is_a_span_with_both_ids(spans: InMemorySpanExporter) -> None:
    with Memory(encoder=HashingEncoder(64)) as mem:
        old = mem.add("The meeting is in room R12.", namespace=NS)
        new = mem.update(old, "The meeting is in room R99.", namespace=NS)
    (span,) = by_name(spans, "retain.supersede")
    assert span.attributes is not None and list(span.attributes["retain.ids"]) == [old, new]  # type: ignore[arg-type]


def test_failed_operation_marks_the_span_and_logs_an_error(spans: InMemorySpanExporter, log: io.StringIO) -> None:
    with Memory(encoder=HashingEncoder(64)) as mem, pytest.raises(InvalidInput):
        mem.search(f"where is {SECRET}", namespace=NS, k=0)
    (span,) = by_name(spans, "retain.search")
    assert span.status.status_code is StatusCode.ERROR
    (line,) = lines(log)
    assert line["level"] == "error" and line["error"] == "InvalidInput" and line["event"] == "search"
    assert SECRET not in log.getvalue()  # neither the query nor the exception message


def test_json_log_lines_parse_and_hold_no_content(log: io.StringIO) -> None:
    with budgeted() as mem:
        ids = [mem.add(f"Note {i}: the vault code is {SECRET}.", namespace=NS, type="fact") for i in range(3)]
        mem.search(f"vault code {SECRET}", namespace=NS, k=5)
        new = mem.update(ids[-1], f"The vault code is now {SECRET}-2.", namespace=NS)
        mem.context(f"vault {SECRET}", namespace=NS, budget_tokens=40, state={"task": SECRET})
    text = log.getvalue()
    assert SECRET not in text
    events = lines(log)
    assert [e["event"] for e in events].count("add") == 3
    assert {"add", "evict", "search", "supersede", "context"} <= {e["event"] for e in events}
    for event in events:
        assert set(event) <= ALLOWED_FIELDS | {"event", "level", "timestamp", "latency_ms"}
        assert isinstance(event["latency_ms"], float) and event["latency_ms"] >= 0
        assert str(event["timestamp"]).endswith("Z")
    evictions = [e for e in events if e["event"] == "evict" and e["n_evicted"]]
    assert evictions and evictions[0]["policy"] == "fifo" and evictions[0]["ids"] == [ids[0]]
    (sup,) = [e for e in events if e["event"] == "supersede"]
    assert sup["ids"] == [ids[-1], new] and sup["namespace"] == NS


def test_nothing_is_logged_or_configured_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    before = structlog.get_config()
    handlers = list(logging.getLogger().handlers)
    assert not logging_enabled()
    with Memory(encoder=HashingEncoder(64)) as mem:
        mem.add("Quiet please.", namespace=NS)
        mem.search("quiet", namespace=NS)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    configure_logging(stream=io.StringIO())
    try:
        assert structlog.get_config() == before  # retain's logger is its own, globals untouched
        assert logging.getLogger().handlers == handlers
    finally:
        disable_logging()


def test_level_filters_and_bad_level_is_refused() -> None:
    stream = io.StringIO()
    configure_logging(level="error", stream=stream)
    try:
        with Memory(encoder=HashingEncoder(64)) as mem:
            mem.add("Only errors are written.", namespace=NS)
        assert stream.getvalue() == ""
    finally:
        disable_logging()
    with pytest.raises(InvalidInput, match="level"):
        configure_logging(level="LOUD")


def test_console_format_is_human_readable() -> None:
    stream = io.StringIO()
    configure_logging(json=False, stream=stream)
    try:
        with operation("add", namespace=NS, n=1):
            pass
    finally:
        disable_logging()
    text = stream.getvalue()
    assert "add" in text and f"namespace={NS}" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_attributes_outside_the_allowed_set_are_refused() -> None:
    with pytest.raises(InvalidInput, match="content"), operation("add", content="secret"):
        pass
    with operation("search", namespace=NS) as op:
        annotate(n_hits=3)
        with pytest.raises(InvalidInput, match="query"):
            annotate(query="secret")
    assert op.attributes == {"namespace": NS, "n_hits": 3}
    annotate(n_hits=1)  # outside any operation: nothing to annotate, no error

"""The spans of a run as a tree both runtimes can compare (the ``trace`` key of an engine
scenario, conformance/gen_tracing.py).

A :class:`TraceRecorder` is an OpenTelemetry SDK tracer provider with an in-memory exporter
and a processor that notes the order spans start in. :meth:`TraceRecorder.tree` gives every
span started, in start order under its parent: its name, attributes (keys sorted), status
(``UNSET`` or ``ERROR``, with the description when there is one) and whether it ended. Ids
and times are left out, so two runs of one scenario give the same tree in either runtime.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["TraceRecorder"]


class _Starts(SpanProcessor):
    """Every span as it starts (the exporter only sees the ended ones)."""

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.spans.append(span)


class TraceRecorder:
    """A tracer provider whose spans come back as a normalised tree."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self._starts = _Starts()
        self.provider = TracerProvider()
        self.provider.add_span_processor(self._starts)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def tree(self) -> list[dict[str, Any]]:
        """The spans started so far, as nested nodes (roots first, in start order)."""
        ended = {s.context.span_id for s in self.exporter.get_finished_spans() if s.context}
        nodes: dict[int, dict[str, Any]] = {}
        roots: list[dict[str, Any]] = []
        for span in self._starts.spans:
            context = span.get_span_context()
            node = _node(span, context.span_id in ended)
            nodes[context.span_id] = node
            parent = nodes.get(span.parent.span_id) if span.parent is not None else None
            (parent["children"] if parent is not None else roots).append(node)
        return roots


def _node(span: ReadableSpan, ended: bool) -> dict[str, Any]:
    attributes = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in sorted((span.attributes or {}).items())
    }
    status: dict[str, Any] = {"code": span.status.status_code.name}
    if span.status.description:
        status["description"] = span.status.description
    return {
        "name": span.name,
        "attributes": attributes,
        "status": status,
        "ended": ended,
        "children": [],
    }

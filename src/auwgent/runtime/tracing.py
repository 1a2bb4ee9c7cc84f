"""OpenTelemetry traces of runs (``pip install "auwgent[otel]"``), off unless configured.

``"tracing": True`` in the runtime config uses the global tracer provider;
``"tracerProvider": provider`` uses that one. Spans follow the OpenTelemetry semantic
conventions for generative AI:

- ``invoke_agent <Agent>``: the run (the root agent), and each helper call nested in the
  span of the agent that called it (a helper handed the conversation: ended with the run);
- ``chat <model>``: one per model call, with the provider, model, token usage and finish
  reasons;
- ``execute_tool <name>``: one per tool and workflow call (``gen_ai.tool.type`` says which),
  ending when its result (or error) is out, or when the application skips the call (then
  marked ``auwgent.skipped``, as is a skipped helper's ``invoke_agent``); a tainted call to a sink (docs/security.md) adds
  ``auwgent.taint.action``, ``auwgent.taint.policy`` and ``auwgent.taint.reason``.

Every span carries ``auwgent.helper_stack`` (the agents from the root to the one at work); the
run span lists the intents emitted (``auwgent.intents``). When tracing is off the engine holds
no tracer and every hook is one ``if``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auwgent._version import __version__
from auwgent.errors import ConfigError

if TYPE_CHECKING:
    from auwgent.runtime.config import RuntimeOptions

__all__ = ["RunTrace", "make_tracer"]

_TOOL_TYPES = {"tool_call": "function", "workflow_call": "workflow"}
_ENDS = {"tool_result": "tool_call", "tool_error": "tool_call", "workflow_result": "workflow_call"}


def make_tracer(options: RuntimeOptions) -> Any:
    """The OpenTelemetry tracer the config asks for, or ``None`` (tracing off)."""
    provider: Any = options.tracer_provider  # checked below, when tracing is on
    if provider is None and not options.tracing:
        return None
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigError(
            'tracing: OpenTelemetry is not installed; pip install "auwgent[otel]"'
        ) from exc
    if provider is not None and not callable(getattr(provider, "get_tracer", None)):
        raise ConfigError(
            f"tracerProvider: expected an OpenTelemetry TracerProvider, got {provider!r}"
        )
    return (provider or trace.get_tracer_provider()).get_tracer("auwgent", __version__)


class RunTrace:
    """The spans of one run; the engine calls these at the points named in the docstring."""

    def __init__(self, tracer: Any, root: str) -> None:
        from opentelemetry import trace

        self._trace = trace
        self.tracer = tracer
        self.stack = [root]
        self.intents: list[str] = []
        self.agents: dict[str, list[Any]] = {}  # agent name -> its open invoke_agent spans
        self.tools: dict[tuple[str, str, str], list[Any]] = {}  # (agent, kind, name) -> spans
        self.run = self._start(f"invoke_agent {root}", None, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": root})  # fmt: skip
        self.agents[root] = [self.run]

    def _start(self, name: str, parent: Any, attributes: dict[str, Any]) -> Any:
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        attributes["auwgent.helper_stack"] = list(self.stack)
        return self.tracer.start_span(name, context=context, attributes=attributes)

    def _parent(self, agent: str) -> Any:
        spans = self.agents.get(agent)
        return spans[-1] if spans else self.run

    # -- hooks ---------------------------------------------------------------------------------

    def intent(self, name: str, value: Any, agent: str, active: str | None) -> None:
        """Every final intent: call intents open spans, their results close them."""
        self.intents.append(name)
        caller = active or agent
        target = value.get("type") or value.get("name") or value.get("tool") or ""
        if name in _TOOL_TYPES:
            span = self._start(f"execute_tool {target}", self._parent(caller), {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": target,
                "gen_ai.tool.type": _TOOL_TYPES[name]})  # fmt: skip
            self.tools.setdefault((caller, name, target), []).append(span)
        elif name == "helper_call":
            self.agent_start(target, caller)
        elif name == "helper_result" or (name == "tool_error" and self._helper_open(target)):
            self.agent_end(target)
        elif name in _ENDS:
            spans = self.tools.get((caller, _ENDS[name], target))
            if spans:
                span = spans.pop(0)
                if name == "tool_error":
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
                    span.set_attribute("error.type", "tool_error")
                span.end()
        elif name == "tool_skipped":
            self._skipped(caller, target)
        elif name == "tainted_call":
            self._tainted(caller, target, value)
        elif name == "error":
            self.run.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
            self.run.set_attribute("error.type", "error")

    def _skipped(self, caller: str, target: str) -> None:
        """A call the application skipped: its span ends now, marked ``auwgent.skipped``."""
        if self._helper_open(target):
            self.agents[target][-1].set_attribute("auwgent.skipped", True)
            self.agent_end(target)
            return
        spans = self.tools.get((caller, "tool_call", target)) or self.tools.get(
            (caller, "workflow_call", target)
        )
        if spans:
            span = spans.pop()
            span.set_attribute("auwgent.skipped", True)
            span.end()

    def _tainted(self, caller: str, target: str, value: Mapping[str, Any]) -> None:
        """The taint policy's decision on the call's open span (``auwgent.taint.*``)."""
        kind = "workflow_call" if value.get("kind") == "workflow" else "tool_call"
        spans = self.tools.get((caller, kind, target))
        span = spans[-1] if spans else self._parent(caller)
        span.set_attribute("auwgent.taint.action", str(value.get("action")))
        span.set_attribute("auwgent.taint.policy", str(value.get("policy")))
        span.set_attribute("auwgent.taint.reason", str(value.get("reason")))

    def _helper_open(self, name: str) -> bool:
        spans = self.agents.get(name) or []
        return bool(spans) and spans[-1] is not self.run

    def agent_start(self, name: str, caller: str) -> None:
        """A helper starts working for ``caller``."""
        self.stack.append(name)
        span = self._start(f"invoke_agent {name}", self._parent(caller), {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name})  # fmt: skip
        self.agents.setdefault(name, []).append(span)

    def agent_end(self, name: str) -> None:
        spans = self.agents.get(name)
        if spans and spans[-1] is not self.run:
            spans.pop().end()
        if len(self.stack) > 1 and self.stack[-1] == name:
            self.stack.pop()

    def chat_start(self, agent: str, provider: str, model: str) -> Any:
        return self._start(f"chat {model}", self._parent(agent), {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
            "gen_ai.request.model": model, "gen_ai.agent.name": agent})  # fmt: skip

    def chat_end(
        self, span: Any, model: str, usage: Mapping[str, int] | None, finish: str | None,
        failed: BaseException | None,
    ) -> None:  # fmt: skip
        span.set_attribute("gen_ai.response.model", model)
        if usage:
            span.set_attribute("gen_ai.usage.input_tokens", usage.get("input_tokens", 0))
            span.set_attribute("gen_ai.usage.output_tokens", usage.get("output_tokens", 0))
        if finish:
            span.set_attribute("gen_ai.response.finish_reasons", [finish])
        if failed is not None:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(failed)))
            span.set_attribute("error.type", type(failed).__name__)
        span.end()

    def run_end(self, status: str) -> None:
        for spans in self.tools.values():  # calls that never reported back
            for span in spans:
                span.end()
        for spans in self.agents.values():  # helpers still at work (a handoff)
            for span in reversed(spans):
                if span is not self.run:
                    span.end()
        self.run.set_attribute("auwgent.intents", self.intents)
        self.run.set_attribute("auwgent.status", status)
        self.run.end()

"""Native function calling: the alternative codec.

Tools, workflows and helpers become provider functions named by kind prefix
(``tool__get_weather``, ``workflow__delete_user``, ``helper__DataAnalyzer``), so names never
collide; custom intents become ``intent__Planning`` functions whose call emits the intent. A
single structured output type is requested through the provider's response schema; a union
output becomes one ``output__<Type>`` function per variant. History is rebuilt as assistant
``tool_calls`` and one ``tool`` message per call id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from auwgent._records import field, record
from auwgent._typing import assert_never
from auwgent.runtime import jsontext
from auwgent.runtime.evaluate.schema import IRField, IRType, to_json_schema
from auwgent.runtime.protocol import section
from auwgent.runtime.protocol.blocks import (
    PartialBudget,
    TextStream,
    structured_budget,
    text_snapshot,
)
from auwgent.runtime.protocol.contract import (
    AssistantTurn,
    CallOutcome,
    Contract,
    DecodeEvent,
    FinalEvent,
    IntentKind,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.protocol.lazy import GrowingText
from auwgent.runtime.protocol.values import (
    MAX_BODY_CHARS,
    BodyError,
    JsonSnapshot,
    Repair,
    Stale,
    embedded_object,
    object_type,
    parse_body,
    parse_value,
)
from auwgent.runtime.providers.base import (
    ContentPart,
    Finish,
    FunctionSpec,
    Message,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

__all__ = ["NativeCodec", "NativeDecoder", "function_name", "parse_function_name"]

_PREFIXES: Mapping[str, IntentKind] = {
    "tool": "tool_call",
    "workflow": "workflow_call",
    "helper": "helper_call",
    "intent": "custom",
    "output": "response_schema",
}
_PREFIX_OF: Mapping[IntentKind, str] = {kind: prefix for prefix, kind in _PREFIXES.items()}
_CALL_KINDS = ("tool_call", "workflow_call", "helper_call")
_NOT_FOUND_LABEL: Mapping[str, str] = {
    "tool_call": "Tool",
    "workflow_call": "Workflow",
    "helper_call": "Helper",
    "custom": "Intent",
    "response_schema": "Output",
}


def function_name(kind: IntentKind, name: str) -> str:
    """The native function name for an intent kind and name: ``tool__get_weather``."""
    return f"{_PREFIX_OF[kind]}__{name}"


def parse_function_name(function: str) -> tuple[IntentKind | None, str]:
    """Split a native function name into its intent kind and name (kind None: no prefix)."""
    prefix, sep, name = function.partition("__")
    if sep and prefix in _PREFIXES and name:
        return _PREFIXES[prefix], name
    return None, function


@record(frozen=False)
class _Target:
    kind: IntentKind
    name: str
    fields: Sequence[IRField] = ()
    type_: IRType | None = None


def _targets(contract: Contract) -> dict[str, _Target]:
    """Every function the model may call, by function name."""
    targets: dict[str, _Target] = {}
    for spec in contract.callables:
        kind = section.BLOCK_KIND[spec.kind]
        targets[function_name(kind, spec.name)] = _Target(kind, spec.name, spec.params)
    for intent in contract.intents:
        targets[function_name("custom", intent["name"])] = _Target(
            "custom", intent["name"], intent["fields"]
        )
    variants = section.output_variants(contract)
    if len(variants) > 1:
        for name, type_ in variants:
            targets[function_name("response_schema", name)] = _Target(
                "response_schema", name, type_=type_
            )
    return targets


def _parameters(target: _Target, contract: Contract) -> dict[str, Any]:
    type_ = target.type_ if target.type_ is not None else object_type(target.fields)
    schema = to_json_schema(type_, contract.types)
    if schema.get("type") != "object":  # a non-object output still needs an object envelope
        schema = {
            "type": "object",
            "properties": {"value": schema},
            "required": ["value"],
            "additionalProperties": False,
        }
    return schema


# ---------------------------------------------------------------------------------------------
# Decoder


@record(frozen=False)
class _Call:
    index: int
    segment: int
    id: str | None = None
    function: str | None = None
    parts: GrowingText = field(default_factory=GrowingText)  # the argument text so far
    dirty: bool = True
    budget: PartialBudget = field(default_factory=structured_budget)
    snapshot: Mapping[str, Any] = field(default_factory=dict)
    json: JsonSnapshot = field(default_factory=JsonSnapshot)

    def arguments(self) -> str:
        return self.parts.text()


_TARGETS: dict[int, tuple[Contract, dict[str, _Target]]] = {}


def _cached_targets(contract: Contract) -> dict[str, _Target]:
    """``_targets`` of a contract, built once: a decoder is made for every model response and
    contracts are immutable and kept by the agent. Keyed by identity (the contract is held, so
    its id cannot be reused); read-only for the decoders."""
    found = _TARGETS.get(id(contract))
    if found is None or found[0] is not contract:
        if len(_TARGETS) >= 256:  # agents come and go in tests; keep the table small
            _TARGETS.clear()
        found = _TARGETS[id(contract)] = (contract, _targets(contract))
    return found[1]


class NativeDecoder:
    """Incremental decoder for native tool-call deltas and free text."""

    def __init__(self, contract: Contract, *, partials: bool = True) -> None:
        self.contract = contract
        self._partials = partials
        self._targets = _cached_targets(contract)
        self._variants = section.output_variants(contract)
        self._calls: dict[int, _Call] = {}
        self._segment = 0
        self._text = TextStream()
        self._text_segment: int | None = None
        self._text_parts = GrowingText()
        self._text_json = JsonSnapshot()
        self._schema_budget = structured_budget()
        self._schema_snapshot: Mapping[str, Any] | None = None
        self._events: list[DecodeEvent] = []

    def feed(self, event: StreamEvent) -> list[DecodeEvent]:
        """Consume one stream event."""
        if isinstance(event, ToolCallDelta):
            self._call_delta(event)
        elif isinstance(event, TextDelta):
            if event.text:
                self._text_delta(event.text)
        elif isinstance(event, ContentPart | Usage | Finish):
            pass  # not the decoder's: the model call reads them
        else:
            assert_never(event)
        events, self._events = self._events, []
        return events

    def close(self) -> list[DecodeEvent]:
        """End of stream: finish open calls in index order, then the free text."""
        for index in sorted(self._calls):
            self._finish(self._calls[index])
        self._finish_text()
        events, self._events = self._events, []
        return events

    # -- calls --------------------------------------------------------------------------------

    def _call_delta(self, delta: ToolCallDelta) -> None:
        call = self._calls.get(delta.index)
        if call is None:
            call = self._calls[delta.index] = _Call(delta.index, self._next_segment())
        call.id = delta.id or call.id
        call.function = delta.name or call.function
        if delta.arguments:
            call.parts.add(delta.arguments)
            call.dirty = True
        # A call is final only when the stream ends (close): fragments may still follow its
        # first balanced `}` (a duplicate key, trailing text), and how the provider cut the
        # arguments into fragments must not change what runs.
        if self._partials:
            self._call_partial(call)

    def _call_partial(self, call: _Call) -> None:
        target = self._targets.get(call.function or "")
        size = call.parts.size
        if target is None or not call.dirty or not call.budget.allow(size, size):
            return
        if size <= MAX_BODY_CHARS:  # longer: the final read refuses it, so nothing is read
            call.json.fresh = call.budget.fresh
            try:
                call.snapshot = _payload(target, call.arguments(), self.contract, partial=call.json)
            except (BodyError, KeyError, Stale):
                pass
        self._events.append(
            PartialEvent(target.kind, target.name, call.segment, call.snapshot, call.parts.prefix())
        )
        call.dirty = False

    def _finish(self, call: _Call) -> None:
        text = call.arguments()
        function = call.function or ""
        raw = f"{function}({text})"
        target = self._targets.get(function)
        if target is None:
            kind, name = parse_function_name(function)
            # Worded as the manual's tool_error example ("Tool not found: search_docs").
            what = _NOT_FOUND_LABEL.get(kind or "tool_call", "Function")
            message = f"{what} not found: {name or function} (no function {function!r} here)"
            self._events.append(RejectedEvent(kind, name, call.segment, message, raw, call.id))
            return
        repairs: list[Repair] = []
        try:
            payload = _payload(target, text, self.contract, partial=None, repairs=repairs)
        except BodyError as error:
            message = f"{function}: {error}"
            self._events.append(
                RejectedEvent(target.kind, target.name, call.segment, message, raw, call.id)
            )
            return
        self._events.append(
            FinalEvent(
                target.kind, target.name, call.segment, payload, raw, call.id, tuple(repairs)
            )
        )

    # -- text ---------------------------------------------------------------------------------

    def _text_delta(self, text: str) -> None:
        self._text_parts.add(text)
        self._text.push(text)
        if self._text_segment is None and self._text.started:
            self._text_segment = self._next_segment()
        if not self._partials:
            if self._text.has_delta():
                self._text.take_delta()  # keep the pending list from growing
            return
        if self._text_segment is None or not self._text.has_delta():
            return
        if len(self._variants) == 1:
            self._schema_partial(self._text_segment)
            return
        if self._variants:
            return  # a union answer must come as an output function: no text partials
        delta = self._text.take_delta()
        snapshot = text_snapshot(self._text_parts)
        source = self._text_parts.prefix(trim=True)
        self._events.append(
            PartialEvent("response_text", None, self._text_segment, snapshot, source, delta)
        )

    def _schema_partial(self, segment: int) -> None:
        """The text is the single output object (provider-enforced schema) still streaming."""
        self._text.take_delta()  # no text deltas here; keep the pending list from growing
        size = self._text_parts.size
        if not self._schema_budget.allow(size, size):
            return
        name, type_ = self._variants[0]
        if size <= MAX_BODY_CHARS:  # longer: the final read refuses it, so nothing is read
            self._text_json.fresh = self._schema_budget.fresh
            try:
                response = parse_value(
                    self._text_parts.text(),
                    type_,
                    self.contract.types,
                    partial=True,
                    stream=self._text_json,
                )
                self._schema_snapshot = {"type": name, "response": response}
            except (BodyError, KeyError):
                return
            except Stale:  # too dear to read whole now: the last snapshot again
                pass
        if self._schema_snapshot is not None:
            source = self._text_parts.prefix()
            self._events.append(
                PartialEvent("response_schema", name, segment, self._schema_snapshot, source)
            )

    def _finish_text(self) -> None:
        raw = self._text_parts.text()
        text = raw.strip()
        if self._text_segment is None or not text or self._calls:
            return  # no text, or commentary beside calls (kept in history only)
        segment = self._text_segment
        if not self._variants:
            self._events.append(FinalEvent("response_text", None, segment, {"text": text}, raw))
            return
        if len(self._variants) > 1:
            names = ", ".join(function_name("response_schema", n) for n, _ in self._variants)
            message = f"answer by calling one of: {names}"
            self._events.append(RejectedEvent("response_schema", None, segment, message, raw))
            return
        name, type_ = self._variants[0]
        repairs: list[Repair] = []
        try:
            response = parse_value(
                embedded_object(text), type_, self.contract.types, repairs=repairs
            )
        except BodyError as error:
            message = f"the answer must be a {name} object: {error}"
            self._events.append(RejectedEvent("response_schema", name, segment, message, raw))
            return
        payload = {"type": name, "response": response}
        self._events.append(
            FinalEvent("response_schema", name, segment, payload, raw, repairs=tuple(repairs))
        )

    def _next_segment(self) -> int:
        self._segment += 1
        return self._segment - 1


def _payload(
    target: _Target,
    text: str,
    contract: Contract,
    *,
    partial: JsonSnapshot | None,
    repairs: list[Repair] | None = None,
) -> dict[str, Any]:
    """A call's payload; ``partial`` is its snapshot builder while the arguments stream."""
    types = contract.types
    streaming = partial is not None
    stream = partial if text else None  # no text yet: not the start of the arguments
    if target.kind == "response_schema":
        assert target.type_ is not None
        response = parse_value(
            text or "{}",
            target.type_,
            types,
            partial=streaming,
            stream=stream,
            repairs=repairs,
        )
        return {"type": target.name, "response": response}
    if text.strip() == "null":  # some providers send null for a call without arguments
        text = ""
    args = parse_body(text, target.fields, types, partial=streaming, stream=stream, repairs=repairs)
    if target.kind == "custom":
        return args
    return {"type": target.name, "args": args}


# ---------------------------------------------------------------------------------------------
# The codec


class NativeCodec:
    """Provider function calling; the same intents as the block protocol."""

    name: Literal["blocks", "native"] = "native"

    def system_section(self, contract: Contract) -> str:
        """A short note: how to answer a union output, and the selected examples."""
        parts: list[str] = []
        if contract.code_api is not None:
            parts.append(contract.code_api.section)
        if len(section.output_variants(contract)) > 1:
            names = ", ".join(
                function_name("response_schema", n) for n, _ in section.output_variants(contract)
            )
            parts.append(f"Give your final answer by calling exactly one of: {names}.")
        if contract.examples:
            lines = ["Example calls:"]
            for example in contract.examples:
                kind = section.BLOCK_KIND["workflow" if example["kind"] == "workflow" else "tool"]
                args = json.dumps(example.get("args") or {}, ensure_ascii=False)
                lines.append(f"- {function_name(kind, example['target'])}({args})")
            parts.append("\n".join(lines))
        return "\n\n".join(parts)

    def functions(self, contract: Contract) -> tuple[FunctionSpec, ...]:
        """Tools, workflows, helpers, custom intents and union output variants."""
        described = {spec.name: section.callable_description(spec) for spec in contract.callables}
        intents = {i["name"]: i.get("description") or "" for i in contract.intents}
        out: list[FunctionSpec] = []
        for function, target in _targets(contract).items():
            if target.kind in _CALL_KINDS:
                description = described.get(target.name, "")
            elif target.kind == "custom":
                description = intents.get(target.name) or f"Emit the {target.name} intent."
            else:
                description = f"Final answer as a {target.name}."
            out.append(FunctionSpec(function, description, _parameters(target, contract)))
        return tuple(out)

    def response_schema(self, contract: Contract) -> Mapping[str, Any] | None:
        """``{"name", "schema"}`` when the output is a single structured type."""
        variants = section.output_variants(contract)
        if len(variants) != 1:
            return None
        name, type_ = variants[0]
        return {"name": name, "schema": to_json_schema(type_, contract.types)}

    def decoder(self, contract: Contract, *, partials: bool = True) -> NativeDecoder:
        """A fresh decoder for one response (``partials=False``: finals only)."""
        return NativeDecoder(contract, partials=partials)

    def assistant_message(self, turn: AssistantTurn) -> Message:
        """The free text plus the calls as native ``tool_calls``.

        Only tool, workflow and helper calls get results, so only they are replayed as
        ``tool_calls`` (a provider rejects a call left unanswered); an emitted custom intent or
        output function is noted in the text instead.
        """
        calls: list[ToolCall] = []
        notes: list[str] = []
        for event in turn.calls:
            if event.kind in _CALL_KINDS and event.name is not None:
                args = jsontext.text(dict(event.payload.get("args", {})))
                function = _called_name(event)
                calls.append(ToolCall(event.call_id or f"call_{event.segment}", function, args))
            elif event.name is not None:
                payload = json.dumps(dict(event.payload), ensure_ascii=False, default=str)
                notes.append(f"({function_name(event.kind, event.name)}: {payload})")
        content = "\n".join([turn.text, *notes]) if notes else turn.text
        return Message(role="assistant", content=content, tool_calls=tuple(calls))

    def results_messages(self, outcomes: Sequence[CallOutcome]) -> list[Message]:
        """One ``tool`` message per call id."""
        return [_tool_message(o) for o in outcomes]

    def feedback_message(self, text: str) -> Message:
        """A runtime note as a user message."""
        return Message(role="user", content=text.strip())


_RAW_CALL = re.compile(r"([A-Za-z0-9_.\-]+)\(")


def _called_name(event: FinalEvent) -> str:
    """The function name the model used (kept in ``raw`` as ``name(arguments)``), so that a
    call to an unknown function is replayed as it was made."""
    match = _RAW_CALL.match(event.raw) if event.call_id is not None else None
    if match:
        return match.group(1)
    assert event.name is not None
    return function_name(event.kind, event.name)


def _tool_message(outcome: CallOutcome) -> Message:
    if outcome.status == "ok":
        content = section.render_result(outcome.result)
    elif outcome.status == "error":
        content = f"error: {outcome.error or 'failed'}"
    else:
        content = "skipped: the application skipped this call"
    kind = section.BLOCK_KIND[outcome.kind]
    return Message(
        role="tool",
        content=content,
        tool_call_id=outcome.call_id,
        name=function_name(kind, outcome.name),
        parts=outcome.parts,
    )

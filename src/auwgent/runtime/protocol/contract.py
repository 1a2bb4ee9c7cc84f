"""The contract between the engine and a protocol codec (blocks or native).

The engine builds a :class:`Contract` for the agent that is about to call the model: what the
model may call, which custom intents it may emit, and what its output must be. A codec renders
that contract into the request (a protocol section in the system prompt, or native functions)
and decodes the model's stream back into :data:`DecodeEvent` values. The engine turns decode
events into intents; the codec never runs anything.

All IR values here (types, fields, intents) are the plain JSON dicts of ``docs/ir.md``, typed
by :mod:`auwgent.ir.model`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from auwgent._records import record
from auwgent.runtime.evaluate.schema import IRField, IRType
from auwgent.runtime.parts import Part
from auwgent.runtime.protocol.lazy import TextPrefix
from auwgent.runtime.providers.base import FunctionSpec, Message, StreamEvent

if TYPE_CHECKING:
    from auwgent.ir.model import Approval, Example, Intent

CallKind = Literal["tool", "workflow", "helper"]
IntentKind = Literal[
    "response_text", "response_schema", "tool_call", "workflow_call", "helper_call", "custom"
]


@record
class CallableSpec:
    """Something the model may call. ``params`` are IR Fields in declaration order.

    A helper whose input is ``Text`` has one string param named ``input``; a structured helper
    input has its declared fields.
    """

    kind: CallKind
    name: str
    description: str
    params: tuple[IRField, ...]
    returns: IRType
    configured: bool = True  # False: no implementation; description gets "[NOT CONFIGURED]"
    examples: tuple[Mapping[str, Any], ...] = ()  # the tool's own @example argument objects
    approval: Approval | None = None  # when @approval
    # Its lone string parameter takes a block's body as it is (code mode's ``execute_code``):
    # no field parsing; a surrounding code fence and common indentation are removed.
    raw_body: bool = False


@record
class CodeApi:
    """Code mode (docs/code-mode.md): the model's one callable is ``execute_code``; its code
    calls ``callables`` as functions of a sandboxed module ``api``."""

    callables: tuple[CallableSpec, ...]  # what the agent may call, as without code mode
    stub: str  # the module's typed Python stub (.pyi source)
    section: str  # the system prompt's part that teaches it (stub included)


@record
class Contract:
    agent: str
    callables: tuple[CallableSpec, ...]
    intents: tuple[Intent, ...]  # the custom intents
    output: IRType  # {"kind": "text"} or a structured type
    types: Mapping[str, IRType]  # the IR document's named types
    examples: tuple[Example, ...] = ()  # already selected
    code_api: CodeApi | None = None  # set in code mode: ``callables`` is then execute_code

    def callable(self, kind: CallKind, name: str) -> CallableSpec | None:
        for spec in self.callables:
            if spec.kind == kind and spec.name == name:
                return spec
        return None


@record
class PartialEvent:
    """A block (or native call) still streaming.

    ``snapshot`` has the shape of the final payload so far: ``{"text": ...}`` for text,
    ``{"type", "args"}`` for calls, ``{"type", "response"}`` for schema, the fields for custom
    intents. ``delta`` is set for text only: the text added since the last partial. ``raw``
    (the body so far) is made from ``source`` when read, and so is a text snapshot's
    ``"text"`` (see :mod:`~auwgent.runtime.protocol.lazy`): building a partial costs what
    arrived, not the text so far.
    """

    kind: IntentKind
    name: str | None  # callable / type / custom intent name; None for response_text
    segment: int
    snapshot: Mapping[str, Any]
    source: str | TextPrefix  # the body so far, or where to make it from
    delta: str | None = None

    @property
    def raw(self) -> str:
        """The body so far (a copy of it, made on each read for a streaming source)."""
        source = self.source
        return source if type(source) is str else source.text()  # type: ignore[union-attr]


@record
class FinalEvent:
    """A complete block. ``payload`` is the final intent payload:

    - response_text: ``{"text": str}``
    - response_schema: ``{"type": str, "response": dict}`` (aligned, not yet validated)
    - tool_call / workflow_call / helper_call: ``{"type": name, "args": dict}`` (aligned, not
      yet validated)
    - custom: the intent's fields dict (aligned, not yet validated)

    ``repairs`` lists what the decoder repaired to read it (``{"kind", "path", "detail"}``
    dicts, docs/protocol.md); middleware sees them as ``ctx["repairs"]``.
    """

    kind: IntentKind
    name: str | None
    segment: int
    payload: Mapping[str, Any]
    raw: str
    call_id: str | None = None  # native tool-call id, when there is one
    repairs: tuple[Mapping[str, str], ...] = ()


@record
class RejectedEvent:
    """A block the decoder could not turn into a payload without guessing (ambiguous duplicate
    keys, unknown block kind or name, unparseable body). The engine reports it back to the
    model (and as ``tool_error`` for calls) and never runs anything for it."""

    kind: IntentKind | None
    name: str | None
    segment: int
    message: str
    raw: str
    call_id: str | None = None


DecodeEvent = PartialEvent | FinalEvent | RejectedEvent


class Decoder(Protocol):
    """Incremental: work per event is proportional to the event, not to the text so far."""

    def feed(self, event: StreamEvent) -> list[DecodeEvent]: ...

    def close(self) -> list[DecodeEvent]:
        """End of stream: flush what is open (recovering a block missing its closer)."""
        ...


@record
class CallOutcome:
    """What happened to one call in a round, fed back to the model.

    ``"pending"``: the call waits for a deferred approval (the run pauses; the engine never
    gives a pending outcome to a codec). ``request_id`` is its approval request's id.
    """

    kind: CallKind
    name: str
    args: Mapping[str, Any]
    status: Literal["ok", "error", "skipped", "pending"]
    result: Any = None  # for "ok": the value the model should see
    error: str | None = None  # for "error"
    call_id: str | None = None
    request_id: str | None = None
    # For "ok": images the tool returned for the model to see (auwgent.runtime.parts.tool_parts).
    parts: tuple[Part, ...] = ()


@record
class AssistantTurn:
    """What the model said in one response, kept in history."""

    text: str  # the raw text of the response (blocks) or its free text (native)
    calls: tuple[FinalEvent, ...] = ()  # native calls, with their call_id


class Codec(Protocol):
    name: Literal["blocks", "native"]

    def system_section(self, contract: Contract) -> str:
        """Text appended to the system prompt (the protocol section); may be empty."""
        ...

    def functions(self, contract: Contract) -> tuple[FunctionSpec, ...]:
        """Native functions offered to the model; empty for blocks."""
        ...

    def response_schema(self, contract: Contract) -> Mapping[str, Any] | None:
        """Native structured-output schema, or None."""
        ...

    def decoder(self, contract: Contract, *, partials: bool = True) -> Decoder:
        """A fresh decoder for one response. With ``partials=False`` it emits no
        ``PartialEvent`` (the engine asks so when no one listens); finals are the same."""
        ...

    def assistant_message(self, turn: AssistantTurn) -> Message: ...

    def results_messages(self, outcomes: Sequence[CallOutcome]) -> list[Message]:
        """One round's outcomes as history messages (blocks: one compact user message)."""
        ...

    def feedback_message(self, text: str) -> Message:
        """A runtime note to the model (validation errors on output, handoff notices)."""
        ...

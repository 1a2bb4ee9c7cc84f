"""One model call of a run (:class:`ModelCaller`): build the request, stream it, decode the
events as they come and dispatch them, and return what the response produced (:class:`Round`).

Per call the system prompt is assembled (the rendered config prompt, the codec's protocol
section, a context section, the current date and time — stable to dynamic, so consecutive
calls share the longest prefix) and ``onLLMStart`` may replace it. The provider's events go
through the codec's decoder; every decoded event is dispatched at once: partials to partial
hooks, finals to ``onIntent`` middleware and the handlers. Calls (tools, workflows, helpers)
start as soon as their block closes and run concurrently; the round ends when all have run.

The phases are methods: :meth:`ModelCaller.before_request` (budgets, before each request),
:meth:`ModelCaller.model_call` (around each model call: stream, decode, count).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Coroutine, Mapping, Sequence
from typing import Any, Protocol, cast

from auwgent._records import replace
from auwgent._typing import assert_never
from auwgent.errors import AuwgentError, FallbackError, ProviderError
from auwgent.runtime.budgets import Budgets
from auwgent.runtime.calls import CallRunner
from auwgent.runtime.config import provider_key
from auwgent.runtime.context_budget import ContextBudget
from auwgent.runtime.core import AgentCore
from auwgent.runtime.dispatch import IntentDispatcher
from auwgent.runtime.evaluate import schema
from auwgent.runtime.intents import COMPLETE_INTENT
from auwgent.runtime.invocation import CALL_KINDS, Invocation
from auwgent.runtime.protocol.contract import (
    CallOutcome,
    Codec,
    Contract,
    Decoder,
    FinalEvent,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.protocol.values import parse_body
from auwgent.runtime.providers.base import (
    REASONING_KINDS,
    ContentPart,
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from auwgent.runtime.run_memory import RunMemory
from auwgent.runtime.services import Services
from auwgent.runtime.session import Session, TokenUsage, Turn
from auwgent.runtime.steps import StepRunner
from auwgent.runtime.taint import TaintGuard
from auwgent.runtime.tracing import RunTrace

__all__ = ["ModelCaller", "Round", "drop_calls", "output_names"]

log = logging.getLogger("auwgent")

Call = Coroutine[Any, Any, CallOutcome] | asyncio.Task[CallOutcome]
Decoded = PartialEvent | FinalEvent | RejectedEvent


class Round:
    """What one model response produced."""

    # A plain class: made for every model call, and a dataclass's generated __init__ (with a
    # default factory per list) costs twice these assignments.
    __slots__ = (
        "calls",
        "chunks",
        "customs",
        "error",
        "finish",
        "model",
        "native_calls",
        "outcomes",
        "output",
        "partial_failures",
        "problems",
        "reasoning",
        "streamed",
        "texts",
        "truncated",
        "usage",
    )

    def __init__(self, streamed: bool) -> None:
        self.streamed = streamed
        self.chunks: list[str] = []
        # The calls of the response, in order: tasks started as each call closed when the
        # answer streams; in an answer that came whole, coroutines started when the response
        # is read (one call runs inline: a task would cost trips through the event loop, for
        # nothing).
        self.calls: list[Call] = []
        self.outcomes: list[CallOutcome] = []
        self.native_calls: list[FinalEvent] = []
        self.texts: list[str] = []
        self.output: Mapping[str, Any] | None = None
        self.problems: list[str] = []
        self.customs = 0
        self.error: BaseException | None = None
        self.model = ""  # "<provider>:<model>" that answered
        self.usage: TokenUsage | None = None  # the provider's token counts, when it sent them
        self.finish: Finish | None = None  # why the model stopped, as the provider said
        # (handler, segment) of the partial handlers that failed, reported once each.
        self.partial_failures: set[tuple[str, int]] = set()
        self.truncated = False  # the text answer was cut by the output limit
        self.reasoning: list[ContentPart] = []  # thinking blocks, sent back with the answer

    def start(self, call: Coroutine[Any, Any, CallOutcome]) -> None:
        """Start a decoded call now (streamed answer) or once the answer is read (whole)."""
        self.calls.append(asyncio.ensure_future(call) if self.streamed else call)

    @property
    def finish_reason(self) -> str | None:
        return self.finish.reason if self.finish is not None else None


class _Host(Protocol):
    """What a model call reads of its run (:class:`~auwgent.runtime.engine.Run`)."""

    @property
    def core(self) -> AgentCore: ...
    @property
    def services(self) -> Services: ...
    @property
    def dispatch(self) -> IntentDispatcher: ...
    @property
    def calls(self) -> CallRunner: ...
    @property
    def budgets(self) -> Budgets: ...
    @property
    def memory(self) -> RunMemory: ...
    @property
    def taint(self) -> TaintGuard: ...
    @property
    def steps(self) -> StepRunner | None: ...
    @property
    def context_budget(self) -> ContextBudget: ...
    @property
    def trace(self) -> RunTrace | None: ...
    @property
    def session(self) -> Session: ...
    @property
    def turn(self) -> Turn | None: ...
    @property
    def ctx(self) -> dict[str, Any]: ...
    @property
    def context(self) -> dict[str, Any]: ...
    @property
    def persona(self) -> str | None: ...


class ModelCaller:
    """The model calls of one run (see the module docstring)."""

    def __init__(self, run: _Host) -> None:
        self._run = run

    async def round(self, inv: Invocation, codec: Codec, contract: Contract, top: bool) -> Round:
        """One model call: prompt, stream, decode, dispatch; calls are awaited before returning."""
        run = self._run
        # Partials are built, and the answer streamed on the wire, only for someone to see
        # them: a partial handler or middleware hook, or a consumer of agent.stream().
        partials = run.services.wants_partials or run.dispatch.sink is not None
        rnd = Round(partials)
        system = await self._system(inv, codec, contract, top, rnd)
        if system is None:
            return rnd
        functions, response_schema = run.core.request_parts(codec, contract)
        cfg = inv.agent["configs"][inv.config_name]
        request = ModelRequest(
            model=str(cfg["model"]["model"]),
            system=system,
            messages=tuple(inv.history),
            functions=functions,
            response_schema=response_schema,
            options=cfg["model"].get("options") or {},
            stream=partials,
            contract=contract,
        )
        fitted = await self.before_request(inv, request, rnd)
        if fitted is None:
            return rnd
        await self.model_call(inv, fitted, codec.decoder(contract, partials=partials), rnd)
        try:
            rnd.outcomes = await _outcomes(rnd.calls)
        except asyncio.CancelledError:
            drop_calls(rnd.calls)
            raise
        return rnd

    async def _system(
        self, inv: Invocation, codec: Codec, contract: Contract, top: bool, rnd: Round
    ) -> str | None:
        """The system prompt as ``onLLMStart`` leaves it (``None``: the hook failed)."""
        run = self._run
        system = run.core.system_prompt(
            inv, codec, contract, run.context, persona=run.persona, memory=run.memory.section
        )
        system = run.taint.notice(inv, system)
        run.ctx["activeAgent"] = inv.name
        run.ctx["systemPrompt"] = system
        try:
            if run.services.middleware:
                system = await run.services.middleware.llm_start(system, run.ctx)
        except Exception as exc:
            rnd.error = exc
            return None
        run.ctx["systemPrompt"] = system  # what is really sent, for later hooks of this call
        if top:
            run.session["system_prompt"] = system
        return system

    async def before_request(
        self, inv: Invocation, request: ModelRequest, rnd: Round
    ) -> ModelRequest | None:
        """Before each model request: the request fitted to the context window (compacted
        when the policy says so, :mod:`.context_budget`), or ``None`` (and the round's error)
        when it must not be made: it cannot fit, or a budget is spent."""
        try:
            request = await self._run.context_budget.fit(inv, request)
        except Exception as exc:
            rnd.error = exc
            return None
        over = self._run.budgets.check()
        if over is not None:
            rnd.error = AuwgentError(over)
            return None
        return request

    async def model_call(
        self, inv: Invocation, request: ModelRequest, decoder: Decoder, rnd: Round
    ) -> None:
        """Around each model call: stream ``request``, decode and dispatch every event, then
        record the call (the trace's span, the turn's ``model_calls``, the budgets)."""
        run = self._run
        model = inv.agent["configs"][inv.config_name]["model"]
        span = None
        if run.trace is not None:
            span = run.trace.chat_start(inv.name, provider_key(model), str(model["model"]))
        try:
            await self._stream_decoded(inv, request, decoder, rnd)
        except Exception as exc:
            rnd.error = exc
        except asyncio.CancelledError:
            drop_calls(rnd.calls)  # the run was cancelled (timeout): leave nothing behind
            raise
        if span is not None and run.trace is not None:
            usage = cast("Mapping[str, int] | None", rnd.usage)
            run.trace.chat_end(span, rnd.model, usage, rnd.finish_reason, rnd.error)
        run.budgets.count(run.turn, rnd.model, rnd.finish_reason, rnd.usage)
        run.context_budget.observe(request, rnd.usage)  # calibrates the context estimates

    async def _stream_decoded(
        self, inv: Invocation, request: ModelRequest, decoder: Decoder, rnd: Round
    ) -> None:
        contract = request.contract
        assert contract is not None
        cfg = inv.agent["configs"][inv.config_name]
        pool = self._run.services.pool
        # The agent keeps its providers and HTTP client across runs (connections are reused).
        # Without fallback models the provider's events are read directly: one async
        # generator less to resume per event.
        if cfg.get("fallback"):
            events = self._fallback(cfg, request, rnd)
        else:
            rnd.model = pool.answering(cfg["model"])
            events = pool.provider(cfg["model"]).stream(request)
        steps = self._run.steps
        if steps is not None:  # a durable step: recorded, or replayed from its record
            events = steps.model(events)
        dispatch = self._run.dispatch
        async for event in events:
            self._take(inv, event, rnd)
            for decoded in decoder.feed(event):
                if type(decoded) is PartialEvent:  # per chunk: no coroutine when no hook
                    hooks = dispatch.partial(inv.name, contract, decoded, rnd.partial_failures)
                    if hooks is not None:
                        await hooks
                else:
                    await self._decoded(inv, contract, rnd, decoded)
        await self._close(inv, contract, rnd, decoder.close())

    def _take(self, inv: Invocation, event: StreamEvent, rnd: Round) -> None:
        """What the round keeps of a provider event besides its decoded intents."""
        if isinstance(event, TextDelta):
            rnd.chunks.append(event.text)
        elif isinstance(event, Usage):
            rnd.usage = _usage(event)
        elif isinstance(event, Finish):
            rnd.finish = event
        elif isinstance(event, ContentPart):
            self._content_part(inv, event)
            if event.kind in REASONING_KINDS:
                rnd.reasoning.append(event)
        elif not isinstance(event, ToolCallDelta):  # a call's fragments: the decoder's alone
            assert_never(event)

    async def _fallback(
        self, cfg: Mapping[str, Any], request: ModelRequest, rnd: Round
    ) -> AsyncIterator[StreamEvent]:
        """The events of one model call, with the config's ``fallback`` models behind it.

        When a model fails with a retryable error (after its own retries: connection errors,
        5xx, 429) before it produced any event, the same request goes to the next model of
        ``fallback``. Once an event is out the failure passes through: part of the answer may
        already have been acted on. ``rnd.model`` names the model that answered, and the
        turn's ``model_calls`` records it. When more than one model was tried and none
        answered, the :class:`FallbackError` lists each attempt with its error.
        """
        pool = self._run.services.pool
        models = [cfg["model"], *cfg.get("fallback", ())]
        failed: list[tuple[str, ProviderError]] = []
        for index, model in enumerate(models):
            if index:
                request = replace(
                    request, model=str(model["model"]), options=model.get("options") or {}
                )
            rnd.model = pool.answering(model)
            started = False
            try:
                async for event in pool.provider(model).stream(request):
                    started = True
                    yield event
            except ProviderError as exc:
                if started:
                    raise
                failed.append((rnd.model, exc))
                if exc.retryable and index < len(models) - 1:
                    following = pool.answering(models[index + 1])
                    log.warning(
                        "%s failed before answering (%s); the request goes to %s",
                        rnd.model,
                        exc,
                        following,
                    )
                    continue
                if len(failed) > 1:
                    raise FallbackError(failed) from exc
                raise
            return

    def _content_part(self, inv: Invocation, part: ContentPart) -> None:
        """Keep a non-text part of the answer (an image, code the model ran) in the turn."""
        turn = self._run.turn
        if turn is not None:
            entry = {"agent": inv.name, "kind": part.kind, "data": part.data}
            # An optional key of the turn (docs/sessions.md), present only when there are parts.
            cast("dict[str, Any]", turn).setdefault("parts", []).append(entry)

    # -- decoded events ----------------------------------------------------------------------

    async def _close(
        self, inv: Invocation, contract: Contract, rnd: Round, events: Sequence[Decoded]
    ) -> None:
        """What the decoder finishes at the end of the stream, read with the finish reason.

        After an output limit or a refusal, whatever the stream left open was cut off: it
        never runs and the round ends with an error. A cut text answer is delivered as
        ``truncated``; a refusal is an error even when nothing was left open.
        """
        stop = _abnormal(rnd.finish)
        for decoded in events:
            if stop is None or isinstance(decoded, PartialEvent):
                await self._decoded(inv, contract, rnd, decoded)
            elif stop == "length" and _is_text(decoded, contract):
                rnd.truncated = True
                await self._decoded(inv, contract, rnd, decoded)
            elif rnd.error is None:
                rnd.error = AuwgentError(_stopped(rnd.finish, decoded))
        if stop is None or rnd.error is not None:
            return
        produced = rnd.texts or rnd.calls or rnd.customs or rnd.output is not None
        if stop != "length" or not produced:
            rnd.error = AuwgentError(_stopped(rnd.finish, None))

    async def _decoded(
        self, inv: Invocation, contract: Contract, rnd: Round, event: Decoded
    ) -> None:
        if isinstance(event, PartialEvent):
            hooks = self._run.dispatch.partial(inv.name, contract, event, rnd.partial_failures)
            if hooks is not None:
                await hooks
        elif isinstance(event, RejectedEvent):
            self._rejected(inv, rnd, event)
        elif not isinstance(event, FinalEvent):
            assert_never(event)
        elif event.kind in CALL_KINDS:
            if event.call_id is not None:
                rnd.native_calls.append(event)
            rnd.start(self._run.calls.call(inv, contract, event))
        elif event.kind == "response_text":
            await self._text(inv, contract, rnd, event)
        else:
            # A native function call that only carries an intent (custom or output) is kept
            # in the assistant message; the codec writes it into history as it sees fit, and
            # it needs no result message.
            if event.call_id is not None:
                rnd.native_calls.append(event)
            if event.kind == "response_schema":
                await self._schema(inv, contract, rnd, event)
            else:
                await self._custom(inv, contract, rnd, event)

    async def _text(
        self, inv: Invocation, contract: Contract, rnd: Round, event: FinalEvent
    ) -> None:
        if contract.output["kind"] != "text":
            return
        text = str(event.payload.get("text", ""))
        rnd.texts.append(text)
        value: dict[str, Any] = {"text": text}
        if rnd.truncated:
            value["truncated"] = True
        await self._run.dispatch.emit(
            "response_text", value, inv.name, event.raw, repairs=event.repairs
        )

    def _rejected(self, inv: Invocation, rnd: Round, event: RejectedEvent) -> None:
        if event.kind in CALL_KINDS or (event.kind is None and event.call_id is not None):
            kind = CALL_KINDS.get(event.kind or "tool_call", "tool")
            name = event.name or "unknown"
            args = _refused_args(inv, name, event, self._run.core.doc["types"])
            if event.call_id is not None:
                payload = {"type": name, "args": args}
                call = FinalEvent(
                    event.kind or "tool_call",
                    name,
                    event.segment,
                    payload,
                    event.raw,
                    event.call_id,
                )
                rnd.native_calls.append(call)
            refusal = self._run.calls.refuse(inv, kind, name, args, event.message, event.call_id)
            rnd.start(refusal)
            return
        rnd.problems.append(event.message)

    async def _schema(
        self, inv: Invocation, contract: Contract, rnd: Round, event: FinalEvent
    ) -> None:
        types = self._run.core.doc["types"]
        payload = event.payload
        name = str(payload.get("type") or event.name or "")
        allowed = output_names(inv.agent, types)
        if name not in allowed:
            rnd.problems.append(
                f"[schema: {name}] is not an output of {inv.name}; use one of: {', '.join(allowed)}"
            )
            return
        type_ = types[name] if name in types else contract.output
        response = payload.get("response")
        errors = schema.validate(response, type_, types)
        if errors:
            rnd.problems.append(f"Your {name} output is invalid: " + "; ".join(errors))
            return
        value = {"type": name, "response": response}
        rnd.output = value
        await self._run.dispatch.emit(
            "response_schema", value, inv.name, event.raw, repairs=event.repairs
        )

    async def _custom(
        self, inv: Invocation, contract: Contract, rnd: Round, event: FinalEvent
    ) -> None:
        name = str(event.name)
        spec = next((i for i in contract.intents if i["name"] == name), None)
        if spec is None:
            rnd.problems.append(f"{name} is not an intent you can emit")
            return
        payload = dict(event.payload)
        obj = schema.object_type(spec["fields"])
        errors = schema.validate(payload, obj, self._run.core.doc["types"])
        if errors:
            rnd.problems.append(f"Your {name} intent is invalid: " + "; ".join(errors))
            return
        rnd.customs += 1
        if name == COMPLETE_INTENT and inv.handoff == "user":
            inv.completed = True
            summary = payload.get("summary")
            inv.summary = summary if isinstance(summary, str) else None
        await self._run.dispatch.emit(name, payload, inv.name, event.raw, repairs=event.repairs)


# ---------------------------------------------------------------------------------------------
# Pure helpers


async def _outcomes(calls: Sequence[Call]) -> list[CallOutcome]:
    """The outcomes of a round's calls, in order, once all have run."""
    if len(calls) == 1 and not isinstance(calls[0], asyncio.Task):
        return [await calls[0]]
    tasks = [asyncio.ensure_future(call) for call in calls]
    # Calls that already finished need no waiting: asyncio.wait would still cost two
    # trips through the event loop (a done-callback per task, then the wake-up).
    pending = [task for task in tasks if not task.done()]
    if pending:
        await asyncio.wait(pending)
    return [task.result() for task in tasks]


def drop_calls(calls: Sequence[Call]) -> None:
    """Cancel a round's started calls and discard the ones not started."""
    for call in calls:
        if isinstance(call, asyncio.Task):
            call.cancel()
        else:
            call.close()


def output_names(agent: Mapping[str, Any], types: Mapping[str, Any]) -> list[str]:
    """The names the model may give its structured output (the output type's variants)."""
    out = agent["output"]
    if out["kind"] == "ref":
        return [out["name"]]
    if out["kind"] == "union":
        return [v["name"] for v in out["variants"] if v["kind"] == "ref"] or [
            schema.describe(out, types)
        ]
    return [schema.describe(out, types)]


def _usage(event: Usage) -> TokenUsage:
    given = [n for n in (event.input_tokens, event.output_tokens) if n is not None]
    usage: TokenUsage = {
        "input_tokens": event.input_tokens or 0,
        "output_tokens": event.output_tokens or 0,
        "total_tokens": sum(given),
    }
    # Prompt-cache counts (part of input_tokens), only from providers that report them.
    if event.cache_read_tokens is not None:
        usage["cache_read_tokens"] = event.cache_read_tokens
    if event.cache_write_tokens is not None:
        usage["cache_write_tokens"] = event.cache_write_tokens
    return usage


#: Finish reasons that mean the provider stopped the answer: never a success, never re-asked.
_REFUSED = frozenset(
    {
        "content_filter",
        "malformed_function_call",
        "safety",
        "recitation",
        "blocklist",
        "prohibited_content",
        "spii",
        "image_safety",
        "refusal",
        "pause_turn",
    }
)


def _abnormal(finish: Finish | None) -> str | None:
    """``"length"`` for an answer cut by the output limit, the reason for a refused one,
    else ``None``."""
    if finish is None:
        return None
    reason = finish.reason.lower()
    return reason if reason == "length" or reason in _REFUSED else None


_CLOSER = re.compile(r"\[/[^\]\n]*\]\s*$")


def _refused_args(
    inv: Invocation, name: str, event: RejectedEvent, types: Mapping[str, Any]
) -> dict[str, Any]:
    """The arguments the model sent with a call refused before its body was read (a name out
    of reach), so that the ``tool_error`` sent back shows them: a native call's JSON object,
    or a block's body read against the parameters of the workflow-scoped tool of that name
    (untyped for any other name). ``{}`` when they do not read as an object."""
    raw = event.raw
    try:
        if event.call_id is not None:  # native: "function(arguments)"
            value = json.loads(raw[raw.index("(") + 1 : -1] or "{}")
            return dict(value) if isinstance(value, dict) else {}
        body = _CLOSER.sub("", raw[raw.index("]") + 1 :])
        scoped = (t for w in inv.agent["workflows"] for t in w["tools"] if t["name"] == name)
        spec = next(scoped, None)
        return parse_body(body, spec["params"] if spec else [], types)
    except (ValueError, RecursionError):  # BodyError, bad JSON, a missing bracket
        return {}


def _is_text(event: FinalEvent | RejectedEvent, contract: Contract) -> bool:
    return (
        isinstance(event, FinalEvent)
        and event.kind == "response_text"
        and contract.output["kind"] == "text"
    )


def _stopped(finish: Finish | None, cut: FinalEvent | RejectedEvent | None) -> str:
    """Why a response could not be used, in the words the application sees."""
    assert finish is not None
    reason = f"finish_reason={finish.reason}"
    if finish.reason.lower() == "length":
        what = (
            f"while writing {cut.kind or 'a call'} {cut.name or ''}".rstrip()
            if cut is not None
            else "before it wrote an answer"
        )
        return f"the model stopped at its output limit ({reason}) {what}"
    if finish.raw and finish.raw != finish.reason:
        reason += f", {finish.raw}"  # the provider's own word, e.g. Gemini's SAFETY
    said = f": {finish.message}" if finish.message else " (the provider gave no message)"
    return f"the provider stopped the model's answer ({reason}){said}"

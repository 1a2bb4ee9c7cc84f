"""The engine loop: one ``agent.run()`` from the new input to the returned session.

Per model call the engine assembles the system prompt (the rendered config prompt, the
codec's protocol section, a context section, the current date and time — stable to dynamic,
so consecutive calls share the longest prefix), lets ``onLLMStart`` replace it, streams the
provider's events through the codec's decoder and dispatches every decoded event at once:
partials to partial middleware and handlers, finals to ``onIntent`` middleware and then the
user's handlers. Calls (tools, workflows, helpers) start as soon as their block closes and run
concurrently; their outcomes go back to the model in the next request. The loop ends on a
terminal response, a handoff, an error, or the tool-loop limit.

Nothing a model, tool or handler does escapes: failures become ``error`` / ``tool_error``
intents and the session is returned. Running the calls themselves is :mod:`.calls`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from typing import TYPE_CHECKING, Any, cast

from auwgent._records import replace
from auwgent.errors import (
    ApprovalError,
    AuwgentError,
    ConfigError,
    ConflictError,
    ContextError,
    FallbackError,
    ProviderError,
)
from auwgent.runtime import approvals, origin, schema
from auwgent.runtime.calls import (
    CALL_KINDS,
    AgentResult,
    CallRunner,
    Invocation,
    describe_error,
    effective_tools,
)
from auwgent.runtime.config import provider_key
from auwgent.runtime.context_budget import ContextBudget
from auwgent.runtime.intents import (
    COMPLETE_INTENT,
    Control,
    HookFailure,
    IntentEvent,
    NotAControl,
    Sink,
    control_of,
)
from auwgent.runtime.leases import Lease, LeaseLost, report_conflict
from auwgent.runtime.parts import Part, input_text
from auwgent.runtime.protocol.contract import (
    AssistantTurn,
    CallOutcome,
    Codec,
    Contract,
    FinalEvent,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.protocol.lazy import LazyDict
from auwgent.runtime.protocol.values import parse_body
from auwgent.runtime.providers.base import (
    REASONING_KINDS,
    ContentPart,
    Finish,
    Message,
    ModelRequest,
    StreamEvent,
    TextDelta,
    Usage,
)
from auwgent.runtime.session import (
    Frame,
    Session,
    TokenUsage,
    Turn,
    check_session,
    message_to_json,
    messages_from_json,
    new_session,
    new_turn,
)

if TYPE_CHECKING:
    from auwgent.runtime.agent import AgentCore
    from auwgent.runtime.loops import LoopDetector
    from auwgent.runtime.tracing import RunTrace

__all__ = ["COMPLETE_INTENT", "Run"]

log = logging.getLogger("auwgent")

#: What a call intent yields when a handler or middleware raised on it: the call is skipped.
SKIP = Control(skip=True)


def unheard_error(agent_name: str, message: str) -> str:
    """The warning logged for an ``error`` intent that no handler or middleware takes."""
    return f"error intent of {agent_name} (no handler or middleware takes it): {message}"


class _Round:
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
        self.calls: list[Coroutine[Any, Any, CallOutcome] | asyncio.Task[CallOutcome]] = []
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


class Run:
    """The state of one ``agent.run()``: the session, the middleware context, the providers."""

    def __init__(
        self,
        core: AgentCore,
        *,
        context: dict[str, Any],
        config: str | Mapping[str, str] | None,
        conversation_id: str | None,
        sink: Sink | None,
        persona: str | None = None,
        principal: Mapping[str, str] | None = None,
        memory_scope: str | None = None,
    ) -> None:
        self.core = core
        self.context = context
        self.memory_scope = memory_scope
        self.config = config
        self.persona = persona
        self.memory = ""  # the Memory section, fixed for the whole run
        self.spent = {"requests": 0, "tokens": 0}  # this run's model calls (budgets)
        self.earlier = {"requests": 0, "tokens": 0}  # the conversation's, before this run
        self.trace: RunTrace | None = None
        if core.tracer is not None:
            from auwgent.runtime.tracing import RunTrace

            self.trace = RunTrace(core.tracer, core.root)
        self.loops: LoopDetector | None = None
        if core.options.loop_repeats is not None:
            from auwgent.runtime.loops import LoopDetector

            self.loops = LoopDetector(core.options.loop_repeats)
        self.sink = sink
        self.handed_off = False
        self.calls = CallRunner(self)
        self.budget = ContextBudget(self)  # context windows, tool caps, compaction
        self.approvals = approvals.ApprovalGate(self)
        self.turn: Turn | None = None
        self.session: Session = new_session(core.root)
        #: The conversation lock this run holds (it stops when the lease is lost).
        self.lease: Lease | None = None
        #: When ``timeouts.run`` ends this run, in the event loop's clock (``None``: never).
        self.deadline: float | None = None
        #: Where a resume journals its approved calls (``None``: not journaled).
        self.journal: approvals.ResumeJournal | None = None
        self.ctx: dict[str, Any] = {
            "activeAgent": core.root,
            "rootAgent": core.root,
            "systemPrompt": "",
            "rawBlock": None,
            "repairs": [],
            "conversation_id": conversation_id,
            "conversationId": conversation_id,
            "set_context": self.set_context,
            "setContext": self.set_context,
            "embed": self.embed,
            "embed_batch": self.embed_batch,
            "embedBatch": self.embed_batch,
            "set_persona": self.set_persona,
            "setPersona": self.set_persona,
            "principal": principal,
        }

    # -- the middleware context's functions -------------------------------------------------

    def set_context(self, data: Mapping[str, Any]) -> None:
        """Merge ``data`` into this run's context, checking declared types."""
        self.context.update(self.core.context_schema.check(data, "set_context"))

    def set_persona(self, name: str | None) -> None:
        """Take on the persona ``name`` from the next model call on (``None``: none)."""
        self.persona = self.core.check_persona(name, "set_persona")

    async def embed(self, text: str | Mapping[str, Any]) -> list[float]:
        """Embed one text with the active config's ``embedding`` model.

        A turn input (``{"text": ...}``) is accepted too, as the manual's RAG example passes it.
        """
        return (await self.embed_batch([text]))[0]

    async def embed_batch(self, texts: Sequence[str | Mapping[str, Any]]) -> list[list[float]]:
        """Embed several texts with the active config's ``embedding`` model, in order."""
        plain = [_embed_text(t) for t in texts]
        agent = self.core.doc["agents"][self.ctx["activeAgent"]]
        cfg_name = self.core.config_for(agent, self.config)
        model = agent["configs"][cfg_name].get("embedding")
        if not model:
            raise ConfigError(
                f"embed: the {cfg_name!r} config of {agent['name']} has no embedding model; "
                f'add one, e.g. `embedding: gemini("gemini-embedding-001")`'
            )
        options = model.get("options") or {}
        return await self.core.provider(model).embed(plain, str(model["model"]), options)

    # -- a whole run -------------------------------------------------------------------------

    async def execute(self, given: str | list[Part], session: Any) -> Session:
        """Run ``given`` (text or checked parts) as a new turn of ``session`` (a fresh one
        when ``None``)."""
        text = input_text(given)
        root = self.core.root
        agents = self.core.doc["agents"]
        self.session = (
            new_session(root) if session is None else check_session(session, root, agents)
        )
        start = self._start_agent(self.session)
        self.turn = new_turn(given, start)
        if self.session.get("status") == approvals.AWAITING:
            raise _paused_error()
        self.session["turns"].append(self.turn)
        self.ctx["activeAgent"] = start
        try:
            try:
                returned = self.session
                if self.core.middleware:
                    returned = await self.core.middleware.run_start(self.session, self.ctx)
                if returned is not self.session:
                    loaded = check_session(returned, root, agents)
                    start = self._start_agent(loaded)
                    self.session = loaded
                    self.turn["agent"] = start
                    if loaded.get("status") == approvals.AWAITING:
                        raise _paused_error()  # the stored session stays as it is
                    self.session["turns"].append(self.turn)
            except Exception as exc:
                await self.fail(exc, start, prefix="onRunStart failed: ")
                return self.session
            self.earlier = _spent(self.session["turns"][:-1])
            await self._recall(text, start)
            await self._drive_with_timeout(start)
        finally:
            await self._finish(start)
        return self.session

    # -- memory ------------------------------------------------------------------------------

    async def _recall(self, text: str, start: str) -> None:
        """Fill the Memory section from the store, searched with the user's input.

        A store that fails is reported (``onError``, the ``auwgent`` logger) and the run goes
        on without memory: recall only adds context, it grants nothing.
        """
        options = self.core.options.memory
        if options is None:
            return
        self._lend_embedder(options.store)
        try:
            from auwgent.runtime.memory import recall, render_memory

            facts = await recall(options.store, text, options.limit, self.memory_scope)

            self.memory = render_memory(facts, options.budget, options.counter)
        except Exception as exc:
            await self.report_memory_error(exc, f"memory search failed: {describe_error(exc)}")

    def _lend_embedder(self, store: Any) -> None:
        """Give a store that can use one the root config's embedding model (when declared)."""
        use = getattr(store, "use_embedder", None)
        agent = self.core.doc["agents"][self.core.root]
        model = agent["configs"][self.core.config_for(agent, self.config)].get("embedding")
        if use is None or not model:
            return
        core = self.core

        async def embed(texts: list[str]) -> list[list[float]]:
            return await core.provider(model).embed(list(texts), str(model["model"]))

        use(embed)

    async def report_memory_error(self, error: BaseException, message: str) -> None:
        """Log a memory failure and pass it to ``onError`` as an ``IngestionError``."""
        from auwgent.errors import IngestionError
        from auwgent.runtime.memory import log

        wrapped = error if isinstance(error, IngestionError) else IngestionError(message)
        if wrapped is not error:
            wrapped.__cause__ = error
            log.error("%s", message, exc_info=error)
        try:
            await self.core.middleware.error(wrapped, self.session, self.ctx)
        except Exception:
            log.exception("onError failed while reporting a memory error")

    def start_ingestion(self) -> None:
        """Learn from the finished turn in the background (memory on, the turn not failed)."""
        ingestion, turn = self.core.ingestion, self.turn
        if ingestion is None or turn is None or turn["status"] == "error":
            return

        async def report(error: BaseException) -> None:
            await self.core.middleware.error(error, self.session, self.ctx)

        conversation = self.ctx.get("conversation_id")
        source = f"turn {turn['id']}" + (f" of conversation {conversation}" if conversation else "")
        ingestion.start(turn, self._extract_facts, report, scope=self.memory_scope, source=source)

    async def _extract_facts(self, turn: Mapping[str, Any]) -> list[str]:
        """The default ingester: the root agent's own model, asked with the extraction prompt."""
        from auwgent.runtime.memory import EXTRACTION_PROMPT, parse_facts

        agent = self.core.doc["agents"][self.core.root]
        cfg = agent["configs"][self.core.config_for(agent, self.config)]
        request = ModelRequest(
            model=str(cfg["model"]["model"]),
            system=EXTRACTION_PROMPT,
            messages=(Message(role="user", content=_transcript(turn)),),
            options=cfg["model"].get("options") or {},
        )
        chunks = [
            event.text
            async for event in self.core.provider(cfg["model"]).stream(request)
            if isinstance(event, TextDelta)
        ]
        return parse_facts("".join(chunks))

    async def resume(self, session: Any, decisions: Mapping[str, Any]) -> Session:
        """Continue a run paused for approvals with ``decisions`` (see :mod:`.approvals`).

        The caller checked the decisions against ``session`` (and claimed a stored one).
        """
        root = self.core.root
        self.session = check_session(session, root)
        start = self._start_agent(self.session)
        self.turn = self.session["turns"][-1]
        self.ctx["activeAgent"] = start
        try:
            try:
                returned = await self.core.middleware.run_start(self.session, self.ctx)
                if returned is not self.session:
                    self.session = check_session(returned, root)
                    self.turn = self.session["turns"][-1]
                approvals.check_decisions(self.session, decisions, claimed=True)
            except Exception as exc:
                await self.fail(exc, start, prefix="resume failed: ", mark=False)
                return self.session
            self.turn["status"] = "running"
            await self._drive_with_timeout(start, decisions)
        finally:
            await self._finish(start)
        return self.session

    def _start_agent(self, session: Session) -> str:
        name = session["stack"][-1]["agent"]
        if name not in self.core.doc["agents"]:
            raise ConfigError(f"session.stack: agent {name!r} is not part of this agent's IR")
        return name

    async def _drive_with_timeout(
        self, start: str, decisions: Mapping[str, Any] | None = None
    ) -> None:
        timeout = self.core.options.run_timeout
        if timeout is not None:
            self.deadline = asyncio.get_running_loop().time() + timeout
        drive: Coroutine[Any, Any, None] = self._drive(start, decisions)
        if self.lease is not None:
            drive = self.lease.holding(drive)  # stopped the moment the lease is lost
        try:
            if timeout is None:
                await drive
            else:
                await asyncio.wait_for(drive, timeout)
        except LeaseLost as exc:
            message = await self.fail(exc, self.ctx["activeAgent"])
            report_conflict(self.session, message)
        except asyncio.TimeoutError:
            await self.fail(TimeoutError(f"the run took longer than {timeout} s"), start)
        except Exception as exc:  # a bug or an app mistake surfacing mid-run: still no escape
            await self.fail(exc, self.ctx["activeAgent"])

    async def _finish(self, start: str) -> None:
        turn = self.turn
        assert turn is not None
        if turn["status"] == "running":
            turn["status"] = "handoff" if len(self.session["stack"]) > 1 else "complete"
        self.session["usage"] = _total_usage(self.session["turns"])
        # Tool results may be any Python value; the session must stay JSON. One check per run.
        turn["intents"], turn["output"] = _jsonable([turn["intents"], turn["output"]])
        self.ctx["activeAgent"] = start
        self.ctx["rawBlock"] = None
        self.ctx["repairs"] = []
        try:
            if self.core.middleware:
                await self.core.middleware.run_complete(self.session, self.ctx)
        except Exception as exc:
            message = await self.fail(exc, start, prefix="onRunComplete failed: ", mark=False)
            if isinstance(exc, ConflictError):  # the save lost the revision race: not saved
                report_conflict(self.session, message)
        if self.trace is not None:
            self.trace.run_end(turn["status"])

    async def _drive(self, start: str, decisions: Mapping[str, Any] | None) -> None:
        agent = self.core.doc["agents"][start]
        missing = self.core.context_schema.missing(agent, self.context)
        if missing:
            keys = ", ".join(repr(k) for k in missing)
            await self.fail(
                ContextError(
                    f"missing required context {keys} for {start}: give it in the config's "
                    f"'context', with agent.set_context, or from middleware with set_context"
                ),
                start,
            )
            return
        stack = self.session["stack"]
        if len(stack) > 1:
            await self._resume(stack, decisions)
            return
        inv = self._root_invocation(stack[0])
        if decisions is not None and await self._paused_again(inv, decisions):
            return
        result = await self.invoke(inv, top=True)
        self._settle(result)

    async def _paused_again(self, inv: Invocation, decisions: Mapping[str, Any]) -> bool:
        """Complete the round that paused for approvals and give its outcomes to the model;
        ``True`` when a resumed workflow deferred another step (the run pauses again)."""
        outcomes = await approvals.resume_outcomes(self, inv, decisions)
        if outcomes is None:
            return True
        for message in self.core.codec(inv.agent, self.config).results_messages(outcomes):
            inv.add(message)
        return False

    def _settle(self, result: AgentResult) -> None:
        assert self.turn is not None
        self.turn["output"] = result.output
        if result.status == "error":
            self.turn["status"] = "error"
            self.turn["error"] = result.error
        elif result.status in ("handoff", approvals.AWAITING):
            self.turn["status"] = result.status

    def _root_invocation(self, frame: Frame) -> Invocation:
        root_ir = self.core.doc["agents"][self.core.root]
        history: list[Message] = []
        for turn in self.session["turns"][:-1]:
            if turn.get("agent", self.core.root) == self.core.root:
                history.append(_user_message(turn["input"]))
            history.extend(messages_from_json(turn.get("messages", ())))
        assert self.turn is not None
        history.append(_user_message(self.turn["input"]))
        history.extend(messages_from_json(self.turn["messages"]))  # a resumed turn's so far
        return Invocation(
            agent=root_ir,
            config_name=self.core.config_for(root_ir, self.config),
            history=history,
            tools=tuple(root_ir["tools"]),
            record=self.turn["messages"],
        )

    async def _resume(self, stack: list[Frame], decisions: Mapping[str, Any] | None) -> None:
        """The conversation was handed to a helper: the new input (or the approval decisions
        of its paused round) goes to it."""
        top = stack[-1]
        agent = self.core.doc["agents"][top["agent"]]
        tools, grant = self._stack_tools(stack)
        record = list(top.get("messages", []))
        top["messages"] = record
        assert self.turn is not None
        inv = Invocation(
            agent=agent,
            config_name=self.core.config_for(agent, self.config),
            history=messages_from_json(record),
            tools=tools,
            handoff="user",
            grant=grant,
            record=record,
        )
        if decisions is None:
            inv.add(_user_message(self.turn["input"]))
        elif await self._paused_again(inv, decisions):
            return
        result = await self.invoke(inv, top=True)
        self._settle(result)
        if inv.completed:
            stack.pop()
            self._note_completion(stack, inv)
            self.turn["status"] = "handoff" if len(stack) > 1 else "complete"

    def _stack_tools(self, stack: Sequence[Frame]) -> tuple[tuple[Mapping[str, Any], ...], Any]:
        """The top frame's tools and grant, recomputed from the IR: a session only says which
        helper is answering, never what it may call (a stored grant is not trusted)."""
        agents = self.core.doc["agents"]
        tools: tuple[Mapping[str, Any], ...] = tuple(agents[stack[0]["agent"]]["tools"])
        grant: Any = "none"
        for i in range(1, len(stack)):
            below, name = stack[i - 1]["agent"], stack[i]["agent"]
            # A helper called by a nested helper (handoff none) hands the conversation over
            # from there: the IR path from the frame below to that parent gives its tools.
            parent = str(stack[i].get("parent") or below)
            choices = [
                (effective_tools(agents[name], use["tools"], via), use["tools"])
                for via in _paths_tools(agents, below, parent, tools)
                for use in agents[parent]["helpers"]
                if use["name"] == name and use["handoff"] == "user"
            ]
            if not choices:
                raise ConfigError(
                    f"session.stack[{i}]: {parent} does not hand the conversation to {name} "
                    f"in this agent's IR; the session does not belong to these bindings"
                )
            # Several IR paths: only what every one of them grants (never the union).
            common = set.intersection(*({t["name"] for t in c[0]} for c in choices))
            tools = tuple(t for t in choices[0][0] if t["name"] in common)
            grant = choices[0][1] if len(choices) == 1 else [t["name"] for t in tools]
        return tools, grant

    def _note_completion(self, stack: list[Frame], inv: Invocation) -> None:
        below = stack[-1]
        agent = self.core.doc["agents"][below["agent"]]
        note = f"[{inv.name} finished the conversation it was handed"
        note += f": {inv.summary}]" if inv.summary else "]"
        message = self.core.codec(agent, self.config).feedback_message(note)
        if len(stack) == 1:
            assert self.turn is not None
            self.turn["messages"].append(message_to_json(message))
        else:
            below["messages"] = [*below.get("messages", []), message_to_json(message)]

    # -- failures ----------------------------------------------------------------------------

    async def fail(
        self,
        error: BaseException,
        agent_name: str,
        *,
        prefix: str = "",
        mark: bool = True,
        message: str | None = None,
        details: Mapping[str, Any] | None = None,
        logged: bool = False,
    ) -> str:
        """Report a failure: ``onError``, then an ``error`` intent unless a middleware handled it.

        The intent's message is ``message`` when given, else ``prefix`` and the error's own
        text; ``details`` are added to its payload. An intent that reaches nobody (no handler
        of ``error``, no ``onError`` or ``onIntent`` middleware, no stream consumer) is logged
        on the ``auwgent`` logger as a warning, unless the caller ``logged`` it already.
        """
        message = message or prefix + describe_error(error)
        if mark and self.turn is not None and agent_name == self.turn["agent"]:
            self.turn["status"] = "error"
            self.turn["error"] = message
        self.ctx["activeAgent"] = agent_name
        try:
            handled = await self.core.middleware.error(error, self.session, self.ctx)
        except Exception:
            handled = False  # a failing error hook must not hide the original error
        if not handled:
            await self.emit("error", {"message": message, **(details or {})}, agent_name)
            if not logged and not self._heard_errors(agent_name):
                log.warning("%s", unheard_error(agent_name, message))
        return message

    def _heard_errors(self, agent_name: str) -> bool:
        core = self.core
        return (
            self.sink is not None
            or core.handlers.takes("error")
            or core.middleware.hears_errors(agent_name)
        )

    async def _hook_failed(
        self, failure: HookFailure, name: str, value: Any, agent_name: str, *, skipped: bool
    ) -> None:
        """Report a handler or middleware that raised on ``name``: the ``auwgent`` log (with
        the traceback) and an ``error`` intent naming it and the intent."""
        import traceback

        error = failure.error
        what = name
        if skipped:
            what += f" {value.get('type')}" if isinstance(value, Mapping) else ""
        message = f"{failure.who} failed on {what}: {describe_error(error)}"
        if skipped:
            message += " (the call was not run)"
        log.error("%s", message, exc_info=error)
        if name == "error":
            return  # the log has it; an error intent about an error intent would loop
        tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        details = {"handler": failure.who, "intent": name, "traceback": tb}
        await self.fail(
            error, agent_name, mark=False, message=message, details=details, logged=True
        )

    # -- dispatching intents -----------------------------------------------------------------

    async def emit(
        self,
        name: str,
        value: Any,
        agent_name: str,
        raw: str | None = None,
        *,
        active: str | None = None,
        repairs: Sequence[Mapping[str, str]] = (),
    ) -> Control | None:
        """A final intent: ``onIntent`` middleware, then the user's handlers. First control wins.

        ``active`` is the middleware's ``activeAgent`` when it differs from ``agent_name``
        (``helper_call`` / ``helper_result`` name the helper while its parent is running).
        ``repairs`` are the decoder's repairs of the intent's block (``ctx["repairs"]``).
        Every middleware and handler sees the intent, whatever the others do. When one of them
        raises on a call intent (``tool_call``, ``workflow_call``, ``helper_call``), the result
        is a skip: a call is never run on an unfinished decision.
        """
        core = self.core
        if origin.VIA.get() is not None:
            value = origin.mark(value)  # "via": "execute_code" for the calls of code mode
        if self.turn is not None:
            self.turn["intents"].append({"name": name, "value": value, "agent": agent_name})
        if self.trace is not None and isinstance(value, Mapping):
            self.trace.intent(name, value, agent_name, active)
        if self.sink is not None:
            self.sink.put_nowait(IntentEvent(name, value, agent_name, False))
        returned: list[tuple[str, Any]] = []
        failures: list[HookFailure] = []
        if core.middleware.has_intent:
            self.ctx["activeAgent"] = active or agent_name
            self.ctx["rawBlock"] = raw
            self.ctx["repairs"] = [dict(r) for r in repairs]
            returned += await core.middleware.intent(name, value, self.ctx, failures)
        if core.handlers:
            returned += await core.handlers.dispatch(name, value, agent_name, failures)
        if name not in CALL_KINDS:  # only a call is controlled: other return values are unread
            for failure in failures:
                await self._hook_failed(failure, name, value, agent_name, skipped=False)
            return None
        control, refused = await self._control(returned, name, value, agent_name)
        for failure in failures:
            await self._hook_failed(failure, name, value, agent_name, skipped=True)
        return SKIP if failures or refused else control

    async def _control(
        self, returned: Sequence[tuple[str, Any]], name: str, value: Any, agent_name: str
    ) -> tuple[Control | None, bool]:
        """The first control among the guards' return values on call intent ``name``, and
        whether any of them was not a control (each such one reported by an ``error``
        intent: the call is refused)."""
        control: Control | None = None
        refused = False
        for who, answer in returned:
            try:
                control = control or control_of(answer)
            except NotAControl as exc:
                refused = True
                what = f"{name} {value.get('type')}" if isinstance(value, Mapping) else name
                error = exc.naming(who, what)
                log.error("%s", error)
                details = {"handler": who, "intent": name}
                await self.fail(error, agent_name, mark=False, message=str(error), details=details)
        return control, refused

    def partial(
        self, inv: Invocation, contract: Contract, rnd: _Round, event: PartialEvent
    ) -> Coroutine[Any, Any, None] | None:
        """A partial intent: to the stream's consumer at once; the coroutine that gives it to
        partial middleware and handlers, when there are any (``None`` otherwise: a partial is
        sent per chunk, and a coroutine for nobody costs more than building it)."""
        if event.kind == "response_text" and contract.output["kind"] != "text":
            return None  # free text is not the output of a structured agent
        core = self.core
        hooked = core.middleware.has_partial or bool(core.partial_handlers)
        if self.sink is None and not hooked:
            return None
        name = str(event.name if event.kind == "custom" and event.name else event.kind)
        eager: dict[str, Any] = {
            "partial": True,
            "complete": False,
            "mode": "text" if event.kind == "response_text" else "structured",
            "segment": event.segment,
            "snapshot": event.snapshot,  # a text snapshot's "text" is made when read
        }
        if event.delta is not None:
            eager["delta"] = event.delta
        # `raw` (the body so far) is a copy of the whole text: made only for who reads it.
        value = LazyDict(eager, {"raw": lambda: event.raw})
        if self.sink is not None:
            self.sink.put_nowait(IntentEvent(name, value, inv.name, True))
        if hooked:
            return self._partial_hooks(name, value, inv.name, event.segment, rnd)
        return None

    async def _partial_hooks(
        self, name: str, value: dict[str, Any], agent_name: str, segment: int, rnd: _Round
    ) -> None:
        core = self.core
        failures: list[HookFailure] = []
        if core.middleware.has_partial:
            self.ctx["activeAgent"] = agent_name
            await core.middleware.intent_partial(name, value, self.ctx, failures)
        if core.partial_handlers:
            await core.partial_handlers.dispatch(name, value, agent_name, failures)
        for failure in failures:
            # One report per handler and segment, not one per streamed chunk.
            key = (failure.who, segment)
            if key not in rnd.partial_failures:
                rnd.partial_failures.add(key)
                await self._hook_failed(failure, name, value, agent_name, skipped=False)

    # -- one agent's loop --------------------------------------------------------------------

    async def invoke(self, inv: Invocation, *, top: bool = False) -> AgentResult:
        """Drive ``inv`` until a terminal response, a handoff, an error or the loop limit."""
        core = self.core
        missing = core.context_schema.missing(inv.agent, self.context)
        if missing:
            msg = await self.fail(
                ContextError(f"missing required context {', '.join(missing)} for {inv.name}"),
                inv.name,
            )
            return AgentResult("error", error=msg)
        codec = core.codec(inv.agent, self.config)
        limit = core.max_loops(inv.agent, inv.config_name)
        retries = 0
        for _ in range(limit):
            inv.tools = self.budget.tools(inv.tools)  # `recall` once a result was cut
            contract = core.contract(inv)
            rnd = await self._round(inv, codec, contract, top)
            self._remember(inv, codec, rnd)
            outcomes = rnd.outcomes
            if rnd.error is not None:
                msg = await self.fail(rnd.error, inv.name)
                return AgentResult("error", error=msg)
            if any(o.status == "pending" for o in outcomes):
                approvals.pause(self, outcomes)
                return AgentResult(approvals.AWAITING)
            if outcomes:
                stop = self._progress(inv, outcomes, rnd)
                inv_msgs = codec.results_messages(outcomes)
                for message in inv_msgs:
                    inv.add(message)
                if stop is not None:
                    msg = await self.fail(AuwgentError(stop), inv.name)
                    return AgentResult("error", error=msg)
                if self.handed_off:
                    return AgentResult("handoff")
                if rnd.problems:
                    inv.add(codec.feedback_message("\n".join(rnd.problems)))
                continue
            problems = rnd.problems or self._missing_output(inv, rnd)
            if problems:
                retries += 1
                if retries > core.options.max_output_retries:
                    msg = await self.fail(
                        AuwgentError(
                            f"{inv.name}'s output was still invalid after "
                            f"{core.options.max_output_retries} retries: " + "; ".join(problems)
                        ),
                        inv.name,
                    )
                    return AgentResult("error", error=msg)
                inv.add(codec.feedback_message(_feedback(problems)))
                continue
            return await self._terminal(inv, rnd)
        msg = await self.fail(
            AuwgentError(
                f"tool-loop limit reached: {inv.name} made {limit} model calls without a final "
                f"answer (maxToolLoops = {limit})"
            ),
            inv.name,
        )
        return AgentResult("error", error=msg)

    def _progress(
        self, inv: Invocation, outcomes: Sequence[CallOutcome], rnd: _Round
    ) -> str | None:
        """Watch for a model going round in circles (see :mod:`.loops`).

        Returns the error message when the run must stop; a first warning is added to the
        round's problems, which go back to the model after the results.
        """
        if self.loops is None:
            return None
        repeatable = {t["name"] for t in inv.tools if t.get("repeatable")}
        steps = [
            (o.kind, o.name, o.args, o.result if o.status == "ok" else o.error)
            for o in outcomes
            if o.status != "skipped" and not (o.kind == "tool" and o.name in repeatable)
        ]
        verdict = self.loops.observe(inv.name, steps)
        if verdict is None:
            return None
        kind, reason = verdict
        if kind == "stop":
            return self.loops.failure(reason)
        rnd.problems.append(self.loops.note(reason))
        return None

    def _missing_output(self, inv: Invocation, rnd: _Round) -> list[str]:
        structured = inv.agent["output"]["kind"] != "text"
        if structured and rnd.output is None:
            names = " or ".join(_output_names(inv.agent, self.core.doc["types"]))
            return [f"No output was given: answer with your structured output ({names})."]
        if not structured and not rnd.texts and not rnd.customs and not inv.completed:
            return ["The response was empty: answer the user."]
        return []

    async def _terminal(self, inv: Invocation, rnd: _Round) -> AgentResult:
        if rnd.output is not None:
            response: Any = dict(rnd.output)
            output: Any = rnd.output["response"]
        else:
            output = "\n\n".join(rnd.texts)
            response = {"text": output}
        if rnd.truncated:
            response["truncated"] = True
        response["finish_reason"] = rnd.finish.reason if rnd.finish is not None else None
        response["usage"] = rnd.usage
        self.ctx["activeAgent"] = inv.name
        try:
            if self.core.middleware:
                await self.core.middleware.llm_end(response, self.ctx)
        except Exception as exc:
            await self.fail(exc, inv.name, prefix="onLLMEnd failed: ", mark=False)
        return AgentResult("complete", output=output)

    def _content_part(self, inv: Invocation, part: ContentPart) -> None:
        """Keep a non-text part of the answer (an image, code the model ran) in the turn."""
        if self.turn is not None:
            entry = {"agent": inv.name, "kind": part.kind, "data": part.data}
            # An optional key of the turn (docs/sessions.md), present only when there are parts.
            turn = cast("dict[str, Any]", self.turn)
            turn.setdefault("parts", []).append(entry)

    def _remember(self, inv: Invocation, codec: Codec, rnd: _Round) -> None:
        text = "".join(rnd.chunks)
        if text or rnd.native_calls or rnd.reasoning:
            message = codec.assistant_message(AssistantTurn(text, tuple(rnd.native_calls)))
            if rnd.reasoning:
                # The provider wants its reasoning back, unchanged, with the same answer.
                message = replace(message, reasoning=tuple(rnd.reasoning))
            inv.add(message)

    async def _round(self, inv: Invocation, codec: Codec, contract: Contract, top: bool) -> _Round:
        """One model call: prompt, stream, decode, dispatch; calls are awaited before returning."""
        core = self.core
        cfg = inv.agent["configs"][inv.config_name]
        system = core.system_prompt(
            inv, codec, contract, self.context, persona=self.persona, memory=self.memory
        )
        self.ctx["activeAgent"] = inv.name
        self.ctx["systemPrompt"] = system
        # Partials are built, and the answer streamed on the wire, only for someone to see
        # them: a partial handler or middleware hook, or a consumer of agent.stream().
        partials = core.wants_partials or self.sink is not None
        rnd = _Round(partials)
        try:
            if core.middleware:
                system = await core.middleware.llm_start(system, self.ctx)
        except Exception as exc:
            rnd.error = exc
            return rnd
        self.ctx["systemPrompt"] = system  # what is really sent, for later hooks of this call
        if top:
            self.session["system_prompt"] = system
        functions, response_schema = core.request_parts(codec, contract)
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
        request, refused = await self._admit(inv, request)
        if refused is not None:
            rnd.error = refused
            return rnd
        self.spent["requests"] += 1  # counted before it starts: concurrent helpers see it
        decoder = codec.decoder(contract, partials=partials)
        span = None
        if self.trace is not None:
            model = cfg["model"]
            span = self.trace.chat_start(inv.name, provider_key(model), str(model["model"]))
        try:
            # The agent keeps its providers and HTTP client across runs (connections are reused).
            # Without fallback models the provider's events are read directly: one async
            # generator less to resume per event.
            if cfg.get("fallback"):
                events = self._stream(cfg, request, rnd)
            else:
                rnd.model = self._answering(cfg["model"])
                events = core.provider(cfg["model"]).stream(request)
            async for event in events:
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
                for decoded in decoder.feed(event):
                    if type(decoded) is PartialEvent:  # per chunk: no coroutine when no hook
                        hooks = self.partial(inv, contract, rnd, decoded)
                        if hooks is not None:
                            await hooks
                    else:
                        await self._decoded(inv, contract, rnd, decoded)
            await self._close(inv, contract, rnd, decoder.close())
        except Exception as exc:
            rnd.error = exc
        except asyncio.CancelledError:
            _drop(rnd.calls)  # the run was cancelled (timeout): leave nothing behind
            raise
        if span is not None:
            assert self.trace is not None
            finish = rnd.finish.reason if rnd.finish is not None else None
            usage = cast("Mapping[str, int] | None", rnd.usage)
            self.trace.chat_end(span, rnd.model, usage, finish, rnd.error)
        self._count(rnd)
        self.budget.observe(request, rnd.usage)
        try:
            rnd.outcomes = await _outcomes(rnd.calls)
        except asyncio.CancelledError:
            _drop(rnd.calls)
            raise
        return rnd

    async def _stream(
        self, cfg: Mapping[str, Any], request: ModelRequest, rnd: _Round
    ) -> AsyncIterator[StreamEvent]:
        """The events of one model call, with the config's ``fallback`` models behind it.

        When a model fails with a retryable error (after its own retries: connection errors,
        5xx, 429) before it produced any event, the same request goes to the next model of
        ``fallback``. Once an event is out the failure passes through: part of the answer may
        already have been acted on. ``rnd.model`` names the model that answered, and the
        turn's ``model_calls`` records it. When more than one model was tried and none
        answered, the :class:`FallbackError` lists each attempt with its error.
        """
        models = [cfg["model"], *cfg.get("fallback", ())]
        failed: list[tuple[str, ProviderError]] = []
        for index, model in enumerate(models):
            if index:
                request = replace(
                    request, model=str(model["model"]), options=model.get("options") or {}
                )
            rnd.model = self._answering(model)
            started = False
            try:
                async for event in self.core.provider(model).stream(request):
                    started = True
                    yield event
            except ProviderError as exc:
                if started:
                    raise
                failed.append((rnd.model, exc))
                if exc.retryable and index < len(models) - 1:
                    log.warning(
                        "%s failed before answering (%s); the request goes to %s",
                        rnd.model,
                        exc,
                        self._answering(models[index + 1]),
                    )
                    continue
                if len(failed) > 1:
                    raise FallbackError(failed) from exc
                raise
            return

    def _answering(self, model: Mapping[str, Any]) -> str:
        """How ``model_calls`` names who answers for ``model``: ``provider:model``, or the
        name of the provider that replaces every model (``"offline"``, ``"scripted"``)."""
        override = self.core.provider_override
        if override is not None:
            return str(getattr(override, "name", "") or type(override).__name__)
        return f"{provider_key(model)}:{model['model']}"

    # -- budgets -----------------------------------------------------------------------------

    def _count(self, rnd: _Round) -> None:
        """Record one model call in the turn and in the run's totals."""
        self.spent["tokens"] += rnd.usage["total_tokens"] if rnd.usage is not None else 0
        if self.turn is not None:
            self.turn["model_calls"].append(
                {
                    "model": rnd.model,
                    "finish_reason": rnd.finish.reason if rnd.finish is not None else None,
                    "usage": rnd.usage,
                }
            )

    async def _admit(
        self, inv: Invocation, request: ModelRequest
    ) -> tuple[ModelRequest, Exception | None]:
        """``request`` fitted to the context window (see :mod:`.context_budget`), or why it
        must not be sent: it cannot fit, or a budget is spent."""
        try:
            request = await self.budget.fit(inv, request)  # compaction, the window check
        except Exception as exc:
            return request, exc
        over = self._over_budget()
        return request, None if over is None else AuwgentError(over)

    def _over_budget(self) -> str | None:
        """Why the next model call must not be made, or ``None`` (see :mod:`.config`)."""
        budget = self.core.options.budget
        if budget is None:
            return None
        limits = (
            ("requests", budget.requests, self.spent["requests"], "run"),
            ("tokens", budget.tokens, self.spent["tokens"], "run"),
            ("conversationRequests", budget.conversation_requests,
             self.earlier["requests"] + self.spent["requests"], "conversation"),
            ("conversationTokens", budget.conversation_tokens,
             self.earlier["tokens"] + self.spent["tokens"], "conversation"),
        )  # fmt: skip
        for key, limit, used, scope in limits:
            if limit is not None and used >= limit:
                what = "model requests" if "equests" in key else "tokens"
                return (
                    f"budget exceeded: this {scope} has used {used} {what} of its "
                    f"{limit} (budget.{key}); no further model request is made"
                )
        return None

    async def _close(
        self,
        inv: Invocation,
        contract: Contract,
        rnd: _Round,
        events: Sequence[PartialEvent | FinalEvent | RejectedEvent],
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
        self,
        inv: Invocation,
        contract: Contract,
        rnd: _Round,
        event: PartialEvent | FinalEvent | RejectedEvent,
    ) -> None:
        if isinstance(event, PartialEvent):
            hooks = self.partial(inv, contract, rnd, event)
            if hooks is not None:
                await hooks
            return
        structured = contract.output["kind"] != "text"
        if isinstance(event, RejectedEvent):
            await self._rejected(inv, rnd, event)
            return
        kind = event.kind
        if kind in CALL_KINDS:
            if event.call_id is not None:
                rnd.native_calls.append(event)
            rnd.start(self.calls.call(inv, contract, event))
        elif kind == "response_text":
            if not structured:
                text = str(event.payload.get("text", ""))
                rnd.texts.append(text)
                value: dict[str, Any] = {"text": text}
                if rnd.truncated:
                    value["truncated"] = True
                await self.emit("response_text", value, inv.name, event.raw, repairs=event.repairs)
        elif kind == "response_schema":
            self._quiet(rnd, event)
            await self._schema(inv, contract, rnd, event)
        else:
            self._quiet(rnd, event)
            await self._custom(inv, contract, rnd, event)

    def _quiet(self, rnd: _Round, event: FinalEvent) -> None:
        # A native function call that only carries an intent (custom or output) is kept in the
        # assistant message; the codec writes it into history as it sees fit, and it needs no
        # result message.
        if event.call_id is not None:
            rnd.native_calls.append(event)

    async def _rejected(self, inv: Invocation, rnd: _Round, event: RejectedEvent) -> None:
        if event.kind in CALL_KINDS or (event.kind is None and event.call_id is not None):
            kind = CALL_KINDS.get(event.kind or "tool_call", "tool")
            name = event.name or "unknown"
            args = _refused_args(inv, name, event, self.core.doc["types"])
            if event.call_id is not None:
                rnd.native_calls.append(
                    FinalEvent(
                        event.kind or "tool_call",
                        name,
                        event.segment,
                        {"type": name, "args": args},
                        event.raw,
                        event.call_id,
                    )
                )
            rnd.start(self.calls.refuse(inv, kind, name, args, event.message, event.call_id))
            return
        rnd.problems.append(event.message)

    async def _schema(
        self, inv: Invocation, contract: Contract, rnd: _Round, event: FinalEvent
    ) -> None:
        types = self.core.doc["types"]
        payload = event.payload
        name = str(payload.get("type") or event.name or "")
        allowed = _output_names(inv.agent, types)
        if name not in allowed:
            rnd.problems.append(
                f"[schema: {name}] is not an output of {inv.name}; use one of: {', '.join(allowed)}"
            )
            return
        out = contract.output
        type_ = types[name] if name in types else out
        response = payload.get("response")
        errors = schema.validate(response, type_, types)
        if errors:
            rnd.problems.append(f"Your {name} output is invalid: " + "; ".join(errors))
            return
        value = {"type": name, "response": response}
        rnd.output = value
        await self.emit("response_schema", value, inv.name, event.raw, repairs=event.repairs)

    async def _custom(
        self, inv: Invocation, contract: Contract, rnd: _Round, event: FinalEvent
    ) -> None:
        name = str(event.name)
        spec = next((i for i in contract.intents if i["name"] == name), None)
        if spec is None:
            rnd.problems.append(f"{name} is not an intent you can emit")
            return
        payload = dict(event.payload)
        obj = {"kind": "object", "fields": spec["fields"]}
        errors = schema.validate(payload, obj, self.core.doc["types"])
        if errors:
            rnd.problems.append(f"Your {name} intent is invalid: " + "; ".join(errors))
            return
        rnd.customs += 1
        if name == COMPLETE_INTENT and inv.handoff == "user":
            inv.completed = True
            summary = payload.get("summary")
            inv.summary = summary if isinstance(summary, str) else None
        await self.emit(name, payload, inv.name, event.raw, repairs=event.repairs)


# ---------------------------------------------------------------------------------------------
# Pure helpers


async def _outcomes(
    calls: Sequence[Coroutine[Any, Any, CallOutcome] | asyncio.Task[CallOutcome]],
) -> list[CallOutcome]:
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


def _drop(calls: Sequence[Coroutine[Any, Any, CallOutcome] | asyncio.Task[CallOutcome]]) -> None:
    """Cancel a round's started calls and discard the ones not started."""
    for call in calls:
        if isinstance(call, asyncio.Task):
            call.cancel()
        else:
            call.close()


def _paused_error() -> ApprovalError:
    return ApprovalError(
        "this session is awaiting approvals: continue it with agent.resume(session, "
        "decisions) before running new input"
    )


def _output_names(agent: Mapping[str, Any], types: Mapping[str, Any]) -> list[str]:
    out = agent["output"]
    if out["kind"] == "ref":
        return [out["name"]]
    if out["kind"] == "union":
        return [v["name"] for v in out["variants"] if v["kind"] == "ref"] or [
            schema.describe(out, types)
        ]
    return [schema.describe(out, types)]


def _paths_tools(
    agents: Mapping[str, Any],
    start: str,
    goal: str,
    tools: tuple[Mapping[str, Any], ...],
    seen: frozenset[str] = frozenset(),
) -> Iterator[tuple[Mapping[str, Any], ...]]:
    """The tools ``goal`` has on each helper path from ``start`` (``tools``) in the IR."""
    if start == goal:
        yield tools
        return
    for use in agents[start]["helpers"]:
        name = use["name"]
        if name not in seen and use["handoff"] != "user":
            inner = effective_tools(agents[name], use["tools"], tools)
            yield from _paths_tools(agents, name, goal, inner, seen | {start})


def _total_usage(turns: Sequence[Mapping[str, Any]]) -> TokenUsage:
    """The token usage of every recorded model call of the session."""
    total: TokenUsage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    for turn in turns:
        for call in turn.get("model_calls") or ():
            usage = call.get("usage") or {}
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                count = usage.get(key)
                if isinstance(count, int):
                    total[key] += count
    return total


def _user_message(given: Mapping[str, Any]) -> Message:
    """The user message of a turn's input (its parts, when it was given as parts)."""
    parts = tuple(dict(p) for p in given.get("parts", ()))
    return Message(role="user", content=str(given["text"]), parts=parts)


def _embed_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])
    raise TypeError(f"embed: expected a string (or a turn input {{'text': ...}}), got {value!r}")


def _jsonable(value: Any) -> Any:
    """``value`` if it is JSON already, else its JSON rendering with unknown objects as strings."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


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


def _spent(turns: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Model requests and tokens recorded in ``turns`` (a conversation's earlier ones)."""
    calls = [c for t in turns for c in t.get("model_calls", ()) if isinstance(c, Mapping)]
    tokens = sum((c.get("usage") or {}).get("total_tokens", 0) for c in calls)
    return {"requests": len(calls), "tokens": tokens}


def _transcript(turn: Mapping[str, Any]) -> str:
    """One turn as the default ingester shows it to the model: the input and the answers."""
    lines = [f"User: {turn['input']['text']}"]
    for intent in turn.get("intents", ()):
        value = intent.get("value")
        if intent.get("name") == "response_text" and isinstance(value, Mapping):
            lines.append(f"Assistant: {value.get('text', '')}")
        elif intent.get("name") == "response_schema" and isinstance(value, Mapping):
            lines.append(f"Assistant (structured): {json.dumps(value.get('response'))}")
    return "\n".join(lines)


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


def _feedback(problems: Sequence[str]) -> str:
    return "Your last response could not be used:\n- " + "\n- ".join(problems)


_now_cache: list[Any] = [None, ""]  # [(the whole second, the zone) it was made for, the line]


def now_line(zone: tzinfo | None = None, clock: Callable[[], datetime] | None = None) -> str:
    """The date-and-time line that ends every system prompt, in ``zone`` (default: local).

    ISO 8601 with the UTC offset, then a human-readable form with the zone's abbreviation:
    ``Current date and time: 2026-12-01T10:30:00+00:00 (Tuesday, 01 December 2026 10:30 GMT)``.
    ``clock`` (the config's) replaces the system clock; a naive time it returns is read in
    ``zone``. On the system clock the line is made once per second and zone (formatting it
    costs more than the rest of the prompt).
    """
    key = None
    if clock is None:
        key = (int(time.time()), zone)
        if _now_cache[0] == key:
            return str(_now_cache[1])
        now = datetime.fromtimestamp(key[0], timezone.utc)
    else:
        now = clock()
        if now.tzinfo is None:
            now = now.replace(tzinfo=zone) if zone is not None else now.astimezone()
    now = (now.astimezone(zone) if zone is not None else now.astimezone()).replace(microsecond=0)
    line = (
        f"Current date and time: {now.isoformat()} "
        f"({now:%A, %d %B %Y %H:%M} {now.tzname() or now.strftime('%z')})"
    )
    if key is not None:
        _now_cache[:] = [key, line]
    return line

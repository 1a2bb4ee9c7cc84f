"""The engine loop: one ``agent.run()`` from the new input to the returned session.

A run goes by phases, each a method of :class:`Run` or of one collaborator:

- start: ``onRunStart``, the session checked, memory recalled (:class:`.RunMemory`);
- the agent's loop (:meth:`Run.invoke`): one model call per round (:class:`.ModelCaller`:
  prompt, budgets, stream, decode, dispatch), the round's calls run (:class:`.CallRunner`),
  their outcomes go back to the model; it ends on a terminal response, a handoff, an error,
  a pause for approvals or the tool-loop limit;
- finish: the turn's status, ``onRunComplete``, the trace; memory ingestion after the turn.

Nothing a model, tool or handler does escapes: failures become ``error`` / ``tool_error``
intents (:class:`.IntentDispatcher`) and the session is returned.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from auwgent._records import replace
from auwgent.errors import ApprovalError, AuwgentError, ConfigError, ConflictError, ContextError
from auwgent.runtime import approvals
from auwgent.runtime.budgets import Budgets, total_usage
from auwgent.runtime.calls import CallRunner
from auwgent.runtime.context_budget import ContextBudget
from auwgent.runtime.core import AgentCore
from auwgent.runtime.dispatch import IntentDispatcher
from auwgent.runtime.handoffs import (
    helper_invocation,
    note_completion,
    root_invocation,
    user_message,
)
from auwgent.runtime.intents import Control, Sink
from auwgent.runtime.invocation import AgentResult, Invocation
from auwgent.runtime.leases import Lease, LeaseLost, report_conflict
from auwgent.runtime.loops import LoopDetector
from auwgent.runtime.model_call import ModelCaller, Round, output_names
from auwgent.runtime.parts import Part, input_text
from auwgent.runtime.protocol.contract import AssistantTurn, Codec
from auwgent.runtime.run_memory import RunMemory
from auwgent.runtime.services import Services
from auwgent.runtime.session import Session, Turn, check_session, new_session, new_turn
from auwgent.runtime.steps import StepRunner
from auwgent.runtime.taint import TaintGuard
from auwgent.runtime.tracing import RunTrace

__all__ = ["Run"]


def _durable_steps(durable: str | None) -> StepRunner | None:
    """The step runner of ``durable`` (the ``dbos`` extra, imported only when asked)."""
    if durable is None:
        return None
    from auwgent.runtime.durable import step_runner

    return step_runner(durable)


class Run:
    """The state of one ``agent.run()``: the session, the middleware context, its phases."""

    def __init__(
        self,
        core: AgentCore,
        services: Services,
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
        self.services = services
        self.context = context
        self.config = config
        self.persona = persona
        self.trace = RunTrace(services.tracer, core.root) if services.tracer is not None else None
        repeats = core.options.loop_repeats
        self.loops = LoopDetector(repeats) if repeats is not None else None
        self.steps = _durable_steps(core.options.durable)  # None: no durable steps (.steps)
        self.handed_off = False
        self.turn: Turn | None = None
        self.session: Session = new_session(core.root)
        self.lease: Lease | None = None  # the conversation lock held (stops the run if lost)
        #: When ``timeouts.run`` ends this run, in the event loop's clock (``None``: never).
        self.deadline: float | None = None
        #: Where a resume journals its approved calls (``None``: not journaled).
        self.journal: approvals.ResumeJournal | None = None
        self.ctx = self._middleware_context(conversation_id, principal)
        self.budgets = Budgets(core.options.budget)
        self.memory = RunMemory(core, services, config, memory_scope, self._on_error)
        self.dispatch = IntentDispatcher(self, services, sink, self.trace)
        self.calls = CallRunner(self)
        self.approvals = approvals.ApprovalGate(self)
        self.model = ModelCaller(self)
        self.taint = TaintGuard(self)  # provenance, taint policy, spotlighting
        self.context_budget = ContextBudget(self)  # context windows, tool caps, compaction

    def _middleware_context(
        self, conversation_id: str | None, principal: Mapping[str, str] | None
    ) -> dict[str, Any]:
        root = self.core.root
        return {
            "activeAgent": root,
            "rootAgent": root,
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
        return await self.memory.embed_batch(self.ctx["activeAgent"], texts)

    # -- a whole run -------------------------------------------------------------------------

    async def execute(self, given: str | list[Part], session: Any) -> Session:
        """Run ``given`` (text or checked parts) as a new turn of ``session`` (a fresh one
        when ``None``)."""
        root, agents = self.core.root, self.core.doc["agents"]
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
                start = await self._run_start(start)
            except Exception as exc:
                await self.fail(exc, start, prefix="onRunStart failed: ")
                return self.session
            self.budgets.start(self.session["turns"][:-1])
            await self.memory.recall(input_text(given))
            await self._drive_with_timeout(start)
        finally:
            await self._finish(start)
        return self.session

    async def _run_start(self, start: str) -> str:
        """``onRunStart``; a session it returns replaces the given one (the agent it is with
        answers)."""
        if not self.services.middleware:
            return start
        returned = await self.services.middleware.run_start(self.session, self.ctx)
        if returned is self.session:
            return start
        assert self.turn is not None
        loaded = check_session(returned, self.core.root, self.core.doc["agents"])
        start = self._start_agent(loaded)
        self.session = loaded
        self.turn["agent"] = start
        if loaded.get("status") == approvals.AWAITING:
            raise _paused_error()  # the stored session stays as it is
        self.session["turns"].append(self.turn)
        return start

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
                returned = await self.services.middleware.run_start(self.session, self.ctx)
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

    def after_turn(self) -> None:
        """After the whole turn (not paused): memory learns from it in the background."""
        self.memory.ingest(self.turn, self.ctx.get("conversation_id"))

    async def _on_error(self, error: BaseException) -> None:
        await self.services.middleware.error(error, self.session, self.ctx)

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
        self.session["usage"] = total_usage(self.session["turns"])
        # Tool results may be any Python value; the session must stay JSON. One check per run.
        turn["intents"], turn["output"] = _jsonable([turn["intents"], turn["output"]])
        self.ctx["activeAgent"] = start
        self.ctx["rawBlock"] = None
        self.ctx["repairs"] = []
        try:
            if self.services.middleware:
                await self.services.middleware.run_complete(self.session, self.ctx)
        except Exception as exc:
            message = await self.fail(exc, start, prefix="onRunComplete failed: ", mark=False)
            if isinstance(exc, ConflictError):  # the save lost the revision race: not saved
                report_conflict(self.session, message)
        if self.trace is not None:
            self.trace.run_end(turn["status"])

    async def _drive(self, start: str, decisions: Mapping[str, Any] | None) -> None:
        missing = self.core.context_schema.missing(self.core.doc["agents"][start], self.context)
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
        assert self.turn is not None
        stack = self.session["stack"]
        if len(stack) > 1:
            await self._handed_over(decisions)
            return
        inv = root_invocation(self.core, self.config, self.session, self.turn)
        if decisions is not None and await self._paused_again(inv, decisions):
            return
        self._settle(await self.invoke(inv, top=True))

    async def _handed_over(self, decisions: Mapping[str, Any] | None) -> None:
        """The conversation was handed to a helper: the new input (or the approval decisions
        of its paused round) goes to it."""
        stack, turn = self.session["stack"], self.turn
        assert turn is not None
        inv = helper_invocation(self.core, self.config, stack)
        if decisions is None:
            inv.add(user_message(turn["input"]))
        elif await self._paused_again(inv, decisions):
            return
        self._settle(await self.invoke(inv, top=True))
        if inv.completed:
            stack.pop()
            note_completion(self.core, self.config, stack, inv, turn)
            turn["status"] = "handoff" if len(stack) > 1 else "complete"

    async def _paused_again(self, inv: Invocation, decisions: Mapping[str, Any]) -> bool:
        """Complete the round that paused for approvals and give its outcomes to the model;
        ``True`` when a resumed workflow deferred another step (the run pauses again)."""
        outcomes = await approvals.resume_outcomes(self, inv, decisions)
        if outcomes is None:
            return True
        codec = self.core.codec(inv.agent, self.config)
        for message in codec.results_messages(self.taint.spotlight(inv, outcomes)):
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

    # -- intents and failures (see dispatch.py) ----------------------------------------------

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
        """A final intent (:meth:`.IntentDispatcher.emit`)."""
        return await self.dispatch.emit(
            name, value, agent_name, raw, active=active, repairs=repairs
        )

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
        """Report a failure (:meth:`.IntentDispatcher.fail`); returns the intent's message."""
        return await self.dispatch.fail(
            error, agent_name, prefix=prefix, mark=mark, message=message, details=details,
            logged=logged,
        )  # fmt: skip

    # -- one agent's loop --------------------------------------------------------------------

    async def invoke(self, inv: Invocation, *, top: bool = False) -> AgentResult:
        """Drive ``inv`` until a terminal response, a handoff, an error or the loop limit."""
        missing = self.core.context_schema.missing(inv.agent, self.context)
        if missing:
            message = f"missing required context {', '.join(missing)} for {inv.name}"
            return await self._error(inv, ContextError(message))
        codec = self.core.codec(inv.agent, self.config)
        limit = self.core.max_loops(inv.agent, inv.config_name)
        retries = 0
        for _ in range(limit):
            inv.tools = self.context_budget.tools(inv.tools)  # `recall` once a result was cut
            rnd = await self.model.round(inv, codec, self.core.contract(inv), top)
            self._remember(inv, codec, rnd)
            if rnd.error is not None:
                return AgentResult("error", error=await self.fail(rnd.error, inv.name))
            if rnd.outcomes:
                result = await self._after_calls(inv, codec, rnd)
                if result is not None:
                    return result
                continue
            problems = rnd.problems or self._missing_output(inv, rnd)
            if not problems:
                return await self._terminal(inv, rnd)
            retries += 1
            if retries > self.core.options.max_output_retries:
                return await self._error(inv, _still_invalid(inv, retries - 1, problems))
            inv.add(codec.feedback_message(_feedback(problems)))
        return await self._error(inv, _loop_limit(inv, limit))

    async def _error(self, inv: Invocation, error: BaseException) -> AgentResult:
        return AgentResult("error", error=await self.fail(error, inv.name))

    async def _after_calls(self, inv: Invocation, codec: Codec, rnd: Round) -> AgentResult | None:
        """The round's calls have run: pause, stop, hand off, or ``None`` to go on."""
        outcomes = rnd.outcomes
        if any(o.status == "pending" for o in outcomes):
            approvals.pause(self, outcomes)
            return AgentResult(approvals.AWAITING)
        stop = None
        if self.loops is not None:  # a model going round in circles (see loops.py)
            stop = self.loops.watch(inv.name, inv.tools, outcomes, rnd.problems)
        for message in codec.results_messages(self.taint.spotlight(inv, outcomes)):
            inv.add(message)
        if stop is not None:
            return await self._error(inv, AuwgentError(stop))
        if self.handed_off:
            return AgentResult("handoff")
        if rnd.problems:
            inv.add(codec.feedback_message("\n".join(rnd.problems)))
        return None

    def _missing_output(self, inv: Invocation, rnd: Round) -> list[str]:
        structured = inv.agent["output"]["kind"] != "text"
        if structured and rnd.output is None:
            names = " or ".join(output_names(inv.agent, self.core.doc["types"]))
            return [f"No output was given: answer with your structured output ({names})."]
        if not structured and not rnd.texts and not rnd.customs and not inv.completed:
            return ["The response was empty: answer the user."]
        return []

    async def _terminal(self, inv: Invocation, rnd: Round) -> AgentResult:
        if rnd.output is not None:
            response: Any = dict(rnd.output)
            output: Any = rnd.output["response"]
        else:
            output = "\n\n".join(rnd.texts)
            response = {"text": output}
        if rnd.truncated:
            response["truncated"] = True
        response["finish_reason"] = rnd.finish_reason
        response["usage"] = rnd.usage
        self.ctx["activeAgent"] = inv.name
        try:
            if self.services.middleware:
                await self.services.middleware.llm_end(response, self.ctx)
        except Exception as exc:
            await self.fail(exc, inv.name, prefix="onLLMEnd failed: ", mark=False)
        return AgentResult("complete", output=output)

    def _remember(self, inv: Invocation, codec: Codec, rnd: Round) -> None:
        text = "".join(rnd.chunks)
        if text or rnd.native_calls or rnd.reasoning:
            message = codec.assistant_message(AssistantTurn(text, tuple(rnd.native_calls)))
            if rnd.reasoning:
                # The provider wants its reasoning back, unchanged, with the same answer.
                message = replace(message, reasoning=tuple(rnd.reasoning))
            inv.add(message)


def _paused_error() -> ApprovalError:
    return ApprovalError(
        "this session is awaiting approvals: continue it with agent.resume(session, "
        "decisions) before running new input"
    )


def _still_invalid(inv: Invocation, retries: int, problems: Sequence[str]) -> AuwgentError:
    return AuwgentError(
        f"{inv.name}'s output was still invalid after {retries} retries: " + "; ".join(problems)
    )


def _loop_limit(inv: Invocation, limit: int) -> AuwgentError:
    return AuwgentError(
        f"tool-loop limit reached: {inv.name} made {limit} model calls without a final "
        f"answer (maxToolLoops = {limit})"
    )


def _jsonable(value: Any) -> Any:
    """``value`` if it is JSON already, else its JSON rendering with unknown objects as strings."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def _feedback(problems: Sequence[str]) -> str:
    return "Your last response could not be used:\n- " + "\n- ".join(problems)

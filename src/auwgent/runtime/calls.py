"""Running what the model calls: tools, workflows and helpers, with their intents.

Every call goes the same way: refuse what the agent may not call (``tool_error``, nothing
runs), emit the call intent (middleware and handlers may skip it or supply the result),
validate the arguments against the declared parameters, pass the approval gate when the call
is marked ``@approval`` (:mod:`.approvals`), then run it and emit the result or the error. A
workflow's own tool calls take the same path; a helper runs as a nested agent invocation of
the engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from auwgent.errors import ToolError, WorkflowError, describe_error
from auwgent.runtime import jsontext, origin
from auwgent.runtime.code_mode import execute
from auwgent.runtime.context_budget import RECALL
from auwgent.runtime.decisions import Journal, StepPaused, Verdict
from auwgent.runtime.evaluate import schema
from auwgent.runtime.evaluate.workflows import run_workflow
from auwgent.runtime.host import RunHost
from auwgent.runtime.intents import Control
from auwgent.runtime.invocation import CALL_KINDS, Invocation, effective_tools
from auwgent.runtime.parts import Part, ToolParts
from auwgent.runtime.protocol.contract import CallOutcome, Contract, FinalEvent
from auwgent.runtime.providers.base import Message
from auwgent.runtime.session import Frame, message_to_json
from auwgent.runtime.tools import not_configured, result_text

__all__ = ["CallRunner"]

_RESULT_INTENT = {"tool": "tool_result", "workflow": "workflow_result", "helper": "helper_result"}


class CallRunner:
    """Runs the calls of one ``agent.run()`` on behalf of its run (:class:`~.host.RunHost`)."""

    def __init__(self, run: RunHost) -> None:
        self.run = run

    async def refuse(
        self,
        inv: Invocation,
        kind: str,
        name: str,
        args: Mapping[str, Any],
        message: str,
        call_id: str | None,
    ) -> CallOutcome:
        await self.run.emit("tool_error", {"tool": name, "message": message}, inv.name)
        return CallOutcome(kind, name, args, "error", error=message, call_id=call_id)  # type: ignore[arg-type]

    async def call(self, inv: Invocation, contract: Contract, event: FinalEvent) -> CallOutcome:
        kind = CALL_KINDS[event.kind]
        name = str(event.name)
        args = dict(event.payload.get("args") or {})
        try:
            return await self._call_checked(inv, contract, event, kind, name, args)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # anything unexpected still becomes a tool_error
            return await self.refuse(inv, kind, name, args, describe_error(exc), event.call_id)

    async def _call_checked(
        self,
        inv: Invocation,
        contract: Contract,
        event: FinalEvent,
        kind: str,
        name: str,
        args: dict[str, Any],
    ) -> CallOutcome:
        spec = contract.callable(kind, name)  # type: ignore[arg-type]
        if spec is None:
            label = {"tool": "Tool", "workflow": "Workflow", "helper": "Helper"}[kind]
            return await self.refuse(
                inv, kind, name, args, f"{label} not found: {name}", event.call_id
            )
        control = await self.decide(inv, kind, name, args, event.raw, event.repairs)
        if control is not None:
            return _decided(kind, name, args, control, event.call_id)
        errors = _check_args(spec.params, args, self.run.core.doc["types"])
        if errors:
            message = f"invalid arguments for {name}: " + "; ".join(errors)
            return await self.refuse(inv, kind, name, args, message, event.call_id)
        # Only the answering agent's own model calls can wait for agent.resume(): they are
        # the calls whose history (inv.record) is part of the session.
        gate = await self.run.taint.gate(inv, kind, name, args, spec)
        if gate.refusal is not None:
            return await self.refuse(inv, kind, name, args, gate.refusal, event.call_id)
        verdict = await self.run.approvals.check(
            inv,
            kind,
            name,
            args,
            gate.approval,
            spec.params,
            deferrable=inv.record is not None,
            taint=gate.provenance,
        )
        if verdict is not None:
            return await self.decided(inv, kind, name, verdict, event.call_id)
        if contract.code_api is not None:  # code mode: the one callable, execute_code
            return await execute(self.run, inv, contract, str(args["code"]), event.call_id)
        return await self.run_call(inv, kind, name, args, event.call_id)

    async def call_tool(self, name: str, args: Mapping[str, Any]) -> Any:
        """Around each tool call (the model's, a workflow step's, one from code mode): the
        implementation itself, once the call is decided, checked and approved; through the
        run's durable steps when it has them (:mod:`.steps`)."""
        steps = self.run.steps
        if steps is None:
            return await self.run.core.registry.call(name, args)
        return await steps.tool(self.run.core.registry, name, args)

    async def tool_result(
        self, inv: Invocation, name: str, args: Mapping[str, Any], result: Any
    ) -> None:
        """After each tool result (a tool, a workflow's step, ``execute_code``): the one place
        a tool's result is reported, as a ``tool_result`` intent."""
        payload = {"name": name, "args": args, "result": result, "overridden": False}
        await self.run.emit("tool_result", payload, inv.name)

    async def decided(
        self, inv: Invocation, kind: str, name: str, verdict: Verdict, call_id: str | None
    ) -> CallOutcome:
        """A gated call after its decision: pending, denied (the caller is told), or run."""
        args = verdict.args
        if verdict.approved:
            return await self.run_call(inv, kind, name, args, call_id)
        return CallOutcome(
            kind,  # type: ignore[arg-type]
            name,
            args,
            "pending" if verdict.deferred else "error",
            error=None if verdict.deferred else verdict.denial(name),
            call_id=call_id,
            request_id=verdict.request_id or None,
        )

    async def run_call(
        self, inv: Invocation, kind: str, name: str, args: Mapping[str, Any], call_id: str | None
    ) -> CallOutcome:
        """Around each call that runs (decided, checked and approved): the tool, workflow or
        helper itself."""
        if kind == "tool" and name == RECALL and self.run.context_budget.offers_recall(inv):
            return await self.run.context_budget.recall_call(inv, args, call_id)
        if kind == "tool":
            return await self._tool(inv, name, args, call_id, _declared_returns(inv, name))
        if kind == "workflow":
            return await self._workflow(inv, name, args, call_id)
        return await self._helper(inv, name, args, call_id)

    async def decide(
        self,
        inv: Invocation,
        kind: str,
        name: str,
        args: Mapping[str, Any],
        raw: str | None = None,
        repairs: Sequence[Mapping[str, str]] = (),
    ) -> Control | None:
        """The one place that decides whether a call runs, for the model's calls and a
        workflow's tool calls alike.

        Emits the call intent: middleware and handlers may skip the call or supply its result,
        and one that raises skips it (fail closed). Returns ``None`` when the call is to run;
        otherwise the control, whose ``tool_skipped`` or result intent is already emitted.
        """
        speaker = _speaker(inv, kind, name)
        intent = f"{kind}_call"
        control = await self.run.emit(
            intent, {"type": name, "args": args}, speaker, raw, active=inv.name, repairs=repairs
        )
        if control is None:
            return None
        if control.skip:
            await self.run.emit(
                "tool_skipped", {"type": name, "args": args}, speaker, active=inv.name
            )
        else:
            payload = {"name": name, "args": args, "result": control.result, "overridden": True}
            await self.run.emit(_RESULT_INTENT[kind], payload, speaker, active=inv.name)
        return control

    async def _tool(
        self,
        inv: Invocation,
        name: str,
        args: Mapping[str, Any],
        call_id: str | None,
        returns: schema.IRType | None,
    ) -> CallOutcome:
        registry = self.run.core.registry
        if not registry.has(name):
            message = not_configured(name)
            return await self.refuse(inv, "tool", name, args, message, call_id)
        try:
            result = await self.call_tool(name, args)
            images: tuple[Part, ...] = ()
            if isinstance(result, ToolParts):
                result, images = result.result, result.parts
            if returns is not None:
                self._check_result(name, result, returns)
        except Exception as exc:
            message = describe_error(exc)
            await self._tool_failed(inv, name, exc, message)
            return CallOutcome("tool", name, args, "error", error=message, call_id=call_id)
        await self.tool_result(inv, name, args, result)
        text = result_text(result)
        self.run.taint.result(inv, name, args, text)  # the whole result: what recall may show
        text = self.run.context_budget.cap(inv, name, text)  # @maxOutput
        return CallOutcome("tool", name, args, "ok", text, call_id=call_id, parts=images)

    def _check_result(self, name: str, result: Any, returns: schema.IRType) -> Any:
        """``result`` as a workflow reads it; ``ToolError`` when it breaks the declared type.

        A JSON string from a tool declared to return structured data is decoded first, so it
        is validated like an output.
        """
        types = self.run.core.doc["types"]
        value = schema.parsed_result(result, returns, types)
        errors = schema.validate(value, returns, types)
        if errors:
            expected = schema.describe(returns, types)
            raise ToolError(
                f"tool {name} returned a value that breaks its declared return type "
                f"({expected}): " + "; ".join(errors)
            )
        return value

    async def _tool_failed(
        self, inv: Invocation, name: str, exc: BaseException, message: str
    ) -> None:
        self.run.ctx["activeAgent"] = inv.name
        try:
            handled = await self.run.services.middleware.error(
                ToolError(f"{name}: {message}"), self.run.session, self.run.ctx
            )
        except Exception:
            handled = False
        if not handled:
            await self.run.emit("tool_error", {"tool": name, "message": message}, inv.name)

    async def _workflow(
        self, inv: Invocation, name: str, args: Mapping[str, Any], call_id: str | None
    ) -> CallOutcome:
        return await self.workflow(inv, name, args, call_id, Journal())

    async def workflow(
        self,
        inv: Invocation,
        name: str,
        args: Mapping[str, Any],
        call_id: str | None,
        journal: Journal,
    ) -> CallOutcome:
        """Run a workflow; ``journal`` replays the steps of a run resumed after a pause."""
        workflow = next(w for w in inv.agent["workflows"] if w["name"] == name)

        async def call_tool(tool: str, tool_args: dict[str, Any], loc: Any) -> Any:
            done, value = journal.replayed(tool, tool_args)
            if not done:
                value = await self._workflow_tool(inv, workflow, tool, tool_args, journal)
                journal.add(tool, tool_args, value)
            return value

        self.run.ctx["workflow"] = name
        try:
            result = await run_workflow(workflow, args, ctx=self.run.context, call_tool=call_tool)
        except StepPaused as paused:  # a step waits for agent.resume(): so does the workflow
            self.run.approvals.journals[paused.request_id] = journal.steps
            return CallOutcome(
                "workflow",
                name,
                args,
                "pending",
                call_id=call_id,
                request_id=paused.request_id,
            )
        except Exception as exc:
            error = exc if isinstance(exc, WorkflowError) else WorkflowError(describe_error(exc))
            failure = {"error": str(error), "file": error.file, "line": error.line}
            await self.run.emit(
                "workflow_result", {"name": name, "args": args, "result": failure}, inv.name
            )
            await self._tool_failed(inv, name, error, str(error))
            # The model learns only that the workflow failed: the scoped tool, the .agent
            # location and the exception text are the application's (intents, logs).
            private = f"workflow {name} failed: it could not be completed"
            return CallOutcome("workflow", name, args, "error", error=private, call_id=call_id)
        finally:
            self.run.ctx.pop("workflow", None)
        await self.run.emit(
            "workflow_result", {"name": name, "args": args, "result": result}, inv.name
        )
        return CallOutcome("workflow", name, args, "ok", result_text(result), call_id=call_id)

    async def _workflow_tool(
        self,
        inv: Invocation,
        workflow: Mapping[str, Any],
        name: str,
        args: dict[str, Any],
        journal: Journal,
    ) -> Any:
        tool = next((t for t in workflow["tools"] if t["name"] == name), None)
        tool = tool or next((t for t in inv.tools if t["name"] == name), None)
        if tool is None:
            raise ToolError(f"workflow {workflow['name']} cannot call {name}: no such tool")
        # The step that paused was asked, checked and decided before: only its decision is left.
        verdict = journal.decision(name, args)
        if verdict is None:
            control = await self.decide(inv, "tool", name, args)
            if control is not None:
                return None if control.skip else control.result
            errors = _check_args(tool["params"], args, self.run.core.doc["types"])
            if errors:
                message = f"invalid arguments for {name}: " + "; ".join(errors)
                await self.run.emit("tool_error", {"tool": name, "message": message}, inv.name)
                raise ToolError(message)
        if not self.run.core.registry.has(name):
            message = not_configured(name)
            await self.run.emit("tool_error", {"tool": name, "message": message}, inv.name)
            raise ToolError(message)
        if verdict is None:
            verdict = await self.run.approvals.check(
                inv,
                "tool",
                name,
                args,
                tool.get("approval"),
                tool["params"],
                deferrable=inv.record is not None,
            )
            if verdict is not None and verdict.deferred:
                raise StepPaused(verdict.request_id)
        if verdict is not None:
            if not verdict.approved:  # a failed step: the workflow ends with this error
                message = verdict.denial(name)
                await self.run.emit("tool_error", {"tool": name, "message": message}, inv.name)
                raise ToolError(message)
            args = dict(verdict.args)
        try:
            result = await self.call_tool(name, args)
            value = self._check_result(name, result, tool["returns"])
        except Exception as exc:
            await self._tool_failed(inv, name, exc, describe_error(exc))
            raise
        await self.tool_result(inv, name, args, result)
        self.run.taint.result(inv, name, args, result_text(result), via=workflow["name"])
        return value

    async def _helper(
        self, inv: Invocation, name: str, args: Mapping[str, Any], call_id: str | None
    ) -> CallOutcome:
        core = self.run.core
        use = next(h for h in inv.agent["helpers"] if h["name"] == name)
        helper = core.doc["agents"][name]
        if helper["input"]["kind"] == "text":
            text = str(args.get("input", ""))
        else:
            text = jsontext.text(args)
        child = Invocation(
            agent=helper,
            config_name=core.config_for(helper, self.run.config),
            history=[Message(role="user", content=text)],
            tools=effective_tools(helper, use["tools"], inv.tools),
            handoff=use["handoff"],
            grant=use["tools"],
        )
        self.run.taint.enter(child, inv, name)
        with origin.outside():  # the helper's own calls are not the code's
            result = await self.run.invoke(child)
        self.run.ctx["activeAgent"] = inv.name
        self.run.taint.helper_result(inv, child, name, result.output)
        if result.status == "error":
            message = f"helper {name} failed: {result.error}"
            await self.run.emit("tool_error", {"tool": name, "message": message}, inv.name)
            return CallOutcome("helper", name, args, "error", error=message, call_id=call_id)
        if use["handoff"] == "user" or result.status == "handoff":
            if use["handoff"] == "user" and not child.completed and result.status != "handoff":
                self._push_frame(child, inv)
            self.run.handed_off = True
            notice = f"{name} is now answering the user directly; you will be told when it is done."
            return CallOutcome("helper", name, args, "ok", notice, call_id=call_id)
        await self.run.emit(
            "helper_result",
            {"name": name, "args": args, "result": result.output},
            name,
            active=inv.name,
        )
        if use["handoff"] == "user_then_continue":
            notice = (
                f"{name} answered the user directly and has finished; its answer was: "
                f"{result_text(result.output)}. Continue without repeating it."
            )
            return CallOutcome("helper", name, args, "ok", notice, call_id=call_id)
        return CallOutcome("helper", name, args, "ok", result_text(result.output), call_id=call_id)

    def _push_frame(self, child: Invocation, parent: Invocation) -> None:
        frame: Frame = {
            "agent": child.name,
            "config": child.config_name,
            "handoff": "user",
            "parent": parent.name,
            "tools": child.grant,
            "messages": [message_to_json(m) for m in child.history],
        }
        self.run.session["stack"].append(frame)


# ---------------------------------------------------------------------------------------------
# Pure helpers


def _decided(
    kind: str, name: str, args: Mapping[str, Any], control: Control, call_id: str | None
) -> CallOutcome:
    """What the model is told of a call the application decided: skipped, or its result."""
    if control.skip:
        return CallOutcome(kind, name, args, "skipped", call_id=call_id)  # type: ignore[arg-type]
    text = result_text(control.result)
    return CallOutcome(kind, name, args, "ok", text, call_id=call_id)  # type: ignore[arg-type]


def _declared_returns(inv: Invocation, name: str) -> schema.IRType | None:
    """The declared return type of the tool ``name`` that ``inv``'s model may call."""
    return next((t["returns"] for t in inv.tools if t["name"] == name), None)


def _speaker(inv: Invocation, kind: str, name: str) -> str:
    """The agent_name of a call's intents: the helper itself for helper calls (the manual's
    "helper invoked: {agent_name}"), else the agent that made the call."""
    return name if kind == "helper" else inv.name


def _check_args(
    params: Sequence[schema.IRField], args: Mapping[str, Any], types: schema.Types
) -> list[str]:
    return schema.validate(args, schema.object_type(params), types, path="$")

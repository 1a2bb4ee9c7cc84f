"""Dispatching intents: to the stream's consumer, the trace, middleware and the user's
handlers (:class:`IntentDispatcher`), and reporting failures as ``error`` intents.

A final intent goes to ``onIntent`` middleware and then the handlers; the first control
returned for a call intent wins, and a hook that raises on a call skips it (fail closed). A
partial intent goes to the consumer at once and to partial hooks when there are any.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Protocol

from auwgent.errors import describe_error
from auwgent.runtime import origin
from auwgent.runtime.intents import (
    Control,
    HookFailure,
    IntentEvent,
    NotAControl,
    Sink,
    control_of,
)
from auwgent.runtime.invocation import CALL_KINDS
from auwgent.runtime.protocol.contract import Contract, PartialEvent
from auwgent.runtime.protocol.lazy import LazyDict
from auwgent.runtime.services import Services
from auwgent.runtime.session import Session, Turn
from auwgent.runtime.tracing import RunTrace

__all__ = ["SKIP", "IntentDispatcher", "unheard_error"]

log = logging.getLogger("auwgent")

#: What a call intent yields when a handler or middleware raised on it: the call is skipped.
SKIP = Control(skip=True)


def unheard_error(agent_name: str, message: str) -> str:
    """The warning logged for an ``error`` intent that no handler or middleware takes."""
    return f"error intent of {agent_name} (no handler or middleware takes it): {message}"


class _RunState(Protocol):
    """What the dispatcher reads of its run (:class:`~auwgent.runtime.engine.Run`)."""

    @property
    def session(self) -> Session: ...
    @property
    def turn(self) -> Turn | None: ...
    @property
    def ctx(self) -> dict[str, Any]: ...


class IntentDispatcher:
    """The intents of one run (see the module docstring)."""

    def __init__(
        self, run: _RunState, services: Services, sink: Sink | None, trace: RunTrace | None
    ) -> None:
        self._run = run
        self._services = services
        self.sink = sink
        self._trace = trace

    def to_sink(self, event: IntentEvent) -> None:
        """Before each sink call: hand ``event`` to the stream's consumer (when there is one)."""
        if self.sink is not None:
            self.sink.put_nowait(event)

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
        if origin.VIA.get() is not None:
            value = origin.mark(value)  # "via": "execute_code" for the calls of code mode
        self._record(name, value, agent_name, active)
        failures: list[HookFailure] = []
        returned = await self._hooks(name, value, agent_name, raw, active, repairs, failures)
        if name not in CALL_KINDS:  # only a call is controlled: other return values are unread
            for failure in failures:
                await self._hook_failed(failure, name, value, agent_name, skipped=False)
            return None
        control, refused = await self._control(returned, name, value, agent_name)
        for failure in failures:
            await self._hook_failed(failure, name, value, agent_name, skipped=True)
        return SKIP if failures or refused else control

    def _record(self, name: str, value: Any, agent_name: str, active: str | None) -> None:
        """The intent into the turn, the trace and the stream."""
        turn = self._run.turn
        if turn is not None:
            turn["intents"].append({"name": name, "value": value, "agent": agent_name})
        if self._trace is not None and isinstance(value, Mapping):
            self._trace.intent(name, value, agent_name, active)
        if self.sink is not None:
            self.to_sink(IntentEvent(name, value, agent_name, False))

    async def _hooks(
        self,
        name: str,
        value: Any,
        agent_name: str,
        raw: str | None,
        active: str | None,
        repairs: Sequence[Mapping[str, str]],
        failures: list[HookFailure],
    ) -> list[tuple[str, Any]]:
        """What ``onIntent`` middleware and the handlers returned on the intent."""
        services, ctx = self._services, self._run.ctx
        returned: list[tuple[str, Any]] = []
        if services.middleware.has_intent:
            ctx["activeAgent"] = active or agent_name
            ctx["rawBlock"] = raw
            ctx["repairs"] = [dict(r) for r in repairs]
            returned += await services.middleware.intent(name, value, ctx, failures)
        if services.handlers:
            returned += await services.handlers.dispatch(name, value, agent_name, failures)
        return returned

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

    # -- partial intents ---------------------------------------------------------------------

    def partial(
        self,
        agent_name: str,
        contract: Contract,
        event: PartialEvent,
        reported: set[tuple[str, int]],
    ) -> Coroutine[Any, Any, None] | None:
        """A partial intent: to the stream's consumer at once; the coroutine that gives it to
        partial middleware and handlers, when there are any (``None`` otherwise: a partial is
        sent per chunk, and a coroutine for nobody costs more than building it).

        ``reported`` holds the (handler, segment) failures already reported this round."""
        if event.kind == "response_text" and contract.output["kind"] != "text":
            return None  # free text is not the output of a structured agent
        services = self._services
        hooked = services.middleware.has_partial or bool(services.partial_handlers)
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
            self.to_sink(IntentEvent(name, value, agent_name, True))
        if hooked:
            return self._partial_hooks(name, value, agent_name, event.segment, reported)
        return None

    async def _partial_hooks(
        self,
        name: str,
        value: dict[str, Any],
        agent_name: str,
        segment: int,
        reported: set[tuple[str, int]],
    ) -> None:
        services = self._services
        failures: list[HookFailure] = []
        if services.middleware.has_partial:
            self._run.ctx["activeAgent"] = agent_name
            await services.middleware.intent_partial(name, value, self._run.ctx, failures)
        if services.partial_handlers:
            await services.partial_handlers.dispatch(name, value, agent_name, failures)
        for failure in failures:
            # One report per handler and segment, not one per streamed chunk.
            key = (failure.who, segment)
            if key not in reported:
                reported.add(key)
                await self._hook_failed(failure, name, value, agent_name, skipped=False)

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
        run = self._run
        turn = run.turn
        if mark and turn is not None and agent_name == turn["agent"]:
            turn["status"] = "error"
            turn["error"] = message
        run.ctx["activeAgent"] = agent_name
        try:
            handled = await self._services.middleware.error(error, run.session, run.ctx)
        except Exception:
            handled = False  # a failing error hook must not hide the original error
        if not handled:
            await self.emit("error", {"message": message, **(details or {})}, agent_name)
            if not logged and not self._heard_errors(agent_name):
                log.warning("%s", unheard_error(agent_name, message))
        return message

    def _heard_errors(self, agent_name: str) -> bool:
        services = self._services
        return (
            self.sink is not None
            or services.handlers.takes("error")
            or services.middleware.hears_errors(agent_name)
        )

    async def _hook_failed(
        self, failure: HookFailure, name: str, value: Any, agent_name: str, *, skipped: bool
    ) -> None:
        """Report a handler or middleware that raised on ``name``: the ``auwgent`` log (with
        the traceback) and an ``error`` intent naming it and the intent."""
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

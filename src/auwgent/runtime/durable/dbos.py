"""The DBOS step runner: each model request and each tool call of a run is a DBOS step of the
workflow the run executes in.

A model request's step reads the provider's stream live (the run decodes and dispatches its
events as they come) and records every event; once the stream ends and the step's result is
checkpointed the run goes on. Replayed after a crash, a completed request's recorded events
are given back without a request being sent. A tool call's step records the
implementation's result (or its error); a completed call is never run again. Calls decoded
while the model still streams wait for the model request's checkpoint before they start, so
a request that was not checkpointed never has calls that ran.

A tool implementation that declares a keyword parameter ``idempotency_key`` is given
``"<workflow id>:<step id>"``: the same for every attempt of the same call, so a call
interrupted mid-way (it ran, its result was not checkpointed) and run again can recognise
its own earlier side effect.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Mapping
from typing import Any

from dbos import DBOS, StepOptions

from auwgent.errors import ConfigError
from auwgent.runtime.providers.base import StreamEvent
from auwgent.runtime.steps import IDEMPOTENCY_PARAM

__all__ = ["DBOSSteps"]

_MODEL_STEP: StepOptions = {"name": "auwgent.model_request"}
_TOOL_STEP: StepOptions = {"name": "auwgent.tool_call"}
_END = object()


def _workflow_id() -> str:
    """The workflow this run executes in (a ConfigError outside of one: fail closed)."""
    workflow = DBOS.workflow_id
    if workflow is None:
        raise ConfigError(
            'durable: "dbos" runs must execute inside a DBOS workflow (auwgent serve '
            "--durable dbos starts one per run; see docs/durable.md); nothing was sent"
        )
    return workflow


class DBOSSteps:
    """:class:`~auwgent.runtime.steps.StepRunner` on DBOS steps (one per run)."""

    def __init__(self) -> None:
        #: The model request step the calls decoded from its stream wait for.
        self._request: asyncio.Future[Any] | None = None

    def model(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        return self._model(events)

    async def _model(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        _workflow_id()
        pipe: asyncio.Queue[Any] = asyncio.Queue()
        live = False

        async def request() -> list[StreamEvent]:
            nonlocal live
            live = True
            seen: list[StreamEvent] = []
            async for event in events:
                seen.append(event)
                pipe.put_nowait(event)
            return seen

        step = asyncio.ensure_future(DBOS.run_step_async(_MODEL_STEP, request))
        step.add_done_callback(lambda _: pipe.put_nowait(_END))
        self._request = step
        try:
            while (event := await pipe.get()) is not _END:
                yield event
            recorded = await step  # the step's error, recorded or new, is raised here
            if not live:
                for event in recorded:
                    yield event
        finally:
            if not step.done():
                step.cancel()

    async def tool(self, registry: Any, name: str, args: Mapping[str, Any]) -> Any:
        workflow = _workflow_id()
        request = self._request
        if request is not None and not request.done():
            await asyncio.wait({request})  # its checkpoint first (its failure is the run's)
        wants_key = _wants_key(registry.implementation(name))

        async def call() -> Any:
            given = dict(args)
            if wants_key:
                given[IDEMPOTENCY_PARAM] = f"{workflow}:{DBOS.step_id}"
            return await registry.call(name, given)

        return await DBOS.run_step_async(_TOOL_STEP, call)


def _wants_key(fn: Any) -> bool:
    """Whether the implementation ``fn`` declares an ``idempotency_key`` parameter."""
    if fn is None:
        return False
    try:
        return IDEMPOTENCY_PARAM in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False

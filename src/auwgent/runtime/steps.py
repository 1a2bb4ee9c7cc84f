"""The step-runner seam: the two narrowest points of a run where durable execution plugs in.

A run calls the outside world in two ways that a durable engine must checkpoint: a model
request (a stream of provider events) and a tool implementation (a workflow's steps and MCP
tools included, as they go through the tool registry). :class:`~auwgent.runtime.engine.Run`
holds a :class:`StepRunner` in ``run.steps`` (``None`` by default: both are called straight
through, at no cost). ``"durable": "dbos"`` in the runtime config gives it
:class:`auwgent.runtime.durable.dbos.DBOSSteps` (docs/durable.md).

The hooks (each a ``None`` check where the call is made):

- ``Run._round`` (engine.py): the provider's event stream of one model request goes through
  :meth:`StepRunner.model`;
- ``CallRunner.run_tool`` (calls.py), used by ``_tool`` and ``_workflow_tool``: a tool
  implementation goes through :meth:`StepRunner.tool`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from auwgent.runtime.providers.base import StreamEvent

#: The keyword a tool implementation declares to be given its idempotency key (docs/durable.md).
IDEMPOTENCY_PARAM = "idempotency_key"


class StepRunner(Protocol):
    """Runs a run's model requests and tool calls as checkpointed steps."""

    def model(self, events: AsyncIterator[StreamEvent]) -> AsyncIterator[StreamEvent]:
        """The events of one model request: ``events`` (not started yet) read live and
        recorded, or the recorded events of a request that already completed."""
        ...

    async def tool(self, registry: Any, name: str, args: Mapping[str, Any]) -> Any:
        """The result of ``registry.call(name, args)``, run once: a completed call's recorded
        result (or error) is returned again without running it."""
        ...

"""One agent answering one input (:class:`Invocation`), what it ends with (:class:`AgentResult`),
and the IR rules for which callables a helper sees.

The engine, the call runner, approvals and code mode all pass invocations around; this module
imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auwgent._records import field, record
from auwgent.ir.model import Agent as IRAgent
from auwgent.runtime.evaluate import schema
from auwgent.runtime.providers.base import Message
from auwgent.runtime.session import message_to_json

__all__ = [
    "CALL_KINDS",
    "AgentResult",
    "Invocation",
    "effective_tools",
    "helper_params",
]

#: A call intent's name -> the kind of callable it calls.
CALL_KINDS = {"tool_call": "tool", "workflow_call": "workflow", "helper_call": "helper"}

_TEXT_INPUT_PARAM: schema.IRField = {
    "name": "input",
    "type": {"kind": "string"},
    "optional": False,
    "description": "the request for the helper",
}


@record(frozen=False)
class Invocation:
    """One agent (the root or a helper) answering one input."""

    agent: IRAgent
    config_name: str
    history: list[Message]
    tools: tuple[Mapping[str, Any], ...]  # model-visible tools: own + granted
    handoff: str = "none"
    grant: Any = "none"
    record: list[dict[str, Any]] | None = None  # where new history messages are also stored
    completed: bool = False  # a handed-off helper emitted COMPLETE_INTENT
    summary: str | None = None
    name: str = field(init=False)  # the agent's name (read at every step of the loop)

    def __post_init__(self) -> None:
        self.name = str(self.agent["name"])

    def add(self, message: Message) -> None:
        self.history.append(message)
        if self.record is not None:
            self.record.append(message_to_json(message))


@record(frozen=False)
class AgentResult:
    status: str  # "complete", "handoff", "error" or "awaiting_approval" (paused)
    output: Any = None
    error: str | None = None


def effective_tools(
    agent: Mapping[str, Any], grant: Any, parent_tools: Sequence[Mapping[str, Any]]
) -> tuple[Mapping[str, Any], ...]:
    """A helper's model-visible tools: its own, then those its parent grants it."""
    own = list(agent["tools"])
    names = {t["name"] for t in own}
    if grant == "all":
        granted = list(parent_tools)
    elif isinstance(grant, (list, tuple)):
        wanted = set(grant)
        granted = [t for t in parent_tools if t["name"] in wanted]
    else:
        granted = []
    return tuple(own + [t for t in granted if t["name"] not in names])


def helper_params(helper: Mapping[str, Any], types: schema.Types) -> tuple[schema.IRField, ...]:
    """The params a parent's model passes to a helper: ``input`` for Text, else its fields."""
    if helper["input"]["kind"] == "text":
        return (_TEXT_INPUT_PARAM,)
    resolved = schema.resolve(helper["input"], types)
    return tuple(resolved["fields"]) if resolved["kind"] == "object" else ()

"""Where a run starts: the root agent's invocation with the conversation's history, or the
helper the conversation was handed to (the session's stack), with the tools the IR grants it.

A session only says which helper is answering, never what it may call: the tools of the top
frame are recomputed from the IR (a stored grant is not trusted).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from auwgent.errors import ConfigError
from auwgent.runtime.core import AgentCore
from auwgent.runtime.invocation import Invocation, effective_tools
from auwgent.runtime.parts import stored_parts
from auwgent.runtime.providers.base import Message
from auwgent.runtime.session import Frame, Session, Turn, message_to_json, messages_from_json

__all__ = ["helper_invocation", "note_completion", "root_invocation", "user_message"]

Selected = str | Mapping[str, str] | None


def root_invocation(core: AgentCore, config: Selected, session: Session, turn: Turn) -> Invocation:
    """The root agent answering ``turn``, with the root's history of the earlier turns."""
    root_ir = core.doc["agents"][core.root]
    history: list[Message] = []
    for earlier in session["turns"][:-1]:
        if earlier.get("agent", core.root) == core.root:
            history.append(user_message(earlier["input"]))
        history.extend(messages_from_json(earlier.get("messages", ())))
    history.append(user_message(turn["input"]))
    history.extend(messages_from_json(turn["messages"]))  # a resumed turn's so far
    return Invocation(
        agent=root_ir,
        config_name=core.config_for(root_ir, config),
        history=history,
        tools=tuple(root_ir["tools"]),
        record=turn["messages"],
    )


def helper_invocation(core: AgentCore, config: Selected, stack: list[Frame]) -> Invocation:
    """The helper on top of ``stack`` (it was handed the conversation), with its history."""
    top = stack[-1]
    agent = core.doc["agents"][top["agent"]]
    tools, grant = _stack_tools(core.doc["agents"], stack)
    record = list(top.get("messages", []))
    top["messages"] = record
    return Invocation(
        agent=agent,
        config_name=core.config_for(agent, config),
        history=messages_from_json(record),
        tools=tools,
        handoff="user",
        grant=grant,
        record=record,
    )


def note_completion(
    core: AgentCore, config: Selected, stack: list[Frame], inv: Invocation, turn: Turn
) -> None:
    """Tell the frame below that the helper ``inv`` finished the conversation it was handed."""
    below = stack[-1]
    agent = core.doc["agents"][below["agent"]]
    note = f"[{inv.name} finished the conversation it was handed"
    note += f": {inv.summary}]" if inv.summary else "]"
    message = core.codec(agent, config).feedback_message(note)
    if len(stack) == 1:
        turn["messages"].append(message_to_json(message))
    else:
        below["messages"] = [*below.get("messages", []), message_to_json(message)]


def user_message(given: Mapping[str, Any]) -> Message:
    """The user message of a turn's input (its parts, when it was given as parts)."""
    parts = stored_parts(given.get("parts", ()))
    return Message(role="user", content=str(given["text"]), parts=parts)


def _stack_tools(
    agents: Mapping[str, Any], stack: Sequence[Frame]
) -> tuple[tuple[Mapping[str, Any], ...], Any]:
    """The top frame's tools and grant, recomputed from the IR."""
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

"""The session: the plain, JSON-serialisable record of a conversation.

``await agent.run(text)`` returns a :class:`Session`; ``agent.run(text, session=s)`` continues
it, also in another process after ``json.dumps`` / ``json.loads``. Its shape (version 1)::

    {
      "version": 1,
      "agent": "Main",                 # the root agent that owns the conversation
      "system_prompt": "...",          # the last system prompt sent for the active agent
      "stack": [Frame, ...],           # bottom: the root agent; top: the agent answering next
      "turns": [Turn, ...]             # one per user input, oldest first
    }

A **frame** is ``{"agent": name, "config": name | None}``; a helper that was handed the
conversation (``handoff user``) adds ``"handoff"``, ``"parent"``, ``"tools"`` (its grant) and
``"messages"`` (its own history). A **turn** is ``{"id", "input": {"text"}, "agent",
"messages", "intents", "status", "error", "output"}``: ``messages`` are the root agent's
history messages of that exchange (see :func:`message_to_json`), ``intents`` the final intents
emitted, ``status`` one of ``"running"``, ``"complete"``, ``"handoff"``, ``"error"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from auwgent.errors import ConfigError

if TYPE_CHECKING:
    from auwgent.runtime.providers.base import Message

# Generated bindings import this module for the Session type: what only a run needs (uuid, the
# message classes) is imported inside the functions that use it.

__all__ = [
    "SESSION_VERSION",
    "Frame",
    "Session",
    "Turn",
    "message_from_json",
    "message_to_json",
    "new_session",
    "new_turn",
    "check_session",
]

SESSION_VERSION = 1


class _FrameRequired(TypedDict):
    agent: str


class Frame(_FrameRequired, total=False):
    """One entry of the session stack (see the module docstring)."""

    config: str | None
    handoff: str
    parent: str
    tools: Any
    messages: list[dict[str, Any]]


class TurnInput(TypedDict):
    text: str


class Turn(TypedDict):
    """One user exchange."""

    id: str
    input: TurnInput
    agent: str
    messages: list[dict[str, Any]]
    intents: list[dict[str, Any]]
    status: str
    error: str | None
    output: Any
    model_calls: list[dict[str, Any]]  # one per model call: {"model": "<provider>:<model>"}


class Session(TypedDict):
    """The conversation record returned by ``Agent.run`` (see the module docstring)."""

    version: int
    agent: str
    system_prompt: str
    stack: list[Frame]
    turns: list[Turn]


def new_session(root: str) -> Session:
    """An empty session owned by the agent ``root``."""
    return {
        "version": SESSION_VERSION,
        "agent": root,
        "system_prompt": "",
        "stack": [{"agent": root, "config": None}],
        "turns": [],
    }


def new_turn(text: str, agent: str) -> Turn:
    """A fresh turn for the user input ``text``, answered by ``agent``."""
    return {
        "id": _new_id(),
        "input": {"text": text},
        "agent": agent,
        "messages": [],
        "intents": [],
        "status": "running",
        "error": None,
        "output": None,
        "model_calls": [],
    }


def check_session(value: Any, root: str) -> Session:
    """Check that ``value`` is a usable session of the agent ``root``; return a working copy.

    The copy is shallow (new containers for ``stack`` and ``turns``, the turns themselves are
    shared) so continuing a session never mutates the caller's lists.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"session: expected a session dict, got {type(value).__name__}")
    version = value.get("version")
    if version != SESSION_VERSION:
        raise ConfigError(
            f"session.version: this runtime reads session version {SESSION_VERSION}, "
            f"got {version!r}"
        )
    for key, kind in (("stack", list), ("turns", list)):
        if not isinstance(value.get(key), kind):
            raise ConfigError(f"session.{key}: expected a list")
    owner = value.get("agent", root)
    if owner != root:
        raise ConfigError(f"session.agent: this session belongs to agent {owner!r}, not {root!r}")
    for i, frame in enumerate(value["stack"]):
        if not isinstance(frame, Mapping):
            raise ConfigError(f"session.stack[{i}]: expected a frame object, got {frame!r}")
        if not isinstance(frame.get("agent"), str):
            raise ConfigError(f"session.stack[{i}].agent: expected an agent name")
    for i, turn in enumerate(value["turns"]):
        if not isinstance(turn, Mapping):
            raise ConfigError(f"session.turns[{i}]: expected a turn object, got {turn!r}")
    stack = [dict(frame) for frame in value["stack"]] or [{"agent": root, "config": None}]
    session: Session = {
        "version": SESSION_VERSION,
        "agent": root,
        "system_prompt": str(value.get("system_prompt", "")),
        "stack": stack,  # type: ignore[typeddict-item]
        "turns": list(value["turns"]),
    }
    return session


def message_to_json(message: Message) -> dict[str, Any]:
    """A history message as a JSON-able dict (only the fields that are set)."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        data["name"] = message.name
    return data


def message_from_json(data: Mapping[str, Any]) -> Message:
    """The inverse of :func:`message_to_json`."""
    from auwgent.runtime.providers.base import Message, ToolCall

    calls = tuple(
        ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"]))
        for c in data.get("tool_calls", ())
    )
    return Message(
        role=data["role"],
        content=str(data.get("content", "")),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


def messages_from_json(items: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Decode a list of stored messages."""
    return [message_from_json(m) for m in items]


def _new_id() -> str:
    """A random (version 4) UUID in hex, as ``uuid.uuid4().hex`` writes it.

    Set by hand: building a ``uuid.UUID`` (validation included) cost more than the rest of
    starting a turn.
    """
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()

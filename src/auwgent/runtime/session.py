"""The session: the plain, JSON-serialisable record of a conversation.

``await agent.run(text)`` returns a :class:`Session`; ``agent.run(text, session=s)`` continues
it, also in another process after ``json.dumps`` / ``json.loads``. Its shape (version 1)::

    {
      "version": 1,
      "agent": "Main",                 # the root agent that owns the conversation
      "system_prompt": "...",          # the last system prompt sent for the active agent
      "stack": [Frame, ...],           # bottom: the root agent; top: the agent answering next
      "turns": [Turn, ...],            # one per user input, oldest first
      "revision": 3,                   # optional: set by a session store (optimistic concurrency)
      "status": "awaiting_approval",   # optional: with "pending_approvals", see docs/approvals.md
      "approvals": [...]               # optional: the audit of approval decisions
      "tainted_calls": [...]           # optional: tainted calls to sinks (docs/security.md)
    }

A **frame** is ``{"agent": name, "config": name | None}``; a helper that was handed the
conversation (``handoff user``) adds ``"handoff"``, ``"parent"``, ``"tools"`` (its grant) and
``"messages"`` (its own history). A **turn** is ``{"id", "input": {"text", "parts"?}, "agent",
"messages", "intents", "status", "error", "output", "model_calls"}``: ``messages`` are the root
agent's history messages of that exchange (see :func:`message_to_json`), ``intents`` the final
intents emitted, ``status`` one of ``"running"``, ``"complete"``, ``"handoff"``, ``"error"``
(and ``"conflict"`` for a run that lost its conversation: see :mod:`.leases`),
``model_calls`` one ``{"finish_reason", "usage", "model"}`` per model call (helpers' included).
An input given as parts (:mod:`auwgent.runtime.parts`) keeps them in ``input.parts`` and their
text in ``input.text``; a user message given as parts keeps them in its ``parts``.
After a run, ``"usage"`` holds the session's token totals
(``{"input_tokens", "output_tokens", "total_tokens"}``).
A session loaded from a store may also carry a top-level ``"revision"`` (a non-negative
integer). :func:`check_session` checks all of it when a session comes back from outside.
"""

from __future__ import annotations

import os
from collections.abc import Container, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

from auwgent.errors import ConfigError
from auwgent.runtime.parts import InputError, check_input, input_text, stored_parts
from auwgent.runtime.providers.base import ContentPart, Message, ToolCall

if TYPE_CHECKING:
    from auwgent.runtime.providers.base import Message

# Generated bindings import this module for the Session type: what only a run needs (uuid, the
# message classes) is imported inside the functions that use it.

__all__ = [
    "ROLES",
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


class _TurnInputRequired(TypedDict):
    text: str


class TurnInput(_TurnInputRequired, total=False):
    parts: list[dict[str, Any]]  # the input as parts (auwgent.runtime.parts), when given so


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
    model_calls: list[ModelCall]  # one per model call


class _CacheUsage(TypedDict, total=False):
    # Of input_tokens, read from / written to the provider's prompt cache (Anthropic); only
    # from providers that report them.
    cache_read_tokens: int
    cache_write_tokens: int


class TokenUsage(_CacheUsage):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class ModelCall(TypedDict):
    """One model call of a turn: why it stopped, what it cost, which model."""

    finish_reason: str | None
    usage: TokenUsage | None
    model: str  # "<provider>:<model>"


class _SessionRequired(TypedDict):
    version: int
    agent: str
    system_prompt: str
    stack: list[Frame]
    turns: list[Turn]


class Session(_SessionRequired, total=False):
    """The conversation record returned by ``Agent.run`` (see the module docstring)."""

    revision: int  # set by a session store on load and save
    status: str  # "awaiting_approval" while approvals are pending (see runtime/approvals.py)
    pending_approvals: list[dict[str, Any]]
    approvals: list[dict[str, Any]]  # the audit of every approval decision
    tainted_calls: list[dict[str, Any]]  # every tainted call to a sink (runtime/taint.py)
    usage: TokenUsage


def new_session(root: str) -> Session:
    """An empty session owned by the agent ``root``."""
    return {
        "version": SESSION_VERSION,
        "agent": root,
        "system_prompt": "",
        "stack": [{"agent": root, "config": None}],
        "turns": [],
    }


def new_turn(given: str | Sequence[Mapping[str, Any]], agent: str) -> Turn:
    """A fresh turn for the user input ``given`` (a string or checked parts), answered by
    ``agent``."""
    turn_input: TurnInput = {"text": input_text(given)}
    if not isinstance(given, str):
        turn_input["parts"] = [dict(p) for p in given]
    return {
        "id": _new_id(),
        "input": turn_input,
        "agent": agent,
        "messages": [],
        "intents": [],
        "status": "running",
        "error": None,
        "output": None,
        "model_calls": [],
    }


def check_session(value: Any, root: str | None, agents: Container[str] | None = None) -> Session:
    """Check that ``value`` is a usable session of the agent ``root``; return a working copy.

    Everything the runtime reads is checked, and the first problem raises
    :class:`ConfigError` naming its path (``session.turns[2].messages[0].role: ...``): the
    version (an integer, not ``True``), the owner, each stack frame (``agents``, when given,
    are the agent names the frames may use), each turn, and each history message, whose role
    must be one of the runtime's own (``user``, ``assistant``, ``tool``). ``root=None`` skips
    the owner check (stores do not know which agent will load). Other top-level keys (the
    store's ``revision`` included) are kept as they are.

    The copy is shallow (new containers for ``stack`` and ``turns``, the turns themselves are
    shared) so continuing a session never mutates the caller's lists.
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"session: expected a session object, got {_kind(value)}")
    version = value.get("version")
    if not _is_int(version) or version != SESSION_VERSION:
        raise ConfigError(
            f"session.version: this runtime reads session version {SESSION_VERSION}, "
            f"got {version!r}"
        )
    owner = value.get("agent", root)
    if not isinstance(owner, str) and owner is not None:
        raise ConfigError(f"session.agent: expected an agent name, got {_kind(owner)}")
    if root is not None and owner != root:
        raise ConfigError(f"session.agent: this session belongs to agent {owner!r}, not {root!r}")
    _check_optional(value, "session", "system_prompt", str, "a string")
    revision = value.get("revision")
    if revision is not None and not (_is_int(revision) and revision >= 0):
        raise ConfigError(f"session.revision: expected a non-negative integer, got {revision!r}")
    for key in ("stack", "turns"):
        if not isinstance(value.get(key), list):
            raise ConfigError(f"session.{key}: expected a list, got {_kind(value.get(key))}")
    for i, frame in enumerate(value["stack"]):
        _check_frame(frame, f"session.stack[{i}]", agents)
    bottom = value["stack"][0]["agent"] if value["stack"] else root
    if root is not None and bottom != root:
        raise ConfigError(
            f"session.stack[0].agent: the bottom of the stack is the root agent {root!r}, "
            f"got {bottom!r}"
        )
    for i, turn in enumerate(value["turns"]):
        _check_turn(turn, f"session.turns[{i}]")
    session = cast(Session, dict(value))
    session["agent"] = owner if root is None else root  # type: ignore[typeddict-item]
    session["system_prompt"] = value.get("system_prompt") or ""
    session["stack"] = [cast(Frame, dict(frame)) for frame in value["stack"]] or [
        {"agent": str(root), "config": None}
    ]
    session["turns"] = list(value["turns"])
    return session


ROLES = ("user", "assistant", "tool")
"""The history roles the runtime writes, and the only ones it sends to a provider."""

_TOOL_GRANTS = ("all", "none")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_optional(
    item: Mapping[str, Any], where: str, key: str, kind: type | tuple[type, ...], label: str
) -> None:
    """``item[key]``, when present and not null, must be of ``kind``."""
    found = item.get(key)
    if found is not None and not isinstance(found, kind):
        raise ConfigError(f"{where}.{key}: expected {label}, got {_kind(found)}")


def _check_object(item: Any, where: str, what: str) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise ConfigError(f"{where}: expected {what} object, got {_kind(item)}")
    return item


def _check_frame(frame: Any, where: str, agents: Container[str] | None) -> None:
    frame = _check_object(frame, where, "a frame")
    name = frame.get("agent")
    if not isinstance(name, str):
        raise ConfigError(f"{where}.agent: expected an agent name, got {_kind(name)}")
    if agents is not None and name not in agents:
        raise ConfigError(f"{where}.agent: agent {name!r} is not part of this agent's IR")
    for key in ("config", "handoff", "parent"):
        _check_optional(frame, where, key, str, "a name")
    grant = frame.get("tools")
    if not (
        grant is None
        or grant in _TOOL_GRANTS
        or (isinstance(grant, (list, tuple)) and all(isinstance(t, str) for t in grant))
    ):
        raise ConfigError(f"{where}.tools: expected 'all', 'none' or a list of tool names")
    if "messages" in frame:
        _check_messages(frame["messages"], f"{where}.messages")


def _check_turn(turn: Any, where: str) -> None:
    turn = _check_object(turn, where, "a turn")
    given = _check_object(turn.get("input"), f"{where}.input", "an input")
    if not isinstance(given.get("text"), str):
        raise ConfigError(f"{where}.input.text: expected a string, got {_kind(given.get('text'))}")
    if "parts" in given:
        _check_parts(given["parts"], f"{where}.input.parts")
    for key in ("id", "agent", "status", "error"):
        _check_optional(turn, where, key, str, "a string")
    if "messages" in turn:
        _check_messages(turn["messages"], f"{where}.messages")
    intents = turn.get("intents", [])
    if not isinstance(intents, list):
        raise ConfigError(f"{where}.intents: expected a list, got {_kind(intents)}")
    for i, intent in enumerate(intents):
        _check_object(intent, f"{where}.intents[{i}]", "an intent")


def _check_messages(messages: Any, where: str) -> None:
    if not isinstance(messages, list):
        raise ConfigError(f"{where}: expected a list, got {_kind(messages)}")
    for i, message in enumerate(messages):
        _check_message(message, f"{where}[{i}]")


def _check_message(message: Any, where: str) -> None:
    message = _check_object(message, where, "a message")
    role = message.get("role")
    if role not in ROLES:
        raise ConfigError(
            f"{where}.role: expected one of {', '.join(map(repr, ROLES))}, got {role!r}"
        )
    _check_optional(message, where, "content", str, "a string")
    for key in ("tool_call_id", "name"):
        _check_optional(message, where, key, str, "a string")
    calls = message.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ConfigError(f"{where}.tool_calls: expected a list, got {_kind(calls)}")
    for i, call in enumerate(calls):
        call = _check_object(call, f"{where}.tool_calls[{i}]", "a call")
        for key in ("id", "name", "arguments"):
            if not isinstance(call.get(key), str):
                found = _kind(call.get(key))
                raise ConfigError(f"{where}.tool_calls[{i}].{key}: expected a string, got {found}")
    if "parts" in message:
        _check_parts(message["parts"], f"{where}.parts")
    blocks = message.get("reasoning", [])
    if not isinstance(blocks, list):
        raise ConfigError(f"{where}.reasoning: expected a list, got {_kind(blocks)}")
    for i, block in enumerate(blocks):
        block = _check_object(block, f"{where}.reasoning[{i}]", "a reasoning block")
        if not isinstance(block.get("type"), str):
            found = _kind(block.get("type"))
            raise ConfigError(f"{where}.reasoning[{i}].type: expected a string, got {found}")


def _check_parts(parts: Any, where: str) -> None:
    if not isinstance(parts, list):
        raise ConfigError(f"{where}: expected a list, got {_kind(parts)}")
    try:
        check_input(parts, where)
    except InputError as error:
        raise ConfigError(str(error)) from None


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
    if message.reasoning:
        data["reasoning"] = [dict(part.data) for part in message.reasoning]
    if message.parts:
        data["parts"] = [dict(part) for part in message.parts]
    return data


def message_from_json(data: Mapping[str, Any]) -> Message:
    """The inverse of :func:`message_to_json`."""
    calls = tuple(
        ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"]))
        for c in data.get("tool_calls", ())
    )
    reasoning = tuple(ContentPart(str(b["type"]), dict(b)) for b in data.get("reasoning", ()))
    return Message(
        role=data["role"],
        content=str(data.get("content", "")),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        reasoning=reasoning,
        parts=stored_parts(data.get("parts", ())),
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

"""UI streams from ``auwgent serve``: a run's intents as the Vercel AI SDK's UI message stream
(``?ui=ai-sdk``) or as AG-UI events (``?ui=ag-ui``), for frontends that already have a client.

Each dialect reads its client's request body (the AI SDK's ``{id, messages, ...}``, AG-UI's
``RunAgentInput``) into the run's input, conversation id, context and approval decisions
(:func:`read_request`), and encodes the run's events for its client (:class:`AiSdkEncoder`,
:class:`AgUiEncoder`). An encoder is fed what the serve stream's buffer sends, in order: the
partial and final intents (partials may arrive merged, or not at all: the final carries the
whole value), then ``session`` (or a stream-level ``error``), then the end. The mapping is in
docs/ui-stream.md.

Tool calls get ids the encoders make: ``call-<turn>-<k>`` for the k-th call of the turn (turn
0 is a conversation's first), so that a run resumed after an approval, in another request,
names its calls as the paused run did: the encoder replays the paused turn's intents first.
"""

from __future__ import annotations

import json
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from auwgent._records import field, record
from auwgent.serve_security import BoundaryError, check_id

__all__ = [
    "AG_UI",
    "AI_SDK",
    "DIALECTS",
    "AgUiEncoder",
    "AiSdkEncoder",
    "UiRequest",
    "dialect_of",
    "encoder_for",
    "read_request",
]

log = logging.getLogger("auwgent")

AI_SDK = "ai-sdk"
AG_UI = "ag-ui"
DIALECTS = (AI_SDK, AG_UI)

#: The body fields each dialect's client sends (ours, ``context``, ``config`` and ``persona``,
#: ride along in the AI SDK's body; AG-UI's go in ``forwardedProps``).
FIELDS = {
    AI_SDK: ("id", "messages", "trigger", "messageId", "context", "config", "persona"),
    AG_UI: ("threadId", "runId", "messages", "state", "tools", "context", "forwardedProps",
            "resume", "protocolVersion", "parentRunId"),
}  # fmt: skip
_FORWARDED = ("context", "config", "persona")
_CALLS = ("tool_call", "workflow_call", "helper_call")
_RESULTS = ("tool_result", "workflow_result", "helper_result")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _bad(message: str) -> BoundaryError:
    return BoundaryError(400, "bad_request", message)


def dialect_of(query: Mapping[str, str]) -> str | None:
    """The UI dialect a request asks for with ``?ui=`` (``None``: serve's own events)."""
    ui = query.get("ui")
    if ui is None:
        return None
    if ui not in DIALECTS:
        raise _bad(f"ui: expected one of {', '.join(DIALECTS)}, got {ui!r}")
    return ui


# -- requests --------------------------------------------------------------------------------


@record(frozen=False)
class UiRequest:
    """A UI client's request as a run: its input, or the decisions of a resume."""

    conversation_id: str
    input: Any = None
    decisions: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    config: Any = None
    persona: Any = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)


def read_request(dialect: str, body: Mapping[str, Any]) -> UiRequest:
    """``body`` (its fields already checked against :data:`FIELDS`) as a run or a resume."""
    return _read_ai_sdk(body) if dialect == AI_SDK else _read_ag_ui(body)


def _read_ai_sdk(body: Mapping[str, Any]) -> UiRequest:
    chat = check_id(body.get("id"), "id")
    if body.get("trigger", "submit-message") != "submit-message":
        raise _bad(
            f"trigger: only 'submit-message' is supported, got {body.get('trigger')!r} (the "
            "server keeps the conversation: a stored answer is not regenerated)"
        )
    where, last = _last_message(body.get("messages"))
    request = UiRequest(
        chat, context=_object(body.get("context"), "context"),
        config=body.get("config"), persona=body.get("persona"),
    )  # fmt: skip
    if last.get("role") == "user":
        request.input = _ai_sdk_input(last.get("parts"), f"{where}.parts")
    elif last.get("role") == "assistant":
        request.decisions = _ai_sdk_decisions(last.get("parts"), f"{where}.parts")
    else:
        raise _bad(f"{where}.role: expected 'user' (or 'assistant' answering approvals)")
    return request


def _last_message(messages: Any) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise _bad("messages: expected a non-empty list of messages")
    where = f"messages[{len(messages) - 1}]"
    last = messages[-1]
    if not isinstance(last, dict):
        raise _bad(f"{where}: expected a message object")
    return where, last


def _object(value: Any, where: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise _bad(f"{where}: expected an object")
    return value


def _ai_sdk_input(parts: Any, where: str) -> list[dict[str, Any]]:
    """A user message's parts as run input parts: text, and files (images by media type)."""
    if not isinstance(parts, list) or not parts:
        raise _bad(f"{where}: expected a non-empty list of parts")
    out: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind == "file" and isinstance(part.get("url"), str):
            out.append(_media(part["url"], part.get("mediaType"), part.get("filename")))
        else:
            raise _bad(f"{where}[{i}]: expected a text part or a file part (type {kind!r})")
    return out


def _media(url: str, media_type: Any, filename: Any = None) -> dict[str, Any]:
    """A file or image input part from a URL (a ``data:`` URL carries its bytes)."""
    part: dict[str, Any] = {}
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = media_type or header[5:].split(";")[0]
        part["data"] = data
    else:
        part["url"] = url
    if media_type:
        part["media_type"] = media_type
    if isinstance(filename, str) and media_type not in _IMAGE_TYPES:
        part["filename"] = filename
    return {"type": "image" if media_type in _IMAGE_TYPES else "file", **part}


def _ai_sdk_decisions(parts: Any, where: str) -> dict[str, Any]:
    """The approvals an assistant message answers: its tool parts in ``approval-responded``."""
    decisions: dict[str, Any] = {}
    for part in parts if isinstance(parts, list) else []:
        approval = part.get("approval") if isinstance(part, dict) else None
        if part.get("state") != "approval-responded" or not isinstance(approval, dict):
            continue
        decision = {"approved": approval.get("approved")}
        if approval.get("reason") is not None:
            decision["reason"] = approval["reason"]
        decisions[str(approval.get("id"))] = decision
    if not decisions:
        raise _bad(f"{where}: the last message is the assistant's and answers no approval")
    return decisions


def _read_ag_ui(body: Mapping[str, Any]) -> UiRequest:
    thread = check_id(body.get("threadId"), "threadId")
    version = body.get("protocolVersion")
    if version is not None and not str(version).startswith("1"):
        raise _bad(f"protocolVersion: this server speaks AG-UI 1.x, got {version!r}")
    if body.get("tools"):
        raise _bad("tools: client-side tools are not supported (the agent's tools are its own)")
    forwarded = _object(body.get("forwardedProps"), "forwardedProps") or {}
    unknown = sorted(set(forwarded) - set(_FORWARDED))
    if unknown:
        raise _bad(f"forwardedProps: unknown keys: {', '.join(unknown)} (valid: context, "
                   "config, persona)")  # fmt: skip
    context = {**_ag_ui_context(body.get("context")),
               **(_object(forwarded.get("context"), "forwardedProps.context") or {})}  # fmt: skip
    run_id = body.get("runId")
    request = UiRequest(
        thread, context=context or None, config=forwarded.get("config"),
        persona=forwarded.get("persona"),
        run_id=run_id if isinstance(run_id, str) and run_id else uuid.uuid4().hex,
    )  # fmt: skip
    if body.get("resume"):
        request.decisions = _ag_ui_decisions(body["resume"])
        return request
    where, last = _last_message(body.get("messages"))
    if last.get("role") != "user":
        raise _bad(f"{where}.role: expected 'user' (a resume answers its interrupts in 'resume')")
    request.input = _ag_ui_input(last.get("content"), f"{where}.content")
    return request


def _ag_ui_context(entries: Any) -> dict[str, Any]:
    """AG-UI's ``context`` entries as context values: ``description`` names the key."""
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise _bad("context: expected a list of {description, value}")
    out: dict[str, Any] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("description"), str):
            raise _bad(f"context[{i}]: expected {{description: key, value: string}}")
        out[entry["description"]] = entry.get("value")
    return out


def _ag_ui_input(content: Any, where: str) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise _bad(f"{where}: expected a string or a non-empty list of parts")
    out: list[dict[str, Any]] = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        source = part.get("source") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind in ("image", "document") and isinstance(source, dict):
            out.append(_ag_ui_media(source, f"{where}[{i}].source"))
        else:
            raise _bad(f"{where}[{i}]: expected a text, image or document part (type {kind!r})")
    return out


def _ag_ui_media(source: Mapping[str, Any], where: str) -> dict[str, Any]:
    value, media_type = source.get("value"), source.get("mimeType")
    if not isinstance(value, str) or source.get("type") not in ("data", "url"):
        raise _bad(f"{where}: expected {{type: 'data' | 'url', value, mimeType}}")
    if source["type"] == "data":
        value = f"data:{media_type or ''};base64,{value}"
    return _media(value, media_type)


def _ag_ui_decisions(entries: Any) -> dict[str, Any]:
    """AG-UI resume entries as decisions: ``resolved`` with the decision as its payload
    (``{approved, reason?, args?}``), ``cancelled`` as a denial."""
    if not isinstance(entries, list):
        raise _bad("resume: expected a list of {interruptId, status, payload?}")
    decisions: dict[str, Any] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("interruptId"), str):
            raise _bad(f"resume[{i}]: expected {{interruptId, status, payload?}}")
        if entry.get("status") == "cancelled":
            decisions[entry["interruptId"]] = {"approved": False, "reason": "cancelled"}
        elif entry.get("status") == "resolved":
            decisions[entry["interruptId"]] = entry.get("payload")
        else:
            raise _bad(f"resume[{i}].status: expected 'resolved' or 'cancelled'")
    return decisions


# -- the parts of a run ----------------------------------------------------------------------


@record(frozen=False)
class _Part:
    """A text, call or structured intent of the stream, while its id is needed."""

    id: str
    agent: Any
    name: str  # the intent's name
    sent: str = ""  # the text (or the arguments' JSON) sent so far
    tool: str = ""  # a call's tool (workflow, helper) name
    args: Any = None
    done: bool = False  # a call's input is complete (its final intent came)


class _Parts:
    """The open parts of one turn, their ids, and which call each result answers."""

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.counts: dict[str, int] = {}
        self.open: dict[tuple[Any, Any, Any], _Part] = {}  # (agent, name, segment): streaming
        self.calls: list[_Part] = []  # calls whose outcome has not come
        self.approvals: dict[str, _Part] = {}  # approval request id -> its call

    def mint(self, kind: str) -> str:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return f"{kind}-{self.turn}-{self.counts[kind]}"

    def streaming(self, data: Mapping[str, Any], kind: str) -> tuple[_Part, bool]:
        """The part a partial belongs to, and whether it is new."""
        segment = data["value"].get("segment")
        key = (data.get("agent"), data.get("name"), segment)
        part = self.open.get(key)
        if part is not None:
            return part, False
        part = self.open[key] = _Part(self.mint(kind), data.get("agent"), str(data.get("name")))
        if kind == "call":
            self.calls.append(part)
        return part, True

    def closing(self, agent: Any, name: str) -> _Part | None:
        """The first streaming part of ``agent``'s intent ``name``, now closed."""
        for key, part in self.open.items():
            if key[:2] == (agent, name):
                del self.open[key]
                return part
        return None

    def call(self, agent: Any, tool: str, args: Any) -> _Part | None:
        """The call a result (or error, or approval) of ``tool`` answers: the first waiting one
        of that tool, preferring the same agent and arguments."""
        waiting = [c for c in self.calls if c.tool == tool]
        for match in (
            lambda c: c.agent == agent and c.args == args,
            lambda c: c.agent == agent,
            lambda c: True,
        ):
            for candidate in waiting:
                if match(candidate):
                    return candidate
        return None

    def answered(self, part: _Part) -> None:
        if part in self.calls:
            self.calls.remove(part)
        self.open = {k: p for k, p in self.open.items() if p is not part}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _open_prefix(args: Any) -> str:
    """The JSON of partial arguments without its closing quotes and brackets, nor a number
    (or literal) it ends with, which may still change as it grows (``1.`` to ``1.5``): what a
    later, longer version of the same arguments starts with."""
    return _json(args).rstrip('"}] 0123456789.+-eE')


def _frames(chunks: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(f"data: {_json(chunk)}\n\n".encode() for chunk in chunks)


def _usage(session: Mapping[str, Any]) -> tuple[dict[str, int], list[Mapping[str, Any]]]:
    """The last turn's token usage, in all and per model call."""
    turns = session.get("turns") or [{}]
    calls = [c for c in turns[-1].get("model_calls") or [] if isinstance(c, Mapping)]
    total = {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
    for call in calls:
        usage = call.get("usage") or {}
        total["inputTokens"] += int(usage.get("input_tokens") or 0)
        total["outputTokens"] += int(usage.get("output_tokens") or 0)
        total["totalTokens"] += int(usage.get("total_tokens") or 0)
    return total, calls


def _reasoning(session: Mapping[str, Any], since: int) -> list[str]:
    """The thinking texts of the last turn's assistant messages from index ``since`` on."""
    turns = session.get("turns") or [{}]
    texts: list[str] = []
    for message in (turns[-1].get("messages") or [])[since:]:
        for block in message.get("reasoning") or [] if isinstance(message, Mapping) else []:
            if isinstance(block, Mapping) and isinstance(block.get("thinking"), str):
                texts.append(block["thinking"])
    return texts


def _status(session: Mapping[str, Any]) -> tuple[str, Any]:
    """The run's status (``complete``, ``error``, ``conflict``, ``awaiting_approval``) and
    the last turn's error, if any."""
    turns = session.get("turns") or [{}]
    if session.get("status") == "awaiting_approval":
        return "awaiting_approval", None
    return str(turns[-1].get("status") or "complete"), turns[-1].get("error")


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        return str(error.get("message") or _json(error))
    return str(error)


# -- encoders --------------------------------------------------------------------------------


class _Encoder(ABC):
    """What the two dialects share: the parts of the turn, fed in the stream's order."""

    headers: Mapping[str, str] = {}

    def __init__(self, session: Mapping[str, Any] | None, *, resuming: bool = False) -> None:
        turns = list((session or {}).get("turns") or [])
        turn = len(turns) - 1 if resuming else len(turns)
        self.parts = _Parts(max(turn, 0))
        self.started = False
        self.finished = False
        self.error: str | None = None  # a stream-level error, for the end
        self.messages_before = len(turns[-1].get("messages") or []) if resuming else 0
        if resuming:
            for intent in turns[-1].get("intents") or []:  # the paused run's ids, again
                self.intent(intent.get("name"), intent.get("value"), intent.get("agent"))
        self.started = False

    # The buffer's calls ---------------------------------------------------------------------

    def partial(self, data: Mapping[str, Any]) -> bytes:
        value = data.get("value") or {}
        if value.get("mode") == "text":
            return self.out(self.text_partial(data, str(value.get("delta") or "")))
        if data.get("name") in _CALLS:
            return self.out(self.call_partial(data, value.get("snapshot") or {}))
        return self.out(self.structured_partial(data, value.get("snapshot")))

    def intent(self, name: Any, value: Any, agent: Any) -> bytes:
        name = str(name)
        value = value if isinstance(value, Mapping) else {"value": value}
        if name == "response_text":
            return self.out(self.text_final(agent, name, str(value.get("text", ""))))
        if name in _CALLS:
            return self.out(self.call_final(agent, name, value))
        if name in _RESULTS or name == "tool_error":
            tool = str(value.get("tool" if name == "tool_error" else "name"))
            part = self.parts.call(agent, tool, value.get("args"))
            chunks: list[dict[str, Any]] = []
            if part is None:
                part, chunks = self.unannounced_call(agent, tool, value.get("args"))
            self.parts.answered(part)
            return self.out(chunks + self.call_outcome(part, name, value))
        if name == "approval_request":
            part = self.parts.call(agent, str(value.get("name")), value.get("args"))
            if part is not None:
                self.parts.approvals[str(value.get("id"))] = part
            return self.out(self.approval_request(part, value))
        if name == "approval_result":
            part = self.parts.approvals.get(str(value.get("id")))
            if part is not None and value.get("approved") is False:
                self.parts.answered(part)
            return self.out(self.approval_result(part, value))
        if name == "error":
            return self.out(self.error_intent(value))
        return self.out(self.structured_final(agent, name, value))

    def event(self, name: str, data: Any) -> bytes:
        if name == "session" and isinstance(data, Mapping):
            return self.out(self.session(data))
        if name == "error":
            self.error = _error_text(data)
            return self.out(self.stream_error(self.error))
        return b""

    def end(self) -> bytes:
        return self.out(self.ending())

    # Shared steps ---------------------------------------------------------------------------

    def out(self, chunks: list[dict[str, Any]]) -> bytes:
        if not chunks:
            return b""
        if not self.started:
            self.started = True
            chunks = [*self.beginning(), *chunks]
        return _frames(chunks)

    def text_partial(self, data: Mapping[str, Any], delta: str) -> list[dict[str, Any]]:
        part, new = self.parts.streaming(data, "text")
        chunks = self.text_start(part) if new else []
        part.sent += delta
        return chunks + (self.text_delta(part, delta) if delta else [])

    def text_final(self, agent: Any, name: str, text: str) -> list[dict[str, Any]]:
        part = self.parts.closing(agent, name)
        chunks: list[dict[str, Any]] = []
        if part is None:
            part = _Part(self.parts.mint("text"), agent, name)
            chunks = self.text_start(part)
        rest = text[len(part.sent) :] if text.startswith(part.sent) else ""
        return chunks + (self.text_delta(part, rest) if rest else []) + self.text_end(part)

    def close_open(self) -> list[dict[str, Any]]:
        """End what was left open (a text, or a call's input, the run stopped in)."""
        chunks: list[dict[str, Any]] = []
        for part in self.parts.open.values():
            if part.id.startswith("text-"):
                chunks += self.text_end(part)
            elif part.id.startswith("call-") and not part.done:
                chunks += self.call_unfinished(part)
        self.parts.open.clear()
        return chunks

    def call_final(self, agent: Any, name: str, value: Mapping[str, Any]) -> list[dict[str, Any]]:
        part = self.parts.closing(agent, name)
        chunks: list[dict[str, Any]] = []
        if part is None:
            part = _Part(self.parts.mint("call"), agent, name, tool=str(value.get("type")))
            self.parts.calls.append(part)
            chunks += self.call_started(part)
        full = _json(value.get("args", {}))
        if not full.startswith(part.sent):  # never seen: partials grow into their final value
            log.warning("auwgent serve: %s's streamed arguments are not its final ones", part.tool)
        elif full != part.sent:
            chunks += self.call_delta(part, full[len(part.sent) :])
        part.args, part.done = value.get("args", {}), True
        return chunks + self.call_ready(part)

    def call_partial(self, data: Mapping[str, Any], snapshot: Mapping[str, Any]) -> list[Any]:
        part, new = self.parts.streaming(data, "call")
        chunks: list[dict[str, Any]] = []
        if new:
            part.tool = str(snapshot.get("type") or data.get("name"))
            chunks += self.call_started(part)
        prefix = _open_prefix(snapshot.get("args", {}))
        if prefix.startswith(part.sent) and prefix != part.sent:
            chunks += self.call_delta(part, prefix[len(part.sent) :])
        part.args = snapshot.get("args", {})
        return chunks

    def unannounced_call(self, agent: Any, tool: str, args: Any) -> tuple[_Part, list[Any]]:
        """A result or error of a call the stream never showed (a call refused before it was
        announced): a part of its own, and the chunks announcing it."""
        part = _Part(self.parts.mint("call"), agent, "tool_call", tool=tool, args=args or {})
        part.done = True
        return part, self.call_started(part) + self.call_ready(part)

    # Dialect steps -------------------------------------------------------------------------

    @abstractmethod
    def beginning(self) -> list[dict[str, Any]]: ...

    @abstractmethod
    def text_start(self, part: _Part) -> list[dict[str, Any]]: ...

    @abstractmethod
    def text_delta(self, part: _Part, delta: str) -> list[dict[str, Any]]: ...

    @abstractmethod
    def text_end(self, part: _Part) -> list[dict[str, Any]]: ...

    @abstractmethod
    def call_unfinished(self, part: _Part) -> list[dict[str, Any]]: ...

    @abstractmethod
    def call_started(self, part: _Part) -> list[dict[str, Any]]: ...

    @abstractmethod
    def call_delta(self, part: _Part, delta: str) -> list[dict[str, Any]]: ...

    @abstractmethod
    def call_ready(self, part: _Part) -> list[dict[str, Any]]: ...

    @abstractmethod
    def call_outcome(self, part: _Part, name: str, value: Mapping[str, Any]) -> list[Any]: ...

    @abstractmethod
    def approval_request(self, part: _Part | None, value: Mapping[str, Any]) -> list[Any]: ...

    @abstractmethod
    def approval_result(self, part: _Part | None, value: Mapping[str, Any]) -> list[Any]: ...

    @abstractmethod
    def error_intent(self, value: Mapping[str, Any]) -> list[dict[str, Any]]: ...

    @abstractmethod
    def structured_partial(self, data: Mapping[str, Any], snapshot: Any) -> list[Any]: ...

    @abstractmethod
    def structured_final(self, agent: Any, name: str, value: Any) -> list[dict[str, Any]]: ...

    @abstractmethod
    def session(self, session: Mapping[str, Any]) -> list[dict[str, Any]]: ...

    @abstractmethod
    def stream_error(self, message: str) -> list[dict[str, Any]]: ...

    @abstractmethod
    def ending(self) -> list[dict[str, Any]]: ...


class AiSdkEncoder(_Encoder):
    """The Vercel AI SDK's UI message stream (protocol v1, as ``ai`` 7 reads it)."""

    headers = {"x-vercel-ai-ui-message-stream": "v1"}

    def __init__(
        self,
        session: Mapping[str, Any] | None,
        conversation: str | None,
        *,
        resuming: bool = False,
    ) -> None:
        self.conversation = conversation
        super().__init__(session, resuming=resuming)

    def beginning(self) -> list[dict[str, Any]]:
        return [{"type": "start", "messageMetadata": {"conversationId": self.conversation}}]

    def text_start(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "text-start", "id": part.id}]

    def text_delta(self, part: _Part, delta: str) -> list[dict[str, Any]]:
        return [{"type": "text-delta", "id": part.id, "delta": delta}]

    def text_end(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "text-end", "id": part.id}]

    def call_started(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "tool-input-start", "toolCallId": part.id, "toolName": part.tool}]

    def call_delta(self, part: _Part, delta: str) -> list[dict[str, Any]]:
        part.sent += delta
        return [{"type": "tool-input-delta", "toolCallId": part.id, "inputTextDelta": delta}]

    def call_ready(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "tool-input-available", "toolCallId": part.id, "toolName": part.tool,
                 "input": part.args}]  # fmt: skip

    def call_unfinished(self, part: _Part) -> list[dict[str, Any]]:
        stopped = "the run stopped before the call was complete"
        return [{"type": "tool-input-error", "toolCallId": part.id, "toolName": part.tool,
                 "input": part.args, "errorText": stopped}]  # fmt: skip

    def call_outcome(self, part: _Part, name: str, value: Mapping[str, Any]) -> list[Any]:
        if name == "tool_error" and not part.done:
            return [{"type": "tool-input-error", "toolCallId": part.id, "toolName": part.tool,
                     "input": part.args, "errorText": str(value.get("message"))}]  # fmt: skip
        if name == "tool_error":
            return [{"type": "tool-output-error", "toolCallId": part.id,
                     "errorText": str(value.get("message"))}]  # fmt: skip
        return [{"type": "tool-output-available", "toolCallId": part.id,
                 "output": value.get("result")}]  # fmt: skip

    def approval_request(self, part: _Part | None, value: Mapping[str, Any]) -> list[Any]:
        if part is None:  # not a call of this stream: the request as data
            return [{"type": "data-approval_request", "id": str(value.get("id")), "data": value}]
        return [{"type": "tool-approval-request", "approvalId": str(value.get("id")),
                 "toolCallId": part.id}]  # fmt: skip

    def approval_result(self, part: _Part | None, value: Mapping[str, Any]) -> list[Any]:
        if part is None:
            return [{"type": "data-approval_result", "id": str(value.get("id")), "data": value}]
        chunk: dict[str, Any] = {"type": "tool-approval-response",
                                 "approvalId": str(value.get("id")),
                                 "approved": bool(value.get("approved"))}  # fmt: skip
        if value.get("reason") is not None:
            chunk["reason"] = str(value["reason"])
        denied = [{"type": "tool-output-denied", "toolCallId": part.id}]
        return [chunk, *([] if value.get("approved") else denied)]

    def error_intent(self, value: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [{"type": "error", "errorText": _error_text(value)}]

    def structured_partial(self, data: Mapping[str, Any], snapshot: Any) -> list[Any]:
        part, _ = self.parts.streaming(data, "data")
        body = {"agent": data.get("agent"), "complete": False, "value": snapshot}
        return [{"type": f"data-{part.name}", "id": part.id, "data": body}]

    def structured_final(self, agent: Any, name: str, value: Any) -> list[dict[str, Any]]:
        part = self.parts.closing(agent, name)
        part_id = part.id if part is not None else self.parts.mint("data")
        body = {"agent": agent, "complete": True, "value": value}
        return [{"type": f"data-{name}", "id": part_id, "data": body}]

    def session(self, session: Mapping[str, Any]) -> list[dict[str, Any]]:
        chunks: list[dict[str, Any]] = []
        for text in _reasoning(session, self.messages_before):
            part_id = self.parts.mint("reasoning")
            chunks += [{"type": "reasoning-start", "id": part_id},
                       {"type": "reasoning-delta", "id": part_id, "delta": text},
                       {"type": "reasoning-end", "id": part_id}]  # fmt: skip
        chunks += self.close_open()
        status, _ = _status(session)
        usage, calls = _usage(session)
        reason = {"complete": "stop", "awaiting_approval": "tool-calls"}.get(status, "error")
        metadata = {"conversationId": self.conversation, "agent": session.get("agent"),
                    "status": status, "usage": usage, "modelCalls": len(calls)}  # fmt: skip
        self.finished = True
        return [*chunks, {"type": "finish", "finishReason": reason, "messageMetadata": metadata}]

    def stream_error(self, message: str) -> list[dict[str, Any]]:
        return [{"type": "error", "errorText": message}]

    def ending(self) -> list[dict[str, Any]]:
        if not self.finished:  # the stream ended without its session (its error was sent)
            self.finished = True
            return [{"type": "finish", "finishReason": "error"}]
        return []

    def end(self) -> bytes:
        return super().end() + b"data: [DONE]\n\n"


class AgUiEncoder(_Encoder):
    """AG-UI events (protocol 1.x), as ``@ag-ui/client``'s ``HttpAgent`` reads them."""

    def __init__(
        self,
        session: Mapping[str, Any] | None,
        thread: str,
        run: str,
        *,
        resuming: bool = False,
    ) -> None:
        self.thread, self.run = thread, run
        super().__init__(session, resuming=resuming)

    def beginning(self) -> list[dict[str, Any]]:
        return [{"type": "RUN_STARTED", "threadId": self.thread, "runId": self.run}]

    def text_start(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "TEXT_MESSAGE_START", "messageId": part.id, "role": "assistant"}]

    def text_delta(self, part: _Part, delta: str) -> list[dict[str, Any]]:
        return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": part.id, "delta": delta}]

    def text_end(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "TEXT_MESSAGE_END", "messageId": part.id}]

    def call_started(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "TOOL_CALL_START", "toolCallId": part.id, "toolCallName": part.tool}]

    def call_delta(self, part: _Part, delta: str) -> list[dict[str, Any]]:
        part.sent += delta
        return [{"type": "TOOL_CALL_ARGS", "toolCallId": part.id, "delta": delta}]

    def call_ready(self, part: _Part) -> list[dict[str, Any]]:
        return [{"type": "TOOL_CALL_END", "toolCallId": part.id}]

    def call_outcome(self, part: _Part, name: str, value: Mapping[str, Any]) -> list[Any]:
        chunks: list[dict[str, Any]] = []
        if not part.done:  # refused before its input was complete
            part.done = True
            chunks += self.call_ready(part)
        error = name == "tool_error"
        content = value.get("message") if error else value.get("result")
        chunk: dict[str, Any] = {
            "type": "TOOL_CALL_RESULT", "messageId": self.parts.mint("result"),
            "toolCallId": part.id, "role": "tool",
            "content": content if isinstance(content, str) else _json(content),
        }  # fmt: skip
        if error:
            chunk["metadata"] = {"auwgent": {"error": True}}
        return [*chunks, chunk]

    def approval_request(self, part: _Part | None, value: Mapping[str, Any]) -> list[Any]:
        return [self.custom("approval_request", value)]

    def approval_result(self, part: _Part | None, value: Mapping[str, Any]) -> list[Any]:
        chunks = [self.custom("approval_result", value)]
        if part is not None and value.get("approved") is False:  # the call ends, unrun
            reason = value.get("reason")
            denied = f"{part.tool} was not approved" + (f": {reason}" if reason else "")
            chunks.append({"type": "TOOL_CALL_RESULT", "messageId": self.parts.mint("result"),
                           "toolCallId": part.id, "role": "tool", "content": denied,
                           "metadata": {"auwgent": {"denied": True}}})  # fmt: skip
        return chunks

    def error_intent(self, value: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [self.custom("error", value)]

    def structured_partial(self, data: Mapping[str, Any], snapshot: Any) -> list[Any]:
        self.parts.streaming(data, "data")
        name = str(data.get("name"))
        if name == "response_schema":
            return [self.output(snapshot, complete=False)]
        return [self.custom("partial", {"name": name, "agent": data.get("agent"),
                                        "snapshot": snapshot})]  # fmt: skip

    def structured_final(self, agent: Any, name: str, value: Any) -> list[dict[str, Any]]:
        self.parts.closing(agent, name)
        if name == "response_schema":
            return [self.output(value, complete=True)]
        return [self.custom(name, {"agent": agent, "value": value})]

    @staticmethod
    def output(value: Any, *, complete: bool) -> dict[str, Any]:
        """The structured output so far, as the whole state."""
        value = value if isinstance(value, Mapping) else {}
        snapshot = {"output": value.get("response"), "outputType": value.get("type"),
                    "complete": complete}  # fmt: skip
        return {"type": "STATE_SNAPSHOT", "snapshot": snapshot}

    def custom(self, name: str, value: Any) -> dict[str, Any]:
        return {"type": "CUSTOM", "name": f"auwgent.{name}", "value": value}

    def session(self, session: Mapping[str, Any]) -> list[dict[str, Any]]:
        chunks = self.reasoning(session) + self.close_open()
        status, error = _status(session)
        usage, calls = _usage(session)
        per_call = [self.token_usage(call) for call in calls]
        self.finished = True
        if status in ("error", "conflict"):
            message = self.error or (_error_text(error) if error else f"the run ended: {status}")
            return [*chunks, {"type": "RUN_ERROR", "message": message, "code": status,
                              "usage": per_call}]  # fmt: skip
        done: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": self.thread,
                                "runId": self.run, "usage": per_call}  # fmt: skip
        if status == "awaiting_approval":
            interrupts = [self.interrupt(r) for r in session.get("pending_approvals") or []]
            done["outcome"] = {"type": "interrupt", "interrupts": interrupts}
        else:
            turn = (session.get("turns") or [{}])[-1]
            done["outcome"] = {"type": "success"}
            if turn.get("output") is not None:
                done["result"] = turn["output"]
        return [*chunks, done]

    def reasoning(self, session: Mapping[str, Any]) -> list[dict[str, Any]]:
        chunks: list[dict[str, Any]] = []
        for text in _reasoning(session, self.messages_before):
            part_id = self.parts.mint("reasoning")
            chunks += [
                {"type": "REASONING_START", "messageId": part_id},
                {"type": "REASONING_MESSAGE_START", "messageId": part_id, "role": "reasoning"},
                {"type": "REASONING_MESSAGE_CONTENT", "messageId": part_id, "delta": text},
                {"type": "REASONING_MESSAGE_END", "messageId": part_id},
                {"type": "REASONING_END", "messageId": part_id},
            ]
        return chunks

    def call_unfinished(self, part: _Part) -> list[dict[str, Any]]:
        return self.call_ready(part)

    def interrupt(self, request: Mapping[str, Any]) -> dict[str, Any]:
        part = self.parts.approvals.get(str(request.get("id")))
        interrupt: dict[str, Any] = {
            "id": str(request.get("id")), "reason": "approval",
            "message": f"{request.get('name')} needs approval",
            "metadata": {key: request.get(key) for key in ("kind", "name", "args", "agent")},
        }  # fmt: skip
        if part is not None:
            interrupt["toolCallId"] = part.id
        return interrupt

    @staticmethod
    def token_usage(call: Mapping[str, Any]) -> dict[str, Any]:
        usage = call.get("usage") or {}
        provider, _, model = str(call.get("model") or "").partition(":")
        counts = {"inputTokens": usage.get("input_tokens"),
                  "outputTokens": usage.get("output_tokens"),
                  "totalTokens": usage.get("total_tokens")}  # fmt: skip
        entry: dict[str, Any] = {"provider": provider, "model": model or provider}
        return entry | {k: int(v) for k, v in counts.items() if isinstance(v, int) and v >= 0}

    def stream_error(self, message: str) -> list[dict[str, Any]]:
        return []  # said by RUN_ERROR, at the session or the end

    def ending(self) -> list[dict[str, Any]]:
        if self.finished:
            return []
        self.finished = True
        message = self.error or "the stream ended before the run finished"
        return [*self.close_open(), {"type": "RUN_ERROR", "message": message, "code": "stream"}]


def encoder_for(
    dialect: str,
    session: Mapping[str, Any] | None,
    conversation: str,
    run_id: str,
    *,
    resuming: bool = False,
) -> _Encoder:
    """The encoder of one response: ``session`` is the stored one the run continues (or
    resumes, replaying its paused turn), ``conversation`` the client's chat or thread id."""
    if dialect == AI_SDK:
        return AiSdkEncoder(session, conversation, resuming=resuming)
    return AgUiEncoder(session, conversation, run_id, resuming=resuming)

"""The context budget: every model has a window, tool outputs are capped, history is compacted
by the declared policy, and a request that cannot fit is never sent (docs/context.md).

One :class:`ContextBudget` serves one ``agent.run()``. The engine calls it at four points:
:meth:`ContextBudget.cap` on every tool result, :meth:`ContextBudget.tools` before each model
call (``recall`` joins the tools once something was cut), :meth:`ContextBudget.fit` on every
request before it is sent (compaction, then the window check) and
:meth:`ContextBudget.observe` with the usage the provider reported (calibration).

The numbers come from ``auwgent/ir/models.json`` (shared with the TypeScript runtime); the
pure functions here (:func:`limits_for`, :func:`estimate_request`, :func:`cut`,
:func:`compact_view`) are pinned by the ``context`` conformance vectors.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

from auwgent._records import record, replace
from auwgent._typing import assert_never
from auwgent.errors import AuwgentError
from auwgent.ir.vocabulary import provider_key
from auwgent.runtime.protocol.contract import CallOutcome
from auwgent.runtime.providers.base import (
    ContentPart,
    Finish,
    FunctionSpec,
    Message,
    ModelRequest,
    TextDelta,
    ToolCallDelta,
    Usage,
)

if TYPE_CHECKING:
    from auwgent.runtime.host import ContextBudgetHost
    from auwgent.runtime.invocation import Invocation
    from auwgent.runtime.session import TokenUsage


__all__ = [
    "DEFAULT_TOOL_OUTPUT",
    "RECALL",
    "RECALL_TOOL",
    "Calibration",
    "ContextWindowError",
    "HistoryPolicy",
    "Limits",
    "compact_view",
    "cut",
    "estimate_request",
    "limits_for",
    "recall",
]

#: The built-in tool offered to the model once a result was cut.
RECALL = "recall"
#: The cap on every tool result when neither ``@maxOutput`` nor ``maxToolOutput`` is given.
DEFAULT_TOOL_OUTPUT: Mapping[str, int] = {"tokens": 10000}
#: What a non-text part (an image, a file) of a message counts, in tokens.
PART_TOKENS = 1000
#: A cleared tool result shorter than this is left as it is (a stub would not be shorter).
_STUB_MIN_CHARS = 200

RECALL_TOOL: Mapping[str, Any] = {
    "name": RECALL,
    "description": (
        "Returns the full text of a tool result that was cut or cleared to save context, "
        "from `offset` (a character position) on."
    ),
    "params": [
        {
            "name": "id",
            "type": {"kind": "string"},
            "optional": False,
            "description": 'the id the marker names, e.g. "r1" or "t3.2"',
        },
        {
            "name": "offset",
            "type": {"kind": "number"},
            "optional": True,
            "description": "the first character to return (default 0)",
        },
    ],
    "returns": {"kind": "string"},
    "examples": [],
    "builtin": True,
}


class ContextWindowError(AuwgentError):
    """A request would not fit the model's window even after compaction; it was not sent."""


def _table() -> Mapping[str, Any]:
    text = resources.files("auwgent.ir").joinpath("models.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


_TABLE = _table()


@record
class Limits:
    """One model's window and output limit (tokens) and the estimator's constants."""

    context_window: int
    max_output_tokens: int
    chars_per_token: float
    message_tokens: int
    request_tokens: int

    @property
    def budget(self) -> int:
        """The tokens a request may use: the window less the room kept for the answer."""
        return max(0, self.context_window - self.max_output_tokens)


def limits_for(model: Mapping[str, Any]) -> Limits:
    """The limits of an IR model: its ``contextWindow`` / ``maxOutputTokens`` when declared,
    else the table's longest matching prefix, else its provider's defaults."""
    provider = str(model.get("provider", "custom"))
    base = _TABLE["providers"].get(provider, _TABLE["providers"]["custom"])
    name = str(model.get("model", ""))
    window, output = base["contextWindow"], base["maxOutputTokens"]
    best = -1
    for entry in _TABLE["models"]:
        prefix = entry["prefix"]
        if provider != "custom" and name.startswith(prefix) and len(prefix) > best:
            best = len(prefix)
            window, output = entry["contextWindow"], entry["maxOutputTokens"]
    window = int(model.get("contextWindow") or window)
    output = int(model.get("maxOutputTokens") or output)
    return Limits(
        window,
        min(output, window),
        float(base["charsPerToken"]),
        int(base["messageTokens"]),
        int(base["requestTokens"]),
    )


# -- the estimator ---------------------------------------------------------------------------


def _message_chars(message: Message) -> tuple[int, int]:
    """(characters, non-text parts) of one message."""
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments)
    parts = sum(1 for p in message.parts if p.get("type") != "text")
    return chars, parts


def _functions_chars(functions: Sequence[FunctionSpec]) -> int:
    return sum(
        len(f.name) + len(f.description) + len(json.dumps(f.parameters, separators=(",", ":")))
        for f in functions
    )


def raw_estimate(
    limits: Limits,
    system: str,
    messages: Sequence[Message],
    functions: Sequence[FunctionSpec] = (),
) -> dict[str, int]:
    """The uncalibrated token estimate of a request, by zone (``system``, ``tools``,
    ``messages``): characters over ``charsPerToken``, plus ``messageTokens`` a message (the
    system prompt is one) and ``requestTokens`` once, plus :data:`PART_TOKENS` a non-text part."""
    cpt = limits.chars_per_token
    system_tokens = math.ceil(len(system) / cpt) + (limits.message_tokens if system else 0)
    tools = math.ceil(_functions_chars(functions) / cpt)
    history = limits.request_tokens
    for message in messages:
        chars, parts = _message_chars(message)
        history += math.ceil(chars / cpt) + limits.message_tokens + parts * PART_TOKENS
    return {"system": system_tokens, "tools": tools, "messages": history}


def estimate_request(
    limits: Limits,
    system: str,
    messages: Sequence[Message],
    functions: Sequence[FunctionSpec] = (),
    factor: float = 1.0,
) -> int:
    """The calibrated estimate of a whole request, in tokens."""
    return math.ceil(sum(raw_estimate(limits, system, messages, functions).values()) * factor)


class Calibration:
    """Per model, the ratio of the input tokens providers reported to the raw estimates of the
    same requests (summed over every reported request, so one odd answer moves it little)."""

    def __init__(self) -> None:
        self._sums: dict[str, tuple[int, int]] = {}

    def factor(self, model: str) -> float:
        """The multiplier for ``model``'s raw estimates (1.0 before any usage was seen), kept
        between 0.5 and 3: a provider that reports nonsense cannot switch the check off."""
        raw, reported = self._sums.get(model, (0, 0))
        return min(3.0, max(0.5, reported / raw)) if raw and reported else 1.0

    def observe(self, model: str, raw: int, reported: int | None) -> None:
        """Take one request's raw estimate and the input tokens its provider reported."""
        if reported is None or reported <= 0 or raw <= 0:
            return
        old_raw, old_reported = self._sums.get(model, (0, 0))
        self._sums[model] = (old_raw + raw, old_reported + reported)


# -- cutting tool results --------------------------------------------------------------------


def cap_chars(cap: Mapping[str, Any], limits: Limits) -> int:
    """A ``{"tokens": N}`` or ``{"chars": N}`` cap in characters."""
    if "chars" in cap:
        return int(cap["chars"])
    return int(cap["tokens"] * limits.chars_per_token)


def cut(text: str, limit: int, ref: str, offset: int = 0) -> str:
    """``text[offset:]`` kept to ``limit`` characters; when cut, a marker says how much was
    shown and how ``recall`` continues."""
    rest = text[offset:]
    if len(rest) <= limit:
        return rest
    end = offset + limit
    return (
        f"{text[offset:end]}\n[auwgent: cut at {limit} of {len(text) - offset} characters; "
        f'recall(id="{ref}", offset={end}) returns the rest]'
    )


def recall(session: Mapping[str, Any], ref: str) -> str | None:
    """The full text behind ``ref`` in ``session``: a cut tool result (``"r1"``) or a message
    of an earlier turn (``"t3.2"``: turn 3, message 2 of its ``messages``). ``None`` when the
    session holds nothing under that id."""
    kept = (session.get("context") or {}).get("kept") or {}
    if ref in kept:
        return str(kept[ref])
    turn, _, index = ref[1:].partition(".")
    if ref.startswith("t") and turn.isdigit() and index.isdigit():
        turns = session.get("turns") or []
        if int(turn) < len(turns):
            messages = turns[int(turn)].get("messages") or []
            if int(index) < len(messages):
                return str(messages[int(index)].get("content", ""))
    return None


# -- compaction ------------------------------------------------------------------------------


@record
class HistoryPolicy:
    """A config's ``history { ... }``."""

    keep_last: int = 6
    compact: str | None = None  # "drop", "summarize", "clearToolResults"
    summarize_with: Mapping[str, Any] | None = None
    trigger: float = 0.8

    @classmethod
    def of(cls, cfg: Mapping[str, Any]) -> HistoryPolicy:
        given = cfg.get("history") or {}
        return cls(
            keep_last=int(given.get("keepLast", 6)),
            compact=given.get("compact"),
            summarize_with=given.get("summarizeWith"),
            trigger=float(given.get("trigger", 0.8)),
        )


def stub(message: Message, ref: str) -> Message:
    """``message`` (a tool result of an earlier turn) with its content replaced by a stub."""
    size = len(message.content)
    text = (
        f"[auwgent: an earlier tool result of {size} characters was cleared to save context; "
        f'recall(id="{ref}") returns it]'
    )
    return replace(message, content=text, parts=())


def cleared(segment: Sequence[Message], refs: Sequence[str | None]) -> list[Message]:
    """One past turn with its tool results (every message after the first that is a ``tool``
    message or a runtime ``user`` message: result blocks, notes) stubbed."""
    out: list[Message] = []
    for index, message in enumerate(segment):
        ref = refs[index]
        result = index > 0 and message.role in ("tool", "user")
        if result and ref is not None and len(message.content) >= _STUB_MIN_CHARS:
            out.append(stub(message, ref))
        else:
            out.append(message)
    return out


def summary_message(text: str, turns: int) -> Message:
    """The user message that stands for ``turns`` summarized turns."""
    return Message(
        role="user",
        content=f"[auwgent: a summary of the first {turns} turns of this conversation]\n{text}",
    )


def compact_view(
    segments: Sequence[Sequence[Message]],
    refs: Sequence[Sequence[str | None]],
    record: Mapping[str, Any] | None,
) -> list[Message]:
    """The past turns as the next request shows them under the last compaction ``record``
    (``None``: as they are). A record covers the first ``turns`` turns: dropped, their tool
    results stubbed, or replaced by its ``summary``. Turns are whole, so a call and its result
    are never parted."""
    covered = int(record["turns"]) if record else 0
    policy = record["policy"] if record else None
    out: list[Message] = []
    if policy == "summarize" and record is not None:
        out.append(summary_message(str(record["summary"]), covered))
    for index, segment in enumerate(segments):
        if index < covered and policy in ("drop", "summarize"):
            continue
        if index < covered and policy == "clearToolResults":
            out.extend(cleared(segment, refs[index]))
        else:
            out.extend(segment)
    return out


def transcript(messages: Sequence[Message]) -> str:
    """Messages as plain text for a summarizer (roles in brackets, calls by name)."""
    lines = []
    for message in messages:
        calls = "".join(f" [calls {c.name}({c.arguments})]" for c in message.tool_calls)
        lines.append(f"[{message.role}] {message.content}{calls}")
    return "\n".join(lines)


_SUMMARIZE = (
    "You compress conversations. Summarize the conversation below for the assistant that "
    "continues it: keep facts, names, numbers, decisions, what the user asked for and what is "
    "still open. Answer with the summary only."
)


class ContextBudget:
    """The context budget of one run (see the module docstring)."""

    def __init__(self, run: ContextBudgetHost) -> None:
        self.run = run
        services = run.services  # the calibration lives as long as the agent
        if services.calibration is None:
            services.calibration = Calibration()
        self.calibration: Calibration = services.calibration
        self._raw: dict[int, tuple[str, int]] = {}

    # -- session state -----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """``session["context"]``: ``kept`` (cut results by id), ``cuts`` (the length each
        was cut at) and ``compactions``."""
        found = self.run.session.get("context")
        if not isinstance(found, dict):
            found = {"kept": {}, "compactions": []}
            self.run.session["context"] = found
        found.setdefault("kept", {})
        found.setdefault("compactions", [])
        return found

    # -- tool results ------------------------------------------------------------------------

    def cap(self, inv: Invocation, name: str, text: str) -> str:
        """A tool's result as the model sees it: cut to the tool's ``@maxOutput`` (else the
        config's ``maxToolOutput``, else :data:`DEFAULT_TOOL_OUTPUT`); the full text is kept
        in the session under a new id that the marker names."""
        cfg = inv.agent["configs"][inv.config_name]
        tool = next((t for t in inv.tools if t["name"] == name), None)
        cap = (tool or {}).get("maxOutput") or cfg.get("maxToolOutput") or DEFAULT_TOOL_OUTPUT
        limit = cap_chars(cap, limits_for(cfg["model"]))
        if len(text) <= limit:
            return text
        state = self.state()
        ref = f"r{len(state['kept']) + 1}"
        state["kept"][ref] = text
        state.setdefault("cuts", {})[ref] = limit  # recall's slices are as long
        return cut(text, limit, ref)

    def tools(self, tools: tuple[Mapping[str, Any], ...]) -> tuple[Mapping[str, Any], ...]:
        """The model-visible tools, with ``recall`` once this session kept something (and
        the agent has no tool of that name)."""
        context = cast("Mapping[str, Any]", self.run.session.get("context") or {})
        if not context.get("kept") or any(t["name"] == RECALL for t in tools):
            return tools
        return (*tools, RECALL_TOOL)

    def offers_recall(self, inv: Invocation) -> bool:
        """Whether a call of ``recall`` in ``inv`` is the built-in one."""
        return any(t is RECALL_TOOL for t in inv.tools)

    async def recall_call(
        self, inv: Invocation, args: Mapping[str, Any], call_id: str | None
    ) -> CallOutcome:
        """The model's ``recall`` call: the kept text from ``offset``, in slices as long as
        the cut that kept it (else the config's tool cap); the marker gives the next offset."""
        ref = str(args.get("id", ""))
        full = recall(self.run.session, ref)
        if full is None:
            message = f"recall: nothing is kept under the id {ref!r}"
            await self.run.emit("tool_error", {"tool": RECALL, "message": message}, inv.name)
            return CallOutcome("tool", RECALL, args, "error", error=message, call_id=call_id)
        offset = max(0, int(args.get("offset") or 0))
        cfg = inv.agent["configs"][inv.config_name]
        cap = cfg.get("maxToolOutput") or DEFAULT_TOOL_OUTPUT
        limit = self.state().get("cuts", {}).get(ref) or cap_chars(cap, limits_for(cfg["model"]))
        text = cut(full, int(limit), ref, offset)
        payload = {"name": RECALL, "args": args, "result": text, "overridden": False}
        await self.run.emit("tool_result", payload, inv.name)
        return CallOutcome("tool", RECALL, args, "ok", text, call_id=call_id)

    # -- requests ----------------------------------------------------------------------------

    def observe(self, request: ModelRequest, usage: TokenUsage | None) -> None:
        """Calibrate the estimator with the input tokens reported for ``request``."""
        found = self._raw.pop(id(request), None)
        if found is not None and usage is not None:
            self.calibration.observe(found[0], found[1], usage.get("input_tokens"))

    async def fit(self, inv: Invocation, request: ModelRequest) -> ModelRequest:
        """``request`` as it may be sent: the recorded compaction applied to earlier turns,
        a new one made when the estimate passes ``trigger`` × the budget; raises
        :class:`ContextWindowError` when it still does not fit."""
        cfg = inv.agent["configs"][inv.config_name]
        model = cfg["model"]
        limits = limits_for(model)
        key = f"{model.get('provider')}:{model.get('model')}"
        factor = self.calibration.factor(key)
        segments, refs, current = self._segments(inv)
        policy = HistoryPolicy.of(cfg)
        record = self._last_record(len(segments))
        view = compact_view(segments, refs, record)
        messages = [*view, *current]
        size = estimate_request(limits, request.system, messages, request.functions, factor)
        if policy.compact and size > policy.trigger * limits.budget:
            newer = await self._compact(inv, policy, segments, refs, record, size, limits)
            if newer is not None:
                record = newer
                messages = [*compact_view(segments, refs, record), *current]
        request = replace(request, messages=tuple(messages))
        zones = _zones(limits, request, len(messages) - len(current))
        raw = sum(zones.values())
        size = math.ceil(raw * factor)
        if size > limits.budget:
            raise ContextWindowError(_overflow(key, size, limits, zones, factor, policy))
        self._raw[id(request)] = (key, raw)
        return request

    def _segments(
        self, inv: Invocation
    ) -> tuple[list[list[Message]], list[list[str | None]], list[Message]]:
        """The root invocation's history split by earlier turn (each with the recall ids of
        its messages), and this turn's messages; another invocation has no earlier turns."""
        run = self.run
        history = inv.history
        if run.turn is None or inv.record is not run.turn["messages"]:
            return [], [], list(history)
        segments: list[list[Message]] = []
        refs: list[list[str | None]] = []
        at = 0
        root = run.core.root
        for number, turn in enumerate(run.session["turns"][:-1]):
            count = len(turn.get("messages", ()))
            first: list[str | None] = []
            if turn.get("agent", root) == root:
                count += 1
                first = [None]
            segments.append(list(history[at : at + count]))
            refs.append([*first, *(f"t{number}.{i}" for i in range(count - len(first)))])
            at += count
        return segments, refs, list(history[at:])

    def _last_record(self, turns: int) -> Mapping[str, Any] | None:
        context = cast("Mapping[str, Any]", self.run.session.get("context") or {})
        records = [r for r in context.get("compactions", ()) if int(r["turns"]) <= turns]
        return records[-1] if records else None

    async def _compact(
        self,
        inv: Invocation,
        policy: HistoryPolicy,
        segments: list[list[Message]],
        refs: list[list[str | None]],
        record: Mapping[str, Any] | None,
        size: int,
        limits: Limits,
    ) -> dict[str, Any] | None:
        """A new compaction of every earlier turn but the last ``keepLast``, recorded on the
        session and emitted as ``context_compacted``; ``None`` when it would change nothing."""
        covered = len(segments) - policy.keep_last
        previous = int(record["turns"]) if record else 0
        if covered <= previous:
            return None
        assert policy.compact is not None
        newer: dict[str, Any] = {"policy": policy.compact, "turns": covered}
        if policy.compact == "summarize":
            old = _to_summarize(segments[:covered], refs[:covered], record)
            newer["summary"] = await self._summary(inv, policy, old)
        after_view = compact_view(segments, refs, newer)
        current = inv.history[sum(len(s) for s in segments) :]
        after = estimate_request(limits, "", [*after_view, *current])
        before_view = compact_view(segments, refs, record)
        before = estimate_request(limits, "", [*before_view, *current])
        if after >= before:
            return None
        newer["before"] = size
        newer["after"] = size - (before - after)
        newer["turn"] = len(segments)
        self.state()["compactions"].append(newer)
        payload = {k: newer[k] for k in ("policy", "turns", "before", "after")}
        await self.run.emit("context_compacted", payload, inv.name)
        return newer

    async def _summary(self, inv: Invocation, policy: HistoryPolicy, old: Sequence[Message]) -> str:
        """One request to the ``summarizeWith`` model (else the config's): its usage counts
        in the turn's ``model_calls`` and the run's budget like any other model call."""
        run = self.run
        cfg = inv.agent["configs"][inv.config_name]
        model = policy.summarize_with or cfg["model"]
        request = ModelRequest(
            model=str(model["model"]),
            system=_SUMMARIZE,
            messages=(Message(role="user", content=transcript(old)),),
            options=model.get("options") or {},
            stream=True,
        )
        limits = limits_for(model)
        size = estimate_request(limits, request.system, request.messages)
        if size > limits.budget:
            raise ContextWindowError(
                f'history.compact "summarize": the turns to summarize need about {size} tokens, '
                f"over the {limits.budget} {model['model']} may use; nothing was sent"
            )
        run.budgets.spent["requests"] += 1
        span = None
        if run.trace is not None:
            span = run.trace.chat_start(inv.name, provider_key(model), str(model["model"]))
        chunks: list[str] = []
        usage: TokenUsage | None = None
        try:
            async for event in run.services.pool.provider(model).stream(request):
                if isinstance(event, TextDelta):
                    chunks.append(event.text)
                elif isinstance(event, Usage):
                    usage = _token_usage(event)
                elif isinstance(event, ToolCallDelta | ContentPart | Finish):
                    pass  # a summary is the text alone
                else:
                    assert_never(event)
        except Exception as exc:
            if span is not None and run.trace is not None:
                run.trace.chat_end(span, str(model["model"]), None, None, exc)
            raise
        if span is not None and run.trace is not None:
            run.trace.chat_end(span, str(model["model"]), cast("Any", usage), "stop", None)
        run.budgets.spent["tokens"] += usage["total_tokens"] if usage is not None else 0
        if run.turn is not None:
            run.turn["model_calls"].append(
                {
                    "model": f"{provider_key(model)}:{model['model']}",
                    "finish_reason": None,
                    "usage": usage,
                    "purpose": "summarize",
                }
            )
        text = "".join(chunks).strip()
        if not text:
            raise ContextWindowError(
                f'history.compact "summarize": {model["model"]} answered with an empty summary'
            )
        return text


def _zones(limits: Limits, request: ModelRequest, earlier: int) -> dict[str, int]:
    """The raw estimate of ``request`` by zone: the system prompt (with persona, memory and
    context), the tool specs, the earlier turns (the first ``earlier`` messages), this turn."""
    head = raw_estimate(limits, request.system, request.messages[:earlier], request.functions)
    turn = raw_estimate(limits, "", request.messages[earlier:])["messages"]
    return {
        "system": head["system"],
        "tools": head["tools"],
        "history": head["messages"] - limits.request_tokens,
        "turn": turn,
    }


def _to_summarize(
    segments: Sequence[Sequence[Message]],
    refs: Sequence[Sequence[str | None]],
    record: Mapping[str, Any] | None,
) -> list[Message]:
    """What a new summary covers: the previous summary (when the last record is one), then
    the turns after it, with their tool results as stubs naming their recall ids."""
    start = 0
    out: list[Message] = []
    if record is not None and record["policy"] == "summarize":
        start = int(record["turns"])
        out.append(summary_message(str(record["summary"]), start))
    for index in range(start, len(segments)):
        out.extend(cleared(segments[index], refs[index]))
    return out


def _token_usage(event: Usage) -> TokenUsage:
    given = event.input_tokens or 0
    made = event.output_tokens or 0
    return {"input_tokens": given, "output_tokens": made, "total_tokens": given + made}


def _overflow(
    key: str,
    size: int,
    limits: Limits,
    zones: Mapping[str, int],
    factor: float,
    policy: HistoryPolicy,
) -> str:
    parts = ", ".join(f"{zone} {math.ceil(tokens * factor)}" for zone, tokens in zones.items())
    compact = (
        f'history.compact "{policy.compact}" left nothing more to compact'
        if policy.compact
        else "the config declares no history compaction"
    )
    return (
        f"context window exceeded: the request to {key} needs about {size} tokens, over the "
        f"{limits.budget} it may use (contextWindow {limits.context_window} - maxOutputTokens "
        f"{limits.max_output_tokens}); by zone: {parts}; {compact}; nothing was sent"
    )

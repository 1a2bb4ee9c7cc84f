"""Intent events and the user's intent handlers.

A handler registered with ``agent.on_intent`` / ``agent.on_intent_partial`` may be:

- a class (instantiated once, without arguments) or an instance whose methods are named after
  intents: ``async def response_text(self, intent, agent_name)``. The method is found by the
  exact intent name first, then by its sanitised lowercase form (``Planning`` → ``planning``);
- a plain function ``(name, value, agent_name)``.

Either may be sync or async. A handler of a final ``tool_call``, ``workflow_call`` or
``helper_call`` may return ``{"skip": True}`` or ``{"result": ...}`` (an intent control), or
nothing; any other value is not a control (:func:`control_of` raises :class:`NotAControl`) and
the call is refused.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import sys
import types
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from auwgent._records import record
from auwgent.errors import AuwgentError
from auwgent.ir import vocabulary
from auwgent.runtime.adapters import instance_of

if TYPE_CHECKING:
    from auwgent.ir.model import Intent as IRIntent

__all__ = [
    "BUILTIN_INTENTS",
    "Control",
    "HandlerSet",
    "HookFailure",
    "IntentEvent",
    "NotAControl",
    "Sink",
    "sanitise",
]

#: Every intent the runtime itself may emit, besides an agent's custom intents.
BUILTIN_INTENTS = vocabulary.BUILTIN_INTENTS

#: The intent a helper that was handed the conversation (``handoff user``) emits when it is done.
COMPLETE_INTENT = "handoff_complete"
COMPLETE_SPEC: IRIntent = {
    "name": COMPLETE_INTENT,
    "description": (
        "Emit when the conversation you were handed is finished and control should return to "
        "the agent that called you (together with your final answer)."
    ),
    "fields": [
        {
            "name": "summary",
            "type": {"kind": "string"},
            "optional": True,
            "description": "what was settled with the user",
        }
    ],
}

_NOT_SANITARY = re.compile(r"[^0-9a-zA-Z_]+")


# Records rather than dataclasses: see auwgent.runtime.providers.http (import time).


@record
class IntentEvent:
    """One intent as yielded by ``agent.stream()``: final (``partial=False``) or partial."""

    name: str
    value: Any
    agent_name: str
    partial: bool = False


class Sink(Protocol):
    """Where a run puts its intents for a stream consumer (an ``asyncio.Queue`` will do);
    ``None`` ends the stream."""

    def put_nowait(self, item: IntentEvent | None) -> None: ...


@record
class Control:
    """What a handler asked for a call: skip it, or use ``result`` instead of running it."""

    skip: bool = False
    result: Any = None  # used when not skipping (it may itself be None)


@record
class HookFailure:
    """A handler or middleware that raised: ``who`` names it (``intent handler 'Guard'``)."""

    who: str
    error: Exception


# What inspect.isroutine() accepts (importing inspect costs more than building an agent), and
# partials.
_ROUTINES = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    functools.partial,
)


def label_of(obj: Any, fallback: str) -> str:
    """How an application object is named in messages: its ``name`` if it is a non-empty
    string, else its class (or function) name, else ``fallback``."""
    name = obj.get("name") if isinstance(obj, Mapping) else getattr(obj, "name", None)
    if isinstance(name, str) and name:
        return name
    if isinstance(obj, Mapping):
        return fallback
    if isinstance(obj, _ROUTINES):
        return str(getattr(obj, "__qualname__", None) or fallback)
    return type(obj).__name__


def sanitise(name: str) -> str:
    """The sanitised lowercase form used as a fallback method name (``My-Intent`` → ``my_intent``)."""
    return _NOT_SANITARY.sub("_", name).strip("_").lower()


_CONTROL_KEYS = frozenset({"skip", "result"})
#: How a refused control reads after the value (the TypeScript runtime says the same).
_CONTROLS = 'which is not a control (expected {"skip": true}, {"result": ...} or nothing)'
#: The longest rendering of a refused value in a message (characters).
_SHOWN = 120


class NotAControl(AuwgentError):
    """A guard (``onIntent`` middleware or intent handler) returned, for a call intent, a value
    that is neither a control nor nothing: the call is refused.

    ``str()`` reads ``<who> returned <value> on <intent> <name>, which is not a control
    (...); the call was not run``, as the ``error`` intent says (in both runtimes).
    """

    def __init__(self, value: Any, who: str = "a guard", what: str = "a call") -> None:
        super().__init__(
            f"{who} returned {shown(value)} on {what}, {_CONTROLS}; the call was not run"
        )
        self.value = value

    def naming(self, who: str, what: str) -> NotAControl:
        """The same refusal, naming the guard and the call."""
        return NotAControl(self.value, who, what)


def control_of(value: Any) -> Control | None:
    """Read an intent control from a handler's return value on a call intent.

    ``None``, ``{}`` and ``{"skip": False}`` are no control; ``{"skip": True}`` skips (it wins
    over a ``result``); ``{"result": v}`` uses ``v``. Anything else raises
    :class:`NotAControl`: a mapping with other keys, a ``skip`` that is not a boolean, any
    other type (``"skip"``, ``True``, ``1``, a list).
    """
    if value is None:
        return None
    if not isinstance(value, Mapping) or not _CONTROL_KEYS.issuperset(value):
        raise NotAControl(value)
    skip = value.get("skip", False)
    if not isinstance(skip, bool):
        raise NotAControl(value)
    if skip:
        return Control(skip=True)
    if "result" in value:
        return Control(result=value["result"])
    return None


def shown(value: Any) -> str:
    """``value`` as compact JSON in a message (``a <type>`` when it is not JSON), cut at
    :data:`_SHOWN` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


async def call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` and await its result when it is awaitable."""
    result = fn(*args)
    # Most hooks and handlers return None; skip isawaitable's ABC check for them.
    if result is not None and inspect.isawaitable(result):
        return await result
    return result


_Target = Callable[[str, Any, str], Awaitable[Any]]


class _Handler:
    """One registered handler, with its per-intent method lookups cached."""

    __slots__ = ("_function", "_instance", "_methods", "label")

    def __init__(self, handler: Any) -> None:
        if not (isinstance(handler, type) or callable(handler) or _is_instance(handler)):
            raise TypeError(
                "on_intent: expected a handler class, an instance of one, or a function "
                f"(name, value, agent_name), got {type(handler).__name__} {handler!r:.60}"
            )
        handler = instance_of(handler, "on_intent")
        self._instance: Any = None
        self._function: Callable[..., Any] | None = None
        if _is_function_like(handler):
            self._function = handler
        else:
            self._instance = handler
        self._methods: dict[str, Callable[..., Any] | None] = {}
        self.label = label_of(handler, "handler")

    def method(self, name: str) -> Callable[..., Any] | None:
        try:
            return self._methods[name]
        except KeyError:
            found = None
            for attr in (name, sanitise(name)):
                candidate = getattr(self._instance, attr, None)
                # Generated base-class placeholders are marked; they handle nothing.
                if callable(candidate) and not getattr(
                    candidate, "__auwgent_unimplemented__", False
                ):
                    found = candidate
                    break
            self._methods[name] = found
            return found

    async def __call__(self, name: str, value: Any, agent_name: str) -> Any:
        # call_maybe_async written out: one coroutine less for every intent dispatched.
        if self._function is not None:
            result = self._function(name, value, agent_name)
        else:
            method = self.method(name)
            if method is None:
                return None
            result = method(value, agent_name)
        if result is not None and inspect.isawaitable(result):
            return await result
        return result

    def takes(self, name: str) -> bool:
        return self._function is not None or self.method(name) is not None

    def method_names(self) -> list[str]:
        if self._instance is None:
            return []
        names = []
        for attr in dir(type(self._instance)):
            value = getattr(self._instance, attr, None)
            # A generated base's placeholders (another agent's intents, say) handle nothing.
            if (
                not attr.startswith("_")
                and callable(value)
                and not getattr(value, "__auwgent_unimplemented__", False)
            ):
                names.append(attr)
        return names


def _is_instance(handler: Any) -> bool:
    """An object of the application's own class (data such as ``None``, strings, numbers,
    dicts and lists is no handler)."""
    return type(handler).__module__ != "builtins"


def _is_function_like(handler: Any) -> bool:
    # Functions, partials and objects whose class defines __call__ are function handlers;
    # any other object is looked up by intent name.
    if isinstance(handler, _ROUTINES):
        return True
    return any("__call__" in vars(klass) for klass in type(handler).__mro__[:-1])


class HandlerSet:
    """The handlers registered for final or for partial intents, in registration order."""

    def __init__(self) -> None:
        self._handlers: list[_Handler] = []

    def __bool__(self) -> bool:
        return bool(self._handlers)

    def takes(self, name: str) -> bool:
        """Whether a handler would be called for ``name`` (a function takes every intent)."""
        return any(h.takes(name) for h in self._handlers)

    def add(self, handler: Any, known_intents: Iterable[str], where: str = "on_intent") -> None:
        """Register ``handler``; warn about methods that match no known intent (likely typos).

        Raises ``TypeError`` at once for something that cannot be a handler; the warnings
        point at the application's line that registered it.
        """
        try:
            wrapped = _Handler(handler)
        except TypeError as exc:
            raise TypeError(str(exc).replace("on_intent", where, 1)) from None
        known = set(known_intents)
        known_forms = known | {sanitise(n) for n in known}
        for attr in wrapped.method_names():
            if attr not in known_forms:
                from auwgent._names import suggest  # only when a name is unknown

                hint = suggest(attr, sorted(known))
                tip = f"; did you mean {hint!r}?" if hint else ""
                warnings.warn(
                    f"intent handler method {attr!r} matches no intent of this agent{tip}",
                    UserWarning,
                    stacklevel=_caller_level(),
                )
        self._handlers.append(wrapped)

    async def dispatch(
        self, name: str, value: Any, agent_name: str, failures: list[HookFailure]
    ) -> list[tuple[str, Any]]:
        """Call every handler, whatever the others do; return ``(who, result)`` in order
        (``who`` names the handler as messages do: ``intent handler 'Guard'``).

        A handler that raises adds a :class:`HookFailure` to ``failures``; the others still run.
        """
        results = []
        for handler in self._handlers:
            who = f"intent handler {handler.label!r}"
            try:
                results.append((who, await handler(name, value, agent_name)))
            except Exception as exc:
                failures.append(HookFailure(who, exc))
        return results


def _caller_level() -> int:
    """The ``stacklevel`` of the application's frame that registered a handler: the first
    frame outside this package and outside the (generated) agent's ``on_intent`` methods."""
    package = str(Path(__file__).resolve().parents[1])
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and (
        frame.f_code.co_filename.startswith(package)
        or frame.f_code.co_name in ("on_intent", "on_intent_partial")
    ):
        frame = frame.f_back
        level += 1
    return level

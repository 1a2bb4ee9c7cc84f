"""Middleware: the seven hooks, in registration order, scoped by ``target``.

A middleware is a class (instantiated without arguments), an object with any of the
manual's camelCase hook methods (snake_case aliases are accepted), or a dict of such
functions (with optional ``"name"`` and ``"target"``)::

    onRunStart(session, ctx) -> session | None
    onLLMStart(prompt, ctx) -> str | None          # a string replaces the prompt for that call
    onIntent(name, value, ctx) -> control | None   # {"skip": True} / {"result": ...}; on a
                                                   # call, anything else refuses the call
    onIntentPartial(name, value, ctx) -> None
    onLLMEnd(response, ctx) -> None                # terminal responses only
    onRunComplete(final_session, ctx) -> None      # once, also after a failed run
    onError(error, session, ctx) -> bool | None    # True marks the error handled

Hooks may be sync or async. ``target`` (a name or a list of names) limits a middleware to the
times when ``ctx["activeAgent"]`` is one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from auwgent.errors import ConfigError
from auwgent.ir import vocabulary
from auwgent.runtime.adapters import instance_of, member_reader
from auwgent.runtime.intents import HookFailure, call_maybe_async, label_of

__all__ = ["HOOKS", "MiddlewareChain"]

#: camelCase hook name → accepted snake_case alias.
HOOKS: dict[str, str] = {hook.name: hook.alias for hook in vocabulary.HOOKS}


class _Entry:
    __slots__ = ("hooks", "label", "targets")

    def __init__(self, obj: Any, index: int) -> None:
        self.label = label_of(obj, f"middleware[{index}]")
        # A dict of functions (the TypeScript manual's object style) works like an instance.
        get = member_reader(obj)
        target = get("target")
        if target is None:
            self.targets: frozenset[str] | None = None
        elif isinstance(target, str):
            self.targets = frozenset({target})
        elif isinstance(target, (list, tuple, set, frozenset)) and all(
            isinstance(t, str) for t in target
        ):
            self.targets = frozenset(target)
        else:
            raise ConfigError(
                f"middleware[{index}].target: expected an agent name or a list of names, "
                f"got {target!r}"
            )
        self.hooks: dict[str, Callable[..., Any]] = {}
        for camel, snake in HOOKS.items():
            # The generated AuwgentMiddleware marks its placeholder hooks; skip those so a
            # subclass's snake_case override is found and no-op hooks cost nothing.
            fn = next(
                (
                    f
                    for f in (get(camel), get(snake))
                    if f is not None and not getattr(f, "__auwgent_unimplemented__", False)
                ),
                None,
            )
            if fn is not None:
                if not callable(fn):
                    raise ConfigError(f"middleware[{index}].{camel}: expected a method")
                self.hooks[camel] = fn

    def applies(self, active: str) -> bool:
        return self.targets is None or active in self.targets


class MiddlewareChain:
    """The registered middleware; each ``run_*`` method calls one hook on every entry."""

    def __init__(self, middleware: Sequence[Any] | None) -> None:
        if middleware is None:
            middleware = ()
        if not isinstance(middleware, (list, tuple)):
            raise ConfigError(
                f"middleware: expected a list of middleware classes or instances, "
                f"got {type(middleware).__name__}"
            )
        entries = []
        for i, item in enumerate(middleware):
            entries.append(_Entry(instance_of(item, f"middleware[{i}]"), i))
        self._entries = tuple(entries)
        self.has_partial = any("onIntentPartial" in e.hooks for e in entries)
        self.has_intent = any("onIntent" in e.hooks for e in entries)

    def __bool__(self) -> bool:
        """Whether any middleware is registered (without, the engine skips its hook points)."""
        return bool(self._entries)

    def hears_errors(self, active: str) -> bool:
        """Whether a middleware that applies to ``active`` has ``onError`` or ``onIntent``."""
        return any(
            ("onError" in e.hooks or "onIntent" in e.hooks) and e.applies(active)
            for e in self._entries
        )

    def _for(self, hook: str, active: str) -> Sequence[Callable[..., Any]]:
        if not self._entries:
            return ()  # the usual case: no middleware, no list to build at every hook point
        return [e.hooks[hook] for e in self._entries if hook in e.hooks and e.applies(active)]

    async def run_start(self, session: Any, ctx: dict[str, Any]) -> Any:
        """``onRunStart``: each may return a replacement session (``None`` keeps the current)."""
        for fn in self._for("onRunStart", ctx["activeAgent"]):
            returned = await call_maybe_async(fn, session, ctx)
            if returned is not None:
                session = returned
        return session

    async def llm_start(self, prompt: str, ctx: dict[str, Any]) -> str:
        """``onLLMStart``: a returned string replaces the prompt for this call."""
        for fn in self._for("onLLMStart", ctx["activeAgent"]):
            returned = await call_maybe_async(fn, prompt, ctx)
            if isinstance(returned, str):
                prompt = returned
        return prompt

    async def intent(
        self, name: str, value: Any, ctx: dict[str, Any], failures: list[HookFailure]
    ) -> list[tuple[str, Any]]:
        """``onIntent``: every middleware's ``(who, return value)``, in order.

        Each middleware sees the intent whatever the others do: one that raises adds a
        :class:`HookFailure` to ``failures`` and the next still runs.
        """
        return await self._each("onIntent", name, value, ctx, failures)

    async def intent_partial(
        self, name: str, value: Any, ctx: dict[str, Any], failures: list[HookFailure]
    ) -> None:
        """``onIntentPartial``, isolated like :meth:`intent`."""
        await self._each("onIntentPartial", name, value, ctx, failures)

    async def _each(
        self, hook: str, name: str, value: Any, ctx: dict[str, Any], failures: list[HookFailure]
    ) -> list[tuple[str, Any]]:
        results = []
        active = ctx["activeAgent"]
        for entry in self._entries:
            fn = entry.hooks.get(hook)
            if fn is None or not entry.applies(active):
                continue
            who = f"middleware {entry.label!r}"
            try:
                results.append((who, await call_maybe_async(fn, name, value, ctx)))
            except Exception as exc:
                failures.append(HookFailure(who, exc))
        return results

    async def llm_end(self, response: Any, ctx: dict[str, Any]) -> None:
        for fn in self._for("onLLMEnd", ctx["activeAgent"]):
            await call_maybe_async(fn, response, ctx)

    async def run_complete(self, session: Any, ctx: dict[str, Any]) -> None:
        for fn in self._for("onRunComplete", ctx["activeAgent"]):
            await call_maybe_async(fn, session, ctx)

    async def error(self, error: BaseException, session: Any, ctx: dict[str, Any]) -> bool:
        """``onError``: True when any middleware marked the error handled."""
        handled = False
        for fn in self._for("onError", ctx["activeAgent"]):
            if await call_maybe_async(fn, error, session, ctx) is True:
                handled = True
        return handled

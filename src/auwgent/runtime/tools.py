"""The tool registry: the application's tool implementations, looked up by declared name.

``"tools"`` in the runtime config may be a class (instantiated without arguments), an
instance, or a dict of callables. Implementations may be sync or async and receive keyword
arguments. A method that carries ``__auwgent_unimplemented__ = True`` (the generated
``AuwgentTools`` base class marks every method so) counts as not implemented: the tool reaches
the model with ``[NOT CONFIGURED]`` and a call to it yields ``tool_error``.

A sync implementation runs in a worker thread, so that it never stalls the event loop (other
runs, the stream being read) and several calls of one response run together. One marked with
:func:`inline_tool` is declared cheap by the application (no I/O, microseconds): it runs on the
event loop itself, without the thread hop (about 0.3 ms and several context switches a call).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from types import FunctionType, MethodType
from typing import Any, TypeVar

from auwgent._names import suggest
from auwgent.errors import ConfigError, ToolError
from auwgent.runtime import jsontext
from auwgent.runtime.adapters import instance_of

__all__ = ["ToolRegistry", "declared_tools", "inline_tool", "not_configured", "result_text"]

F = TypeVar("F", bound=Callable[..., Any])


def inline_tool(fn: F) -> F:
    """Mark a sync tool implementation as cheap: it runs on the event loop, not in a thread.

    Only for functions that return at once (no I/O, no sleeping, no heavy computation): while
    one runs, nothing else in the event loop does.
    """
    fn.__auwgent_inline__ = True  # type: ignore[attr-defined]
    return fn


def declared_tools(doc: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Every tool the document declares, by name: agents' tools and workflows' scoped tools
    (one name may be declared by several agents)."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    for agent in doc["agents"].values():
        for tool in agent["tools"]:
            found.setdefault(tool["name"], []).append(tool)
        for workflow in agent["workflows"]:
            for tool in workflow["tools"]:
                found.setdefault(tool["name"], []).append(tool)
    return found


def not_configured(name: str) -> str:
    """The message of a call to a declared tool that has no implementation."""
    return f"Tool not configured: {name} has no implementation"


def _implemented(fn: Any) -> bool:
    return callable(fn) and not getattr(fn, "__auwgent_unimplemented__", False)


class ToolRegistry:
    """Implementations by tool name, built from the runtime config's ``tools`` value.

    Every implementation is checked against its declaration when the agent is created:
    missing or unknown parameters (unless it takes ``**kwargs``), values that are not callable,
    and (for classes and instances) methods whose name is a near miss of a declared tool that
    has no implementation. All problems are reported in one ``ConfigError``.

    ``routed`` holds the implementations the runtime supplies itself (``@mcp`` tools, see
    :mod:`auwgent.runtime.mcp`): the application implements none of them.
    """

    def __init__(
        self,
        tools: Any,
        declared: Mapping[str, list[Mapping[str, Any]]],
        routed: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self._impls: dict[str, Callable[..., Any]] = dict(routed or {})
        if routed:
            declared = {k: v for k, v in declared.items() if k not in routed}
        # How each runs, decided once: awaited, called on the loop (inline_tool), or in a thread.
        self._modes: dict[str, str] = {}
        if tools is None:
            return
        tools = instance_of(tools, "tools")
        problems: list[str] = []
        if isinstance(tools, Mapping):
            self._from_mapping(tools, declared, problems)
        else:
            self._from_object(tools, declared, problems)
        for name, fn in self._impls.items():
            if name in declared:
                problems.extend(_signature_problems(name, fn, declared[name]))
            self._modes[name] = _mode(fn)
        if len(problems) == 1:
            raise ConfigError(problems[0])
        if problems:
            raise ConfigError(
                f"tools: {len(problems)} problems with the tool implementations:\n"
                + "\n".join(f"  - {p}" for p in problems)
            )

    def _from_mapping(
        self,
        tools: Mapping[str, Any],
        declared: Mapping[str, list[Mapping[str, Any]]],
        problems: list[str],
    ) -> None:
        for name, fn in tools.items():
            if name in self._impls:
                problems.append(
                    f"tools.{name}: {name!r} is an @mcp tool: its MCP server runs it, so it "
                    "takes no implementation"
                )
            elif name not in declared:
                problems.append(
                    f"tools.{name}: no tool named {name!r} is declared{_tip(name, declared)}"
                )
            elif not callable(fn):
                problems.append(f"tools.{name}: expected a function, got {type(fn).__name__}")
            elif _implemented(fn):
                self._impls[name] = fn

    def _from_object(
        self, tools: Any, declared: Mapping[str, list[Mapping[str, Any]]], problems: list[str]
    ) -> None:
        for name in declared:
            fn: Any = getattr(tools, name, None)
            if fn is not None and not callable(fn):
                problems.append(f"tools.{name}: expected a method, got {type(fn).__name__}")
            elif _implemented(fn):
                self._impls[name] = fn
        missing = [name for name in declared if name not in self._impls]
        if not missing:
            return
        for attr in dir(type(tools)):
            if attr.startswith("_") or attr in declared:
                continue
            hint = suggest(attr, missing)
            if hint and callable(getattr(tools, attr, None)):
                problems.append(
                    f"tools.{attr}: no tool named {attr!r} is declared; did you mean {hint!r}?"
                )

    def implementation(self, name: str) -> Callable[..., Any] | None:
        """The function that implements ``name`` (``None``: none configured)."""
        return self._impls.get(name)

    def has(self, name: str) -> bool:
        """Whether ``name`` has an implementation."""
        return name in self._impls

    async def call(self, name: str, args: Mapping[str, Any]) -> Any:
        """Run the implementation of ``name`` with keyword arguments.

        Raises ``ToolError`` when there is none; the implementation's own exceptions propagate.
        """
        fn = self._impls.get(name)
        if fn is None:
            raise ToolError(not_configured(name))
        mode = self._modes.get(name) or _mode(fn)
        if mode == "async":
            return await fn(**args)
        if mode == "inline":
            result = fn(**args)
        else:
            # Sync implementations run in a worker thread so that several calls of one
            # response really run concurrently and a slow tool never stalls the stream.
            import asyncio  # here, not at the top: building an agent needs no event loop

            result = await asyncio.to_thread(fn, **args)
        if inspect.isawaitable(result):
            return await result
        return result


# Reading a plain function's code object answers what ``inspect`` would, without importing it:
# ``inspect`` brings ``ast``, ``dis`` and ``tokenize``, about 25 ms of building an agent.
_CO_VARKEYWORDS = 0x08
_CO_COROUTINE = 0x80


def _plain(fn: Callable[..., Any]) -> tuple[Any, int] | None:
    """``(function, leading parameters already bound)`` for a Python function or method
    whose code object tells its signature; ``None`` for anything else (partials, callable
    objects, builtins, wrapped or marked functions), which ``inspect`` reads."""
    skip = 0
    if isinstance(fn, MethodType):
        fn, skip = fn.__func__, 1
    if not isinstance(fn, FunctionType):
        return None
    extra = ("__wrapped__", "__signature__", "_is_coroutine_marker")
    if any(hasattr(fn, name) for name in extra):
        return None
    return fn, skip


def _mode(fn: Callable[..., Any]) -> str:
    plain = _plain(fn)
    if plain is not None:
        is_async = bool(plain[0].__code__.co_flags & _CO_COROUTINE)
    else:
        import inspect  # not at the top: see _plain

        is_async = inspect.iscoroutinefunction(fn)
    if is_async:
        return "async"
    return "inline" if getattr(fn, "__auwgent_inline__", False) else "thread"


def _parameters(fn: Callable[..., Any]) -> tuple[set[str], set[str]] | None:
    """The names a keyword may set and the names that need a value; ``None`` when ``fn``
    takes any keyword (``**kwargs``) or has no signature to read (some builtins)."""
    plain = _plain(fn)
    if plain is None:
        import inspect  # not at the top: see _plain

        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        params = signature.parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return None
        kinds = inspect.Parameter
        keyword = (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
        takes = {p.name for p in params if p.kind in keyword}
        required = {
            p.name for p in params if p.default is p.empty and p.kind is not p.VAR_POSITIONAL
        }
        return takes, required
    function, skip = plain
    code = function.__code__
    if code.co_flags & _CO_VARKEYWORDS:
        return None
    count, only = code.co_argcount, code.co_posonlyargcount
    positional = code.co_varnames[:count]
    named = code.co_varnames[count : count + code.co_kwonlyargcount]
    defaults = len(function.__defaults__ or ())
    given = function.__kwdefaults__ or {}
    takes = {positional[i] for i in range(max(skip, only), count)} | set(named)
    required = {positional[i] for i in range(skip, count - defaults)}
    required |= {name for name in named if name not in given}
    return takes, required


def _tip(name: str, known: Iterable[str]) -> str:
    hint = suggest(str(name), known)
    return f"; did you mean {hint!r}?" if hint else ""


def _signature_problems(
    name: str, fn: Callable[..., Any], declarations: list[Mapping[str, Any]]
) -> list[str]:
    """What keeps ``fn`` from being called with the declared parameters as keywords."""
    found = _parameters(fn)
    if found is None:
        return []  # any keyword goes, or no signature to read: the call itself will tell
    takes, required = found
    problems = []
    for params_of in {tuple(p["name"] for p in d["params"]) for d in declarations}:
        missing = [p for p in params_of if p not in takes]
        unknown = sorted(required - set(params_of))
        parts = [f"missing parameter {p!r}" for p in missing]
        parts += [f"unknown parameter {p!r}" for p in unknown]
        if parts:
            shown = ", ".join(params_of) or "no parameters"
            problems.append(
                f"tools.{name}: the implementation does not match the declaration "
                f"{name}({shown}): " + "; ".join(parts)
            )
    return problems


def result_text(result: Any) -> str:
    """What the model sees of a tool result: a string as is, anything else as compact JSON
    (no spaces after separators: fewer tokens, as docs/protocol.md shows)."""
    if isinstance(result, str):
        return result
    try:
        return jsontext.compact(result)
    except (TypeError, ValueError):
        return str(result)

"""The tool registry: the application's tool implementations, looked up by declared name.

``"tools"`` in the runtime config may be a class (instantiated without arguments), an
instance, or a dict of callables. Implementations may be sync or async and receive keyword
arguments. A method that carries ``__auwgent_unimplemented__ = True`` (the generated
``AuwgentTools`` base class marks every method so) counts as not implemented: the tool reaches
the model with ``[NOT CONFIGURED]`` and a call to it yields ``tool_error``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from auwgent.errors import ConfigError, ToolError

__all__ = ["ToolRegistry", "declared_tool_names", "not_configured", "result_text"]


def declared_tool_names(doc: Mapping[str, Any]) -> list[str]:
    """Every tool the document declares: agents' tools and workflows' scoped tools."""
    names: list[str] = []
    for agent in doc["agents"].values():
        names.extend(t["name"] for t in agent["tools"])
        for workflow in agent["workflows"]:
            names.extend(t["name"] for t in workflow["tools"])
    return list(dict.fromkeys(names))


def not_configured(name: str) -> str:
    """The message of a call to a declared tool that has no implementation."""
    return f"Tool not configured: {name} has no implementation"


def _implemented(fn: Any) -> bool:
    return callable(fn) and not getattr(fn, "__auwgent_unimplemented__", False)


class ToolRegistry:
    """Implementations by tool name, built from the runtime config's ``tools`` value."""

    def __init__(self, tools: Any, declared: Iterable[str]) -> None:
        declared_list = list(declared)
        self._impls: dict[str, Callable[..., Any]] = {}
        if tools is None:
            return
        if inspect.isclass(tools):
            try:
                tools = tools()
            except Exception as exc:  # the app's constructor: report it as a config mistake
                raise ConfigError(f"tools: could not instantiate {tools.__name__}: {exc}") from exc
        if isinstance(tools, Mapping):
            self._from_mapping(tools, declared_list)
        else:
            for name in declared_list:
                fn: Any = getattr(tools, name, None)
                if _implemented(fn):
                    self._impls[name] = fn

    def _from_mapping(self, tools: Mapping[str, Any], declared: list[str]) -> None:
        for name, fn in tools.items():
            if name not in declared:
                from difflib import get_close_matches  # only on this error path

                hint = get_close_matches(str(name), declared, n=1)
                tip = f"; did you mean {hint[0]!r}?" if hint else ""
                raise ConfigError(f"tools.{name}: no tool named {name!r} is declared{tip}")
            if not callable(fn):
                raise ConfigError(f"tools.{name}: expected a function, got {type(fn).__name__}")
            if _implemented(fn):
                self._impls[name] = fn

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
        if inspect.iscoroutinefunction(fn):
            return await fn(**args)
        # Sync implementations run in a worker thread so that several calls of one response
        # really run concurrently and a slow tool never stalls the stream.
        import asyncio  # here, not at the top: building an agent does not need the event loop

        result = await asyncio.to_thread(fn, **args)
        if inspect.isawaitable(result):
            return await result
        return result


def result_text(result: Any) -> str:
    """What the model sees of a tool result: a string as is, anything else as compact JSON
    (no spaces after separators: fewer tokens, as docs/protocol.md shows)."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(result)

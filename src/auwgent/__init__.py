"""Auwgent for Python: a compiler-first framework for AI agents.

The application normally imports its generated bindings (``<stem>_types.py``); this package
holds what those bindings build on. Runtime names load on first use, so importing
``auwgent`` stays cheap for the CLI and for bindings that never touch them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from auwgent._version import IR_VERSION, __version__
from auwgent.errors import (
    ApprovalError,
    AuwgentError,
    CompileError,
    ConfigError,
    ConflictError,
    ContextError,
    ProviderError,
    ToolError,
    WorkflowError,
)

if TYPE_CHECKING:
    from auwgent.runtime.agent import Agent
    from auwgent.runtime.intents import IntentEvent
    from auwgent.runtime.parts import InputError, Part, file, image, text, tool_parts
    from auwgent.runtime.session import Session
    from auwgent.runtime.stores import (
        JSONFileSessionStore,
        MemorySessionStore,
        SessionStore,
        SessionStoreMiddleware,
        SQLiteSessionStore,
    )
    from auwgent.runtime.tools import inline_tool

_LAZY = {
    "Agent": "auwgent.runtime.agent",
    "IntentEvent": "auwgent.runtime.intents",
    "InputError": "auwgent.runtime.parts",
    "Part": "auwgent.runtime.parts",
    "file": "auwgent.runtime.parts",
    "image": "auwgent.runtime.parts",
    "text": "auwgent.runtime.parts",
    "tool_parts": "auwgent.runtime.parts",
    "Session": "auwgent.runtime.session",
    "SessionStore": "auwgent.runtime.stores",
    "SessionStoreMiddleware": "auwgent.runtime.stores",
    "inline_tool": "auwgent.runtime.tools",
    "SQLiteSessionStore": "auwgent.runtime.stores",
    "JSONFileSessionStore": "auwgent.runtime.stores",
    "MemorySessionStore": "auwgent.runtime.stores",
}


def auwgent(config: Any = None) -> Any:
    """The factory of the project's only agent, as ``from auwgent import auwgent`` promises.

    Finds ``auwgent.yml`` in the current folder or a parent and calls the ``auwgent(config)``
    factory of the one generated module in its output folder. Prefer importing the factory
    from the generated module (``from generated.main_types import auwgent``): it is typed, and
    it is the only way when the project has several agents.
    """
    from auwgent._project_agent import project_agent

    return project_agent(config)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'auwgent' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "IR_VERSION",
    "Agent",
    "ApprovalError",
    "AuwgentError",
    "CompileError",
    "ConfigError",
    "ConflictError",
    "ContextError",
    "InputError",
    "IntentEvent",
    "JSONFileSessionStore",
    "MemorySessionStore",
    "Part",
    "ProviderError",
    "SQLiteSessionStore",
    "Session",
    "SessionStore",
    "SessionStoreMiddleware",
    "ToolError",
    "WorkflowError",
    "__version__",
    "auwgent",
    "file",
    "image",
    "inline_tool",
    "text",
    "tool_parts",
]

"""What an agent runs with beside its IR: providers, the application's hooks, MCP servers,
session stores, tracing and memory ingestion (:class:`Services`).

Built once per agent, from the parsed runtime config, and shared by all its runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auwgent.ir.model import Document as IRDocument
from auwgent.runtime.config import RuntimeOptions
from auwgent.runtime.intents import HandlerSet
from auwgent.runtime.mcp import McpServers
from auwgent.runtime.memory import Ingestion
from auwgent.runtime.middleware import MiddlewareChain
from auwgent.runtime.pool import ProviderPool
from auwgent.runtime.stores import SessionStoreMiddleware
from auwgent.runtime.tracing import make_tracer

__all__ = ["Services"]


class Services:
    """The agent's providers, hooks, stores, tracer and memory ingestion."""

    def __init__(self, doc: IRDocument, options: RuntimeOptions) -> None:
        self.pool = ProviderPool(doc, options)
        self.mcp: McpServers | None = None
        if doc.get("mcp") or options.mcp is not None:
            self.mcp = McpServers(doc, options.mcp)
        self.middleware = MiddlewareChain(options.middleware)
        #: The approver of ``@approval`` calls (``agent.on_approval`` replaces it).
        self.approver: Any = options.approver
        #: The SessionStoreMiddleware instances among the middleware (where resume loads).
        self.stores = _session_stores(options.middleware)
        self.handlers = HandlerSet()
        self.partial_handlers = HandlerSet()
        #: Whether anyone listens to partial intents (middleware or a registered handler).
        self.wants_partials = self.middleware.has_partial
        self.tracer: Any = make_tracer(options)
        self.ingestion: Ingestion | None = None
        if options.memory is not None:
            self.ingestion = Ingestion(options.memory)

    async def aclose(self) -> None:
        """Close the MCP connections and the agent's own HTTP client (of the running loop)."""
        if self.mcp is not None:
            await self.mcp.aclose()
        await self.pool.release()


def _session_stores(middleware: Any) -> list[SessionStoreMiddleware]:
    items: Sequence[Any] = middleware if isinstance(middleware, (list, tuple)) else ()
    return [m for m in items if isinstance(m, SessionStoreMiddleware)]

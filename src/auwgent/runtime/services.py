"""What an agent runs with beside its IR: providers, the application's hooks, MCP servers,
session stores, tracing and memory ingestion (:class:`Services`).

Built once per agent, from the parsed runtime config, and shared by all its runs.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from auwgent.ir.model import Document as IRDocument
from auwgent.runtime.config import RuntimeOptions
from auwgent.runtime.intents import HandlerSet
from auwgent.runtime.middleware import MiddlewareChain
from auwgent.runtime.pool import ProviderPool
from auwgent.runtime.tracing import make_tracer

if TYPE_CHECKING:
    from auwgent.runtime.context_budget import Calibration
    from auwgent.runtime.mcp import McpServers
    from auwgent.runtime.memory import Ingestion
    from auwgent.runtime.stores import SessionStoreMiddleware

__all__ = ["Services"]


class Services:
    """The agent's providers, hooks, stores, tracer and memory ingestion."""

    def __init__(self, doc: IRDocument, options: RuntimeOptions) -> None:
        self.pool = ProviderPool(doc, options)
        self.mcp: McpServers | None = None
        if doc.get("mcp") or options.mcp is not None:
            from auwgent.runtime.mcp import McpServers  # only for agents with MCP tools

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
            from auwgent.runtime.memory import Ingestion  # only for agents with memory

            self.ingestion = Ingestion(options.memory)
        #: The context budget's calibration of its token estimates, per model: made by the
        #: first run that needs it (auwgent.runtime.context_budget), kept as long as the agent.
        self.calibration: Calibration | None = None

    async def aclose(self) -> None:
        """Close the MCP connections and the agent's own HTTP client (of the running loop)."""
        if self.mcp is not None:
            await self.mcp.aclose()
        await self.pool.release()


def _session_stores(middleware: Any) -> list[SessionStoreMiddleware]:
    """The SessionStoreMiddleware instances among the config's middleware (for resume). When
    the stores were never imported there can be no instance: they are not imported for that."""
    stores = sys.modules.get("auwgent.runtime.stores")
    if stores is None:
        return []
    items = middleware if isinstance(middleware, (list, tuple)) else ()
    return [m for m in items if isinstance(m, stores.SessionStoreMiddleware)]

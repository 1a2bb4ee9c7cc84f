"""Sessions, Middleware and Embedding (Python tabs), with annotations for mypy --strict.

Adjustments, each where the manual's snippet cannot run as printed: the "Putting it together"
snippet imports ``auwgent`` from the generated module (not from the ``auwgent`` package); the
RAG snippet reads ``last_turn["input"]["text"]`` (the manual's ``last_turn.["input"]`` is a
syntax error, and a turn's input is ``{"text": ...}``); class names that clash are suffixed.
"""

import time
import uuid
from typing import Any

from generated.middleware_types import (
    AuwgentBaseIntentHandler,
    AuwgentMiddleware,
    AuwgentSession,
    MiddlewareContext,
    auwgent,
)

from .support import db, logger, user_id, vector_db


# Sessions: "Persisting sessions with middleware" (the manual subclasses the intent handler).
class PersistenceMiddleware(AuwgentBaseIntentHandler):
    name = "session-persistence"

    async def onRunStart(self, session: AuwgentSession, ctx: MiddlewareContext) -> AuwgentSession:
        saved = await db.sessions.get(ctx.get("userId"))
        return saved or session

    async def onRunComplete(self, finalSession: AuwgentSession, ctx: MiddlewareContext) -> None:
        await db.sessions.save(ctx.get("userId"), finalSession)


# Middleware: activeAgent.
class Middlware(AuwgentMiddleware):
    name= "scoped-logic"

    async def onIntent(self, name: str, value: Any, ctx: MiddlewareContext) -> None:
        if ctx['activeAgent'] == 'BillingHelper':
            pass  # only runs when BillingHelper is active


# Middleware: setContext.
class ContextMiddleware(AuwgentMiddleware):
    name = "context-injection"

    async def onRunStart(self, session: AuwgentSession, ctx: MiddlewareContext) -> AuwgentSession:
        user = await db.users.get(user_id)
        ctx["set_context"]({"name": user.name, "is_vip": user.plan == "premium"})
        return session


# Middleware: the shared blackboard.
class ObservabilityMiddleware(AuwgentMiddleware):
  name = "observability"

  async def onRunStart(self, session: AuwgentSession, ctx: MiddlewareContext) -> AuwgentSession:
      ctx["trace_id"] = str(uuid.uuid4())
      ctx["start_time"] = time.time()
      return session

  async def onRunComplete(self, finalSession: AuwgentSession, ctx: MiddlewareContext) -> None:
      duration = time.time() - ctx.get("start_time", 0)
      logger.info({"trace_id": ctx.get("trace_id"), "duration": duration})


# Middleware: scoping to a helper.
class ResearcherMiddleware(AuwgentMiddleware):
    name = "researcher-middleware"
    target = "Researcher"  # only fires when Researcher helper is active

    async def onLLMStart(self, prompt: str, ctx: MiddlewareContext) -> None:
        # ctx["activeAgent"] is guaranteed to be "Researcher" here
        pass


# Middleware: "Putting it together" (plain classes, no base class).
class SessionMiddleware:
   name = "session-persistence"

   async def onRunStart(self, session: dict[str, Any], ctx: dict[str, Any]) -> Any:
        user = await db.users.get(user_id)
        ctx["set_context"]({"name": user.name, "is_vip": user.plan == "premium"})
        saved = await db.sessions.get(user_id)
        return saved or session

   async def onRunComplete(self, finalSession: dict[str, Any], ctx: dict[str, Any]) -> None:
       await db.sessions.save(user_id, finalSession)

class PlainObservabilityMiddleware:
    name = "observability"

    async def onRunStart(self, session: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        ctx["trace_id"] = str(uuid.uuid4())
        ctx["start_time"] = time.time()
        return session

    async def onRunComplete(self, finalSession: dict[str, Any], ctx: dict[str, Any]) -> None:
        duration = time.time() - ctx.get("start_time", 0)
        logger.info({"trace_id": ctx.get("trace_id"), "duration": duration})


# Embedding: "Embedding utilities in middleware".
class RagMiddleware(AuwgentMiddleware):
    name = "rag"

    async def onRunStart(self, session: AuwgentSession, ctx: MiddlewareContext) -> AuwgentSession:
        turns = session.get("turns", [])
        last_turn = turns[-1]
        query = last_turn["input"]["text"]
        query_vector = await ctx["embed"](query)

        hits = await vector_db.search(query_vector, top_k=5)
        chunks = [item["text"] for item in hits]

        # Inject retrieved knowledge into runtime context for prompt use.
        ctx["set_context"]({"retrieved_chunks": chunks})
        return session


agent = auwgent({
  "apiKeys": {
      "geminiApiKey": "YOUR_API_KEY"
  },
  "middleware": [SessionMiddleware, PlainObservabilityMiddleware]
})

persisted = auwgent({
    "apiKeys": {
        "geminiApiKey": "YOUR_API_KEY"
    },
    "middleware": [PersistenceMiddleware]
})

everything = auwgent({
    "apiKeys": {"geminiApiKey": "YOUR_API_KEY"},
    "middleware": [
        Middlware,
        ContextMiddleware,
        ObservabilityMiddleware(),
        ResearcherMiddleware,
        RagMiddleware,
    ],
})


async def main() -> None:
    await agent.run("Hello")

"""Getting Started, "Wiring it up", "Handling output" and "Run it" (Python tabs).

The manual imports ``generated.main_types``; here each program has its own module. Adjusted
only where mypy --strict needs it: annotations on the handler methods, and the
top-level ``await`` of the manual wrapped in ``main()``.
"""

from generated.quickstart_types import (
    AuwgentBaseIntentHandler,
    AuwgentBasePartialIntentHandler,
    ErrorIntent,
    ResponseTextIntent,
    ResponseTextPartialIntent,
    auwgent,
)

agent = auwgent({
    "apiKeys": {
        "geminiApiKey": "YOUR_API_KEY"
    }
})


# 1) Final intents
class HandleIntent(AuwgentBaseIntentHandler):
    async def response_text(self, intent: ResponseTextIntent, agent_name: str) -> None:
        print(intent.get('text'))

    async def error(self, intent: ErrorIntent, agent_name: str) -> None:
        print("Error",intent)

agent.on_intent(HandleIntent)


# 2) Streaming partial updates (independent of on_intent)
class HandlePartialIntent(AuwgentBasePartialIntentHandler):
    async def response_text(self, intent: ResponseTextPartialIntent, agent_name: str) -> None:
        print(intent.get("delta", ""), end="")

agent.on_intent_partial(HandlePartialIntent)


async def main() -> None:
    await agent.run("hello")

"""Helpers, "Knowing who is speaking" (Python tab), with annotations for mypy --strict."""

from generated.helpers_types import (
    AuwgentBaseIntentHandler,
    AuwgentTools,
    HelperCallIntent,
    HelperResultIntent,
    ResponseSchemaIntent,
    ResponseTextIntent,
    auwgent,
)


class Tools(AuwgentTools):
    def db_query_users(self, filter: str) -> str:
        return "Ama, Kofi"

    async def detect_low_stock(self) -> str:
        return "rice"


agent = auwgent({
    "apiKeys": {"geminiApiKey": "YOUR_API_KEY", "myGroqApiApiKey": "YOUR_GROQ_KEY"},
    "tools": Tools(),
})


class HandleIntent(AuwgentBaseIntentHandler):
    async def helper_call(self, intent: HelperCallIntent, agent_name: str) -> None:
        print(f"helper invoked: {agent_name}")

    async def helper_result(self, intent: HelperResultIntent, agent_name: str) -> None:
        print(f"helper finished: {agent_name}", intent)

    async def response_text(self, intent: ResponseTextIntent, agent_name: str) -> None:
        print(f"{agent_name} says:", intent.get("text"))

    async def response_schema(self, intent: ResponseSchemaIntent, agent_name: str) -> None:
        print(f"{agent_name} returned structured output:", intent)

agent.on_intent(HandleIntent)


async def main() -> None:
    await agent.run("Which products are low on stock?")

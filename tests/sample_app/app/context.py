"""Prompts and Context, "Injecting context at runtime" (Python tab).

The manual's snippet uses AuwgentBaseIntentHandler without importing it; it is imported here.
"""

from generated.main_types import AuwgentBaseIntentHandler, ErrorIntent, ResponseTextIntent, auwgent

agent = auwgent({
    "apiKeys": {
        "geminiApiKey": "YOUR_API_KEY"
    },
    "context": {
        "name": "Auwgent",
        "is_vip": True
    }
})

class HandleIntent(AuwgentBaseIntentHandler):
    async def response_text(self, intent: ResponseTextIntent, agent_name: str) -> None:
        print(intent.get('text'))

    async def error(self, intent: ErrorIntent, agent_name: str) -> None:
        print("Error",intent)

agent.on_intent(HandleIntent)


async def main() -> None:
    await agent.run("hello")

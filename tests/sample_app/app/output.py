"""Input and Output, "How output affects the runtime intent" (Python tab)."""

from generated.extraction_types import (
    AuwgentBaseIntentHandler,
    ErrorIntent,
    ResponseSchemaIntent,
    auwgent,
)

agent = auwgent({"apiKeys": {"geminiApiKey": "YOUR_API_KEY"}})


class HandleIntent(AuwgentBaseIntentHandler):
    async def response_schema(self, intent: ResponseSchemaIntent, agent_name: str) -> None:
        print(intent)
        # Not in the manual: checking the type name narrows the response to that type.
        if intent["type"] == "Person":
            print(intent["response"]["name"], intent["response"]["age"])

    async def error(self, intent: ErrorIntent, agent_name: str) -> None:
        print("Error",intent)

agent.on_intent(HandleIntent)


async def main() -> None:
    await agent.run("My name is Kwame and I am 28 years old.")

"""Custom Intents, "How SDKs consume custom intents" (Python tab)."""

from generated.intents_types import (
    AuwgentBaseIntentHandler,
    DialogueIntent,
    PlanningIntent,
    auwgent,
)

agent = auwgent({"apiKeys": {"geminiApiKey": "YOUR_API_KEY"}})


class HandleIntent(AuwgentBaseIntentHandler):
    async def Planning(self, intent: PlanningIntent, agent_name: str) -> None:
        print("step:", intent.get("step"))
        print("confidence:", intent.get("confidence"))

    async def Dialogue(self, intent: DialogueIntent, agent_name: str) -> None:
        print("tone:", intent.get("tone"))
        print("summary:", intent.get("summary"))

agent.on_intent(HandleIntent)


async def main() -> None:
    await agent.run("Plan my week")

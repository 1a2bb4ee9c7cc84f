"""A deliberate mistake no type checker can see: a misspelt intent method. Registering the
handler warns with a suggestion (the runtime's check at ``on_intent``)."""

from generated.quickstart_types import AuwgentBaseIntentHandler, ResponseTextIntent, auwgent

agent = auwgent({"apiKeys": {"geminiApiKey": "YOUR_API_KEY"}})


class HandleIntent(AuwgentBaseIntentHandler):
    async def respose_text(self, intent: ResponseTextIntent, agent_name: str) -> None:
        print(intent.get("text"))


agent.on_intent(HandleIntent)

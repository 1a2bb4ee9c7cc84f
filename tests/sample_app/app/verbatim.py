# mypy: allow-untyped-defs, allow-incomplete-defs
"""The manual's Python tabs exactly as printed (no annotations added), for the weather and
workflow programs. mypy still checks these bodies (``check_untyped_defs`` stays on under
``--strict``); only the rule that every function must be annotated is relaxed, above."""

import json

from generated.weather_types import AuwgentBaseIntentHandler, AuwgentTools, auwgent
from generated.workflows_types import AuwgentTools as WorkflowTools
from generated.workflows_types import auwgent as workflows_auwgent


class Tools(AuwgentTools):
  async def get_weather(self, location):
      # your implementation here
      return json.dumps({"temperature": 28, "condition": "sunny"})


agent = auwgent({
    "apiKeys": {
        "geminiApiKey": "YOUR_API_KEY"
    },
    "tools":Tools
})


class HandleIntent(AuwgentBaseIntentHandler):
    async def response_text(self, intent, agent_name):
        print(intent.get('text'))

    async def error(self, intent, agent_name: str):
        print("Error",intent)

agent.on_intent(HandleIntent)


class WorkflowsTools(WorkflowTools):

  async def remove_user(self,id):
      # your implementation here
      return f"deleted user {id}"

  async def get_user(self,id):
      # your implementation here
      return f"user {id}"

workflows_agent = workflows_auwgent({
    "apiKeys": {
        "geminiApiKey": "YOUR_API_KEY"
    },
    "context": {
        "is_admin": True,
        "user_id": "user_1"
    },
    "tools":WorkflowsTools
})


async def main() -> None:
    await agent.run("hello")

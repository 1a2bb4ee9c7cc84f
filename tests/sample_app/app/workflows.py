"""Workflows, "The workflow execution lifecycle" and "Implementing workflow tools at runtime"
(Python tabs), with annotations for mypy --strict."""

from generated.workflows_types import (
  AuwgentBaseIntentHandler,
  AuwgentTools,
  WorkflowCallIntent,
  WorkflowResultIntent,
  auwgent,
)


class Tools(AuwgentTools):

  async def remove_user(self,id: str) -> str:
      # your implementation here
      return f"deleted user {id}"

  async def get_user(self,id: str) -> str:
      # your implementation here
      return f"user {id}"

agent = auwgent({
    "apiKeys": {
        "geminiApiKey": "YOUR_API_KEY"
    },
    "context": {
        "is_admin": True,
        "user_id": "user_1"
    },
    "tools":Tools
})


class HandleIntent(AuwgentBaseIntentHandler):
    async def workflow_call(self, intent: WorkflowCallIntent, agent_name: str) -> None:
        print("workflow triggered:", intent.get("type"))

    async def workflow_result(self, intent: WorkflowResultIntent, agent_name: str) -> None:
        print("workflow result:", intent)

agent.on_intent(HandleIntent)


async def main() -> None:
    agent.use_config("Strict")
    await agent.run("Delete user_2", config="default")

"""Tools, "Implementing tools at runtime" (Python tab), with annotations for mypy --strict."""

import json

from generated.weather_types import AuwgentTools, auwgent


class Tools(AuwgentTools):
  async def get_weather(self, location: str) -> str:
      # your implementation here
      return json.dumps({"temperature": 28, "condition": "sunny"})


agent = auwgent({
    "apiKeys": {
        "geminiApiKey": "YOUR_API_KEY"
    },
    "tools":Tools
})


async def main() -> None:
    await agent.run("What is the weather in Accra?")

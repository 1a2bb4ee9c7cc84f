"""Tools and workflows: the weather agent with its tools implemented in plain Python.

Run `auwgent generate` in this folder first (scripts/demo.sh does). With GEMINI_API_KEY set the
agent talks to Gemini; without it, it runs on the offline model, which calls each configured
tool once and then answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from generated.main_types import AuwgentConfig, AuwgentTools, auwgent


class Tools(AuwgentTools):
    async def get_location(self) -> str:
        return "Accra"

    async def get_weather(self, location: str) -> str:
        return json.dumps({"temperature": 28, "condition": "sunny"})

    async def get_forecast(self, location: str, days: float) -> str:
        return f"{location}: sunny for the next {days:g} days"

    def get_humidity(self, location: str) -> float:  # sync tools work too
        return 74

    async def fetch_weather(self, location: str) -> str:  # scoped to weather_here
        return f"{location}: 28°C and sunny"

    async def delete_from_db(self, id: float) -> str:  # scoped to delete_record
        return f"deleted {id:g}"


def show(name: str, value: Any, agent_name: str) -> None:
    """A plain function handler: every final intent as it arrives."""
    print(f"[{agent_name}] {name}: {json.dumps(value, ensure_ascii=False)}")


async def main() -> None:
    config: AuwgentConfig = {"tools": Tools, "context": {"is_admin": False}}
    if not (os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")):
        print("no GEMINI_API_KEY: running on the offline model")
        config["provider"] = "offline"
    agent = auwgent(config)
    agent.on_intent(show)
    text = " ".join(sys.argv[1:]) or "What's the weather like where I am?"
    print(f"> {text}")
    await agent.run(text)


if __name__ == "__main__":
    asyncio.run(main())

"""The Getting Started agent, wired as the manual's Python tabs show.

Run `auwgent generate` in this folder first (scripts/demo.sh does). With GEMINI_API_KEY set the
agent talks to Gemini; without it, it runs on the deterministic offline model that ships with
Auwgent, so the demo works anywhere.
"""

from __future__ import annotations

import asyncio
import os
import sys

from generated.main_types import (
    AuwgentBaseIntentHandler,
    AuwgentBasePartialIntentHandler,
    AuwgentConfig,
    ErrorIntent,
    ResponseTextIntent,
    ResponseTextPartialIntent,
    auwgent,
)


class HandleIntent(AuwgentBaseIntentHandler):
    async def response_text(self, intent: ResponseTextIntent, agent_name: str) -> None:
        print(f"\n[{agent_name}] response_text: {intent.get('text')}")

    async def error(self, intent: ErrorIntent, agent_name: str) -> None:
        print(f"\n[{agent_name}] error: {intent.get('message')}")


class HandlePartialIntent(AuwgentBasePartialIntentHandler):
    async def response_text(self, intent: ResponseTextPartialIntent, agent_name: str) -> None:
        print(intent.get("delta", ""), end="", flush=True)


async def main() -> None:
    config: AuwgentConfig = {}
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        print("using Gemini (GEMINI_API_KEY is set)")
    else:
        print("no GEMINI_API_KEY: running on the offline model")
        config["provider"] = "offline"

    agent = auwgent(config)
    agent.on_intent(HandleIntent)
    agent.on_intent_partial(HandlePartialIntent)

    text = " ".join(sys.argv[1:]) or "hello"
    print(f"> {text}")
    session = await agent.run(text)
    print(f"session: {len(session['turns'])} turn(s), stack {session['stack']}")


if __name__ == "__main__":
    asyncio.run(main())

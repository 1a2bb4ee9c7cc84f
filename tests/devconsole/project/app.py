"""The application side of the dev console's test project: the two tools, and the configs the
tests start the servers with."""

import os
from typing import Any


class DeskTools:
    async def lookup_order(self, order: str) -> str:
        return f"order {order}: shipped"

    async def refund_order(self, order: str, amount: float) -> str:
        return f"refunded {amount} on {order}"


def config(agent_name: str) -> dict[str, Any]:
    """The tools only: `auwgent dev` runs the agent on the offline model (no keys)."""
    return {"tools": DeskTools}


def deferring(agent_name: str) -> dict[str, Any]:
    """For plain `auwgent serve`, as `auwgent dev` runs it: gated calls wait for a decision."""
    return {"tools": DeskTools, "approvals": "defer"}


def live(agent_name: str) -> dict[str, Any]:
    """The project's own models, reached at a fake OpenAI server (FAKE_OPENAI_URL)."""
    return {
        "tools": DeskTools,
        "apiKeys": {"openaiApiKey": "sk-dev-console-test-secret"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
    }


def broken(agent_name: str) -> dict[str, Any]:
    """An application whose config fails (the console shows why)."""
    raise RuntimeError("the orders database is down")

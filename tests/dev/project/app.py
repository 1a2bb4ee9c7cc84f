"""The application side of the dev console's test project: the two tools."""

from typing import Any


class DeskTools:
    async def lookup_order(self, order: str) -> str:
        return f"order {order}: shipped"

    async def refund_order(self, order: str, amount: float) -> str:
        return f"refunded {amount} on {order}"


def config(agent_name: str) -> dict[str, Any]:
    return {"tools": DeskTools}

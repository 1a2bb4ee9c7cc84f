"""The Python side of test/tracing.test.mjs: one conversation through the Python runtime
against a fake provider server, traced, printing the normalised span tree.

Usage: ``python tracing_py.py CASE.json`` where the case is ``{"ir", "base_url", "inputs",
"tools": {name: return value}, "context"}``. Prints one JSON line: ``{"spans", "statuses"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from auwgent.runtime.agent import agent_from_ir
from auwgent.testing.trace_tree import TraceRecorder


def _tool(value: Any) -> Any:
    async def impl(**_: Any) -> Any:
        return value

    return impl


async def main(case: dict[str, Any]) -> dict[str, Any]:
    recorder = TraceRecorder()
    config = {
        "apiKeys": {"openaiApiKey": "k"},
        "baseUrls": {"openai": case["base_url"]},
        "context": case.get("context", {}),
        "tools": {name: _tool(value) for name, value in case.get("tools", {}).items()},
        "tracerProvider": recorder.provider,
        "retry": {"attempts": 1},
    }
    agent = agent_from_ir(case["ir"], config)
    agent.on_intent(lambda name, value, who: None)  # heard: nothing goes to the log
    session = None
    statuses = []
    for text in case["inputs"]:
        session = await agent.run(text, session=session)
        statuses.append(session["turns"][-1]["status"])
    return {"spans": recorder.tree(), "statuses": statuses}


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        given = json.load(handle)
    print(json.dumps(asyncio.run(main(given))))

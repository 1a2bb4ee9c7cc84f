"""Run an agent through a cassette in the Python runtime, for ts/test/cassette.test.mjs.

Usage: ``python cassette_py.py SPEC.json``; the spec is ``{"ir", "cassette", "mode", "inputs",
"config", "partials"}`` (``config``: runtime config keys such as ``apiKeys`` and ``baseUrls``;
``partials``: read partial intents, so that the answers are streamed). Prints one JSON line:
the intents, the last session's turn outputs and the cassette's misses.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from auwgent.runtime.agent import agent_from_ir
from auwgent.testing import Cassette


async def main(spec: dict[str, Any]) -> dict[str, Any]:
    cassette = Cassette(spec["cassette"], spec["mode"])
    tools = {name: _tool(result) for name, result in spec.get("tools", {}).items()}
    agent = agent_from_ir(spec["ir"], {**spec["config"], "httpClient": cassette, "tools": tools})
    intents: list[Any] = []
    agent.on_intent(lambda name, value, who: intents.append([name, value]))
    if spec.get("partials"):
        agent.on_intent_partial(lambda name, value, who: None)
    session = None
    for text in spec["inputs"]:
        session = await agent.run(text, session=session)
    await cassette.aclose()
    assert session is not None
    outputs = [turn.get("output") for turn in session["turns"]]
    return {"intents": intents, "outputs": outputs, "misses": [str(m) for m in cassette.misses]}


def _tool(result: Any) -> Any:
    async def impl(**_: Any) -> Any:
        return result

    return impl


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        print(json.dumps(asyncio.run(main(json.load(handle)))), flush=True)

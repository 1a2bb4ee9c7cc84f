"""The Python runtime's side of ts/test/stores.test.mjs.

``python stores_py.py servers``: start a real redis-server and PostgreSQL (tests/servers.py),
print their URLs as one JSON line, serve until stdin closes.

``python stores_py.py SPEC.json``: one step on a session store (``open_store(url)``), printed
as one JSON line: ``{"do": "run", "ir", "url", "key", "inputs"}`` runs the agent on the offline
model through ``SessionStoreMiddleware`` (prints the final session, or the run's error
intents); ``{"do": "load", "url", "key"}``; ``{"do": "save", "url", "key", "session"}``
(prints the new revision, or the error's class and message).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from auwgent.errors import AuwgentError
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.stores import SessionStoreMiddleware, open_store


async def step(spec: dict[str, Any]) -> Any:
    store = open_store(spec["url"])
    try:
        if spec["do"] == "load":
            return await store.load(spec["key"])
        if spec["do"] == "save":
            session = spec["session"]
            try:
                await store.save(spec["key"], session)
            except AuwgentError as error:
                return {"error": type(error).__name__, "message": str(error)}
            return {"revision": session["revision"]}
        config = {"provider": "offline", "middleware": [SessionStoreMiddleware(store)]}
        agent = agent_from_ir(spec["ir"], config)
        errors: list[str] = []
        agent.on_intent(lambda n, v, w: errors.append(v["message"]) if n == "error" else None)
        session = None
        for text in spec["inputs"]:
            session = await agent.run(text, conversation_id=spec["key"])
        return {"session": session, "errors": errors}
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()


def servers() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from servers import postgres_server, redis_server

    with contextlib.ExitStack() as stack:
        folder = Path(sys.argv[2])
        redis = stack.enter_context(redis_server(folder))
        postgres = stack.enter_context(postgres_server())
        print(json.dumps({"redis": redis, "postgres": postgres}), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    if sys.argv[1] == "servers":
        servers()
    else:
        with open(sys.argv[1], encoding="utf-8") as handle:
            print(json.dumps(asyncio.run(step(json.load(handle)))), flush=True)

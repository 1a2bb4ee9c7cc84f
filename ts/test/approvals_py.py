"""The Python runtime's side of ts/test/approvals.test.mjs.

``python approvals_py.py SPEC.json`` runs one step of a gated conversation on a session store
(``open_store(url)``, through ``SessionStoreMiddleware``) with the scripted model, and prints
one JSON line ``{"session", "errors", "raised"}``:

- ``{"do": "pause", "ir", "url", "key", "replies", "input"}``: a run with config
  ``"approvals": "defer"``, which pauses at the first gated call;
- ``{"do": "resume", "ir", "url", "key", "replies", "count", "decision"}``: ``agent.resume``
  of the stored conversation, deciding every pending request with ``decision``.

Every tool appends ``py <name> <args>`` to the file ``count`` (when given) and returns
``"sent"``: the test counts how often a call really ran, and where. ``{"do": "load", "url",
"key"}`` prints the stored session.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from auwgent.errors import AuwgentError
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.providers.scripted import ScriptedModel
from auwgent.runtime.stores import SessionStoreMiddleware, open_store


def _tools(ir: dict[str, Any], count: str | None) -> dict[str, Any]:
    def make(name: str) -> Any:
        async def impl(**args: Any) -> str:
            if count:
                with open(count, "a", encoding="utf-8") as out:
                    out.write(f"py {name} {json.dumps(args, sort_keys=True)}\n")
            return "sent"

        return impl

    return {t["name"]: make(t["name"]) for t in ir["agents"][ir["root"]]["tools"]}


async def step(spec: dict[str, Any]) -> Any:
    store = open_store(spec["url"])
    try:
        if spec["do"] == "load":
            return await store.load(spec["key"])
        config: dict[str, Any] = {
            "provider": ScriptedModel(list(spec.get("replies", []))),
            "tools": _tools(spec["ir"], spec.get("count")),
            "middleware": [SessionStoreMiddleware(store)],
        }
        if spec["do"] == "pause":
            config["approvals"] = "defer"
        agent = agent_from_ir(spec["ir"], config)
        errors: list[str] = []
        agent.on_intent(lambda n, v, w: errors.append(v["message"]) if n == "error" else None)
        session, raised = None, None
        try:
            if spec["do"] == "pause":
                session = await agent.run(spec["input"], conversation_id=spec["key"])
            else:
                stored = await store.load(spec["key"]) or {}
                pending = stored.get("pending_approvals") or []
                decisions = {p["id"]: spec["decision"] for p in pending}
                session = await agent.resume(None, decisions, conversation_id=spec["key"])
        except AuwgentError as error:
            raised = {"error": type(error).__name__, "message": str(error)}
        return {"session": session, "errors": errors, "raised": raised}
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        print(json.dumps(asyncio.run(step(json.load(handle)))), flush=True)

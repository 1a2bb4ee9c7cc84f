"""The Python runtime's side of ts/test/memory.test.mjs: one step on a memory file, printed as
one JSON line.

``{"do": "learn", "ir", "path", "inputs", "ingest", "scope"}`` runs the agent on a scripted
model with memory in ``path`` and a custom ingester returning ``ingest[i]`` for the i-th turn,
waits for ingestion, and prints the system prompts the model was sent. ``{"do": "recall",
"path", "query", "limit", "scope", "embed"}`` prints the Memory section the store gives for
``query`` (``embed``: with the scripted model's hashed embeddings). ``{"do": "add", "path",
"facts", "scope", "embed"}`` prints how many of ``facts`` were new.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from typing import Any

from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.memory import SQLiteMemoryStore, render_memory
from auwgent.runtime.providers.scripted import ScriptedModel, hashed_embedding


async def _embed(texts: list[str]) -> list[list[float]]:
    return [hashed_embedding(t) for t in texts]


def _store(spec: Mapping[str, Any]) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(spec["path"], embedder=_embed if spec.get("embed") else None)


async def learn(spec: Mapping[str, Any]) -> Any:
    answers = [ScriptedModel.text("Done.") for _ in spec["inputs"]]
    model = ScriptedModel(answers)
    given = list(spec["ingest"])
    config = {
        "provider": model,
        "memory": {"store": SQLiteMemoryStore(spec["path"]), "ingester": lambda _t: given.pop(0)},
    }
    agent = agent_from_ir(spec["ir"], config)
    if spec.get("scope"):
        agent.use_memory_scope(spec["scope"])
    for text in spec["inputs"]:
        await agent.run(text)
        await agent.drain()
    return {"systems": [r.system for r in model.requests]}


async def step(spec: Mapping[str, Any]) -> Any:
    if spec["do"] == "learn":
        return await learn(spec)
    store = _store(spec)
    scope = spec.get("scope") or ""
    if spec["do"] == "add":
        return {"added": await store.add(spec["facts"], scope=scope, source="python")}
    facts = await store.search(spec["query"], spec["limit"], scope=scope)
    return {"section": render_memory(facts, 1500)}


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        print(json.dumps(asyncio.run(step(json.load(file)))))

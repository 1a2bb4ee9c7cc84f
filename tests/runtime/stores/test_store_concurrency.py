"""Concurrent runs of one conversation: none loses a turn (issue: 20 runs left 1 turn stored)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.ir import dumps_ir
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.stores import (
    JSONFileSessionStore,
    MemorySessionStore,
    SessionStore,
    SessionStoreMiddleware,
    SQLiteSessionStore,
)
from auwgent.testing import OfflineModel

pytestmark = pytest.mark.load

CHAT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Be brief."
    }
}
"""

STORES = {
    "sqlite": lambda tmp: SQLiteSessionStore(tmp / "s.db"),
    "json": lambda tmp: JSONFileSessionStore(tmp / "s"),
    "memory": lambda tmp: MemorySessionStore(),
}


def create_agent_with(middleware: list[Any]) -> Agent:
    result = compile_sources({"main.agent": CHAT})
    text = dumps_ir(result.documents["main.agent"])
    config = {"provider": OfflineModel(), "middleware": middleware}
    return create_agent(
        text, config, ir_hash=json.loads(text)["hash"], compiler_version=__version__, ir_version=1
    )


def _agent(store: SessionStore) -> Agent:
    return create_agent_with([SessionStoreMiddleware(store)])


@pytest.mark.parametrize("kind", sorted(STORES))
async def test_twenty_concurrent_runs_on_one_conversation_keep_every_turn(
    kind: str, tmp_path: Path
) -> None:
    store = STORES[kind](tmp_path)
    agent = _agent(store)
    sessions = await asyncio.gather(
        *(agent.run(f"message {i}", conversation_id="c1") for i in range(20))
    )
    assert all(s["turns"][-1]["status"] == "complete" for s in sessions)
    stored = await store.load("c1")
    assert stored is not None and stored["revision"] == 20
    assert sorted(t["input"]["text"] for t in stored["turns"]) == sorted(
        f"message {i}" for i in range(20)
    )


@pytest.mark.parametrize("kind", ["sqlite", "json"])
async def test_two_workers_on_one_conversation_the_second_save_is_a_conflict(
    kind: str, tmp_path: Path
) -> None:
    # Two agents with their own middleware share one store file, as two processes would; the
    # slow one holds its save until the fast one has saved.
    await _agent(STORES[kind](tmp_path)).run("hello", conversation_id="c1")
    gate = asyncio.Event()

    class Slow:
        async def onRunComplete(self, session: Any, ctx: Any) -> None:
            await gate.wait()

    slow = create_agent_with([Slow(), SessionStoreMiddleware(STORES[kind](tmp_path))])
    errors: list[str] = []
    slow.on_intent(
        lambda name, value, agent: errors.append(value["message"]) if name == "error" else None
    )
    held = asyncio.ensure_future(slow.run("from the slow worker", conversation_id="c1"))
    await asyncio.sleep(0.2)
    await _agent(STORES[kind](tmp_path)).run("from the fast worker", conversation_id="c1")
    gate.set()
    lost = await held
    assert len(errors) == 1 and "changed by another run or process" in errors[0], errors
    # The session the slow worker gets back says its turn was not saved, never "complete".
    assert lost["turns"][-1]["status"] == "conflict"
    assert "changed by another run or process" in lost["turns"][-1]["error"]
    stored = await STORES[kind](tmp_path).load("c1")
    assert stored is not None
    assert [t["input"]["text"] for t in stored["turns"]] == ["hello", "from the fast worker"]

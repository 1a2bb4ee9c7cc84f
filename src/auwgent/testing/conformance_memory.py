"""The ``memory`` key of an engine scenario (``engine/memory/...`` vectors).

A scenario with ``"memory": {...}`` runs with memory on, over a real SQLite file in a temporary
directory. Its keys (all optional):

- ``config``: more ``memory`` config keys (``budget``, ``limit``, ``maxPending``);
- ``seed``: facts stored before the runs, each ``text`` or ``[text, source]`` (``[text, source,
  scope]`` for a scope);
- ``embed``: the store embeds with :func:`hashed_embedding` (semantic recall, de-duplication);
- ``ingest``: a custom ingester returning ``ingest[i]`` for the i-th turn (absent: the default
  ingester, which asks the scripted model); ``ingest_raises``: it raises ``ToolFailure``;
- ``store``: ``"search_fails"`` / ``"add_fails"`` (that method raises ``ToolFailure("store
  down")``) or ``"unscoped"`` (a store taking no ``scope=``);
- ``scope``: ``use_memory_scope(scope)`` before the runs; ``conversation``: the runs'
  conversation id.

After each run the runner waits for ingestion (``drain()``). The result gains ``"memory"``:
every stored fact as ``[scope, text, source]`` in the order learned, and the messages of the
errors middleware ``onError`` was given; turn ids in sources read ``turn <id>``. A memory config
that is refused gives ``{"raised": ...}`` alone.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from auwgent.errors import AuwgentError
from auwgent.runtime.memory import SQLiteMemoryStore
from auwgent.runtime.providers.scripted import hashed_embedding

__all__ = ["MemoryScenario"]

_SOURCE_TURN = re.compile(r"turn [0-9a-f]{32}")


class ToolFailure(Exception):
    """What a failing scenario store or ingester raises (the TypeScript runner's is so named)."""


async def _embed(texts: list[str]) -> list[list[float]]:
    return [hashed_embedding(t) for t in texts]


class FailingStore:
    """A SQLite store one of whose methods fails."""

    def __init__(self, inner: SQLiteMemoryStore, fails: str) -> None:
        self.inner = inner
        self.fails = fails

    async def search(self, query: str, limit: int, *, scope: str = "") -> Any:
        if self.fails == "search":
            raise ToolFailure("store down")
        return await self.inner.search(query, limit, scope=scope)

    async def add(self, items: Sequence[str], *, scope: str = "", source: str = "") -> int:
        if self.fails == "add":
            raise ToolFailure("store down")
        return await self.inner.add(items, scope=scope, source=source)


class UnscopedStore:
    """A store that cannot keep scopes apart (it takes no ``scope=``)."""

    def __init__(self, inner: SQLiteMemoryStore) -> None:
        self.inner = inner

    async def search(self, query: str, limit: int) -> Any:
        return await self.inner.search(query, limit)

    async def add(self, items: Sequence[str]) -> int:
        return await self.inner.add(items)


class MemoryScenario:
    """One scenario's memory: its store, ingester and the errors it reported."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        self.dir = Path(tempfile.mkdtemp(prefix="auwgent-memory-"))
        self.path = self.dir / "memory.db"
        self.sqlite = SQLiteMemoryStore(self.path, embedder=_embed if spec.get("embed") else None)
        self.errors: list[str] = []
        self.turn = 0

    # -- the hooks of the engine runner (each passes through when the scenario has no memory)

    @staticmethod
    async def join(
        sc: Mapping[str, Any], config: dict[str, Any], middleware: list[Any]
    ) -> MemoryScenario | None:
        """The scenario's memory, its config key and ``onError`` middleware added, seeded."""
        if "memory" not in sc:
            return None
        memory = MemoryScenario(sc["memory"])
        config["memory"] = memory.config()
        middleware.append(memory.middleware())
        await memory.seed()
        return memory

    @staticmethod
    def agent(
        memory: MemoryScenario | None, make: Callable[[], Any]
    ) -> tuple[Any, dict[str, Any] | None]:
        """``make()``; with memory, a refused config is the scenario's result."""
        if memory is None:
            return make(), None
        try:
            agent = make()
        except AuwgentError as exc:
            memory.output()
            return None, {"raised": {"error": type(exc).__name__, "message": str(exc)}}
        memory.prepare(agent)
        return agent, None

    @staticmethod
    async def run(memory: MemoryScenario | None, agent: Any, text: str, session: Any) -> Any:
        """One input; with memory, in the scenario's conversation and ingestion awaited."""
        if memory is None:
            return await agent.run(text, session=session)
        result = await agent.run(text, session=session, **memory.run_options())
        await agent.drain()
        return result

    @staticmethod
    def finish(memory: MemoryScenario | None, out: dict[str, Any]) -> dict[str, Any]:
        """The result, with the stored facts and reported errors when there is memory."""
        if memory is None:
            return out
        out["memory"] = memory.output()
        return dict(memory.normal(out))

    # -- the scenario's store and ingester

    def config(self) -> dict[str, Any]:
        """The runtime config's ``memory`` key."""
        kind = self.spec.get("store", "sqlite")
        store: Any = self.sqlite
        if kind in ("search_fails", "add_fails"):
            store = FailingStore(self.sqlite, kind.split("_")[0])
        elif kind == "unscoped":
            store = UnscopedStore(self.sqlite)
        out: dict[str, Any] = {"store": store, **self.spec.get("config", {})}
        if "ingest" in self.spec or "ingest_raises" in self.spec:
            out["ingester"] = self._ingester
        return out

    def middleware(self) -> dict[str, Any]:
        return {"name": "memory", "onError": lambda error, session, ctx: self._note(error)}

    def _note(self, error: BaseException) -> None:
        self.errors.append(f"{type(error).__name__}: {error}")

    def _ingester(self, turn: Mapping[str, Any]) -> Any:
        index = self.turn
        self.turn += 1
        if "ingest_raises" in self.spec:
            raise ToolFailure(self.spec["ingest_raises"])
        given = self.spec["ingest"]
        return json.loads(json.dumps(given[index])) if index < len(given) else []

    async def seed(self) -> None:
        for fact in self.spec.get("seed", ()):
            parts = [fact] if isinstance(fact, str) else list(fact)
            text, source, scope = (parts + ["", ""])[:3]
            await self.sqlite.add([text], scope=scope, source=source)

    def prepare(self, agent: Any) -> None:
        if "scope" in self.spec:
            agent.use_memory_scope(self.spec["scope"])

    def run_options(self) -> dict[str, Any]:
        conversation = self.spec.get("conversation")
        return {"conversation_id": conversation} if conversation else {}

    def output(self) -> dict[str, Any]:
        rows: list[Any] = []
        if self.path.exists():
            db = sqlite3.connect(self.path)
            try:
                rows = db.execute(
                    "SELECT scope, text, source FROM memory_facts ORDER BY id"
                ).fetchall()
            finally:
                db.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return {"facts": [list(r) for r in rows], "errors": self.errors}

    @staticmethod
    def normal(value: Any) -> Any:
        """``value`` with the turn ids of sources replaced (``turn <id>``)."""
        text = json.dumps(value, ensure_ascii=False)
        return json.loads(_SOURCE_TURN.sub("turn <id>", text))

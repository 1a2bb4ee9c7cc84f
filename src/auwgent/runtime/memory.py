"""Memory: facts remembered across runs, recalled into the prompt, learned in the background.

The runtime config's ``"memory"`` key turns it on::

    auwgent({..., "memory": {"store": SQLiteMemoryStore("memory.db"), "budget": 1500}})

Before each run the store is searched with the user's input; what it returns is rendered in a
"Memory" section of the system prompt, cut to ``budget`` tokens (:func:`estimate_tokens`, or the
config's ``"counter"``). The section is fixed for the whole run, and its facts are listed in the
order they were learned, so while the store holds fewer facts than the budget allows it stays
byte-identical from run to run until something new is learned (provider prompt caching).

After the run, ingestion runs as a background task (:class:`Ingestion`): it never delays
``run()`` and never fails the run. The default ingester asks the agent's own model for durable
facts about the user and the task; ``"ingester": fn`` replaces it (``fn(turn)``, sync or async,
returns the fact strings). Facts are de-duplicated by normalised text, and by embedding
similarity when the store has an embedder. ``await agent.drain()`` waits for pending ingestion.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import re
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict, runtime_checkable

from auwgent.errors import ConfigError, IngestionError

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_MEMORY_PATH",
    "EXTRACTION_PROMPT",
    "Ingestion",
    "MemoryConfig",
    "MemoryOptions",
    "MemoryStore",
    "SQLiteMemoryStore",
    "estimate_tokens",
    "normalise_fact",
    "parse_facts",
    "parse_memory_options",
    "render_memory",
]

log = logging.getLogger("auwgent")

DEFAULT_BUDGET = 1500
DEFAULT_MEMORY_PATH = "auwgent_memory.db"
#: Facts recalled per run before the budget cut.
DEFAULT_LIMIT = 50
#: Ingestions allowed to wait at once; past it a turn's ingestion is skipped (and reported).
DEFAULT_MAX_PENDING = 32
#: Cosine similarity at or above which two facts count as the same fact.
NEAR_DUPLICATE = 0.95

Embedder = Callable[[list[str]], Awaitable[list[list[float]]]]
Counter = Callable[[str], int]
Ingester = Callable[[Mapping[str, Any]], Any]

EXTRACTION_PROMPT = """\
You maintain the long-term memory of an assistant. Read the conversation turn below and write \
down the durable facts worth remembering in later conversations: who the user is, their \
preferences, goals, constraints and decisions, and lasting facts about the task. Skip \
greetings, one-off details and anything only true for this moment.

Answer with one fact per line, each starting with "- ", written as a short standalone \
sentence. If there is nothing worth remembering, answer exactly: NONE"""


@runtime_checkable
class MemoryStore(Protocol):
    """Where remembered facts live. Implement these two methods for your own database."""

    async def search(self, query: str, limit: int) -> list[str]:
        """Up to ``limit`` facts relevant to ``query``, in the order they were learned."""
        ...

    async def add(self, items: Sequence[str]) -> int:
        """Store the facts that are not already known; return how many were new."""
        ...


def estimate_tokens(text: str) -> int:
    """The documented token estimate: one token per four characters, rounded up."""
    return (len(text) + 3) // 4


_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = " .,;:!?-*\"'"


def normalise_fact(text: str) -> str:
    """The form two facts are compared in: lower case, single spaces, no edge punctuation."""
    return _SPACES.sub(" ", text).strip(_EDGE_PUNCTUATION).lower()


def _one_line(text: str) -> str:
    """A fact as one line: stored text can never add lines to the Memory section."""
    return _SPACES.sub(" ", text).strip()


def render_memory(facts: Sequence[str], budget: int, counter: Counter = estimate_tokens) -> str:
    """The Memory section: the facts that fit ``budget`` tokens, in order; '' when none fit."""
    header = "Memory (facts remembered from earlier conversations):"
    used = counter(header)
    lines = [header]
    for fact in facts:
        line = f"- {_one_line(fact)}"
        cost = counter(line)
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines) if len(lines) > 1 else ""


# -- the SQLite store --------------------------------------------------------------------------


class SQLiteMemoryStore:
    """Facts in one SQLite file: full-text search (FTS5), and semantic recall with an embedder.

    ``embedder`` is an async function from texts to vectors; the agent gives the store its
    config's ``embedding`` model when the store has none and one is declared. Without an
    embedder, recall is by words (FTS5, ranked by bm25) and duplicates by normalised text.
    """

    def __init__(
        self, path: str | Path = DEFAULT_MEMORY_PATH, *, embedder: Embedder | None = None
    ) -> None:
        self.path = str(path)
        self.embedder = embedder
        self._lock = threading.Lock()
        self._ready = False

    def __repr__(self) -> str:
        return f"SQLiteMemoryStore({self.path!r})"

    def use_embedder(self, embedder: Embedder) -> None:
        """Give the store an embedder unless it already has one (the agent calls this)."""
        if self.embedder is None:
            self.embedder = embedder

    async def search(self, query: str, limit: int) -> list[str]:
        vector = await self._embed_one(query) if self.embedder and query.strip() else None
        return await asyncio.to_thread(self._search, query, limit, vector)

    async def add(self, items: Sequence[str]) -> int:
        facts = [_one_line(t) for t in items if isinstance(t, str) and normalise_fact(t)]
        if not facts:
            return 0
        vectors: list[list[float]] | None = None
        if self.embedder is not None:
            vectors = await self.embedder(facts)
        return await asyncio.to_thread(self._add, facts, vectors)

    async def count(self) -> int:
        """How many facts are stored."""
        return await asyncio.to_thread(self._count)

    async def _embed_one(self, text: str) -> list[float]:
        assert self.embedder is not None
        return (await self.embedder([text]))[0]

    # -- in a worker thread ------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        if not self._ready:
            db.executescript(
                """
                CREATE TABLE IF NOT EXISTS facts (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    text TEXT NOT NULL,
                    norm TEXT NOT NULL UNIQUE,
                    vector TEXT
                );
                CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts USING fts5(
                    text, content='facts', content_rowid='id'
                );
                CREATE TRIGGER IF NOT EXISTS facts_ai AFTER INSERT ON facts BEGIN
                    INSERT INTO facts_fts(rowid, text) VALUES (new.id, new.text);
                END;
                """
            )
            self._ready = True
        return db

    def _count(self) -> int:
        with self._lock:
            db = self._connect()
            try:
                return int(db.execute("SELECT count(*) FROM facts").fetchone()[0])
            finally:
                db.close()

    def _add(self, facts: list[str], vectors: list[list[float]] | None) -> int:
        with self._lock:
            db = self._connect()
            try:
                known = (
                    [_vector(row[0]) for row in db.execute("SELECT vector FROM facts")]
                    if vectors
                    else []
                )
                added = 0
                with db:
                    for i, fact in enumerate(facts):
                        vector = vectors[i] if vectors else None
                        if vector is not None and any(
                            _cosine(vector, other) >= NEAR_DUPLICATE for other in known if other
                        ):
                            continue
                        cursor = db.execute(
                            "INSERT OR IGNORE INTO facts(text, norm, vector) VALUES (?, ?, ?)",
                            (fact, normalise_fact(fact), json.dumps(vector) if vector else None),
                        )
                        if cursor.rowcount:
                            added += 1
                            if vector is not None:
                                known.append(vector)
                return added
            finally:
                db.close()

    def _search(self, query: str, limit: int, vector: list[float] | None) -> list[str]:
        with self._lock:
            db = self._connect()
            try:
                total = int(db.execute("SELECT count(*) FROM facts").fetchone()[0])
                if total <= limit:  # everything fits: the same section whatever the input
                    rows = db.execute("SELECT text FROM facts ORDER BY id").fetchall()
                    return [r[0] for r in rows]
                chosen: list[int] = []
                if vector is not None:
                    scored = [
                        (_cosine(vector, _vector(v)), rid)
                        for rid, v in db.execute("SELECT id, vector FROM facts")
                        if v
                    ]
                    chosen = [rid for _, rid in sorted(scored, reverse=True)[:limit]]
                words = _fts_query(query)
                if words and len(chosen) < limit:
                    for (rid,) in db.execute(
                        "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? ORDER BY bm25(facts_fts)"
                        " LIMIT ?",
                        (words, limit),
                    ):
                        if rid not in chosen and len(chosen) < limit:
                            chosen.append(rid)
                if not chosen:
                    return []
                marks = ",".join("?" * len(chosen))
                rows = db.execute(
                    f"SELECT text FROM facts WHERE id IN ({marks}) ORDER BY id", chosen
                ).fetchall()
                return [r[0] for r in rows]
            finally:
                db.close()


_WORD = re.compile(r"\w+", re.UNICODE)


def _fts_query(text: str) -> str:
    """The input's words as an FTS5 OR query (each quoted, so no word is an operator)."""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(text) if len(w) > 1)
    return " OR ".join(f'"{w}"' for w in list(words)[:64])


def _vector(text: str | None) -> list[float]:
    return [float(x) for x in json.loads(text)] if text else []


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b) or not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


# -- the config key ----------------------------------------------------------------------------


class MemoryConfig(TypedDict, total=False):
    """The ``"memory"`` key of the runtime config (every key optional)."""

    store: MemoryStore | str | Path  # default: SQLiteMemoryStore("auwgent_memory.db")
    budget: int  # tokens of the Memory section (default 1500)
    ingester: Ingester  # fn(turn) -> list[str], sync or async; default: ask the agent's model
    counter: Counter  # fn(text) -> tokens; default: estimate_tokens
    limit: int  # facts recalled per run before the budget cut (default 50)
    maxPending: int  # ingestions allowed to wait at once (default 32)


_MEMORY_KEYS = tuple(MemoryConfig.__annotations__)


@dataclass(frozen=True, slots=True)
class MemoryOptions:
    """The checked ``"memory"`` config."""

    store: Any
    budget: int = DEFAULT_BUDGET
    ingester: Ingester | None = None
    counter: Counter = estimate_tokens
    limit: int = DEFAULT_LIMIT
    max_pending: int = DEFAULT_MAX_PENDING


def parse_memory_options(value: Any) -> MemoryOptions | None:
    """Check ``config["memory"]``; ``None`` when memory is off."""
    if value is None or value is False:
        return None
    if value is True:
        value = {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"memory: expected an object, got {type(value).__name__}")
    for key in value:
        if key not in _MEMORY_KEYS:
            raise ConfigError(f"memory.{key}: unknown key (valid keys: {', '.join(_MEMORY_KEYS)})")
    store = value.get("store")
    if store is None:
        store = SQLiteMemoryStore()
    elif isinstance(store, (str, Path)):
        store = SQLiteMemoryStore(store)
    elif not (callable(getattr(store, "search", None)) and callable(getattr(store, "add", None))):
        raise ConfigError(
            "memory.store: expected a MemoryStore (async search(query, limit) and add(items)) "
            f"or a SQLite file path, got {type(store).__name__}"
        )
    for key in ("ingester", "counter"):
        if value.get(key) is not None and not callable(value[key]):
            raise ConfigError(f"memory.{key}: expected a function, got {type(value[key]).__name__}")
    return MemoryOptions(
        store=store,
        budget=_whole(value, "budget", DEFAULT_BUDGET),
        ingester=value.get("ingester"),
        counter=value.get("counter") or estimate_tokens,
        limit=_whole(value, "limit", DEFAULT_LIMIT),
        max_pending=_whole(value, "maxPending", DEFAULT_MAX_PENDING),
    )


def _whole(value: Mapping[str, Any], key: str, default: int) -> int:
    given = value.get(key, default)
    if isinstance(given, bool) or not isinstance(given, int) or given < 1:
        raise ConfigError(f"memory.{key}: expected a whole number of at least 1, got {given!r}")
    return int(given)


# -- background ingestion ----------------------------------------------------------------------

Reporter = Callable[[IngestionError], Awaitable[None]]


class Ingestion:
    """The agent's background ingestion tasks: bounded, awaited by ``drain()``, never raising."""

    def __init__(self, options: MemoryOptions) -> None:
        self.options = options
        self.pending: set[asyncio.Task[None]] = set()

    def start(
        self,
        turn: Mapping[str, Any],
        extract: Callable[[Mapping[str, Any]], Awaitable[list[str]]],
        report: Reporter,
    ) -> None:
        """Schedule the ingestion of ``turn``; returns at once."""
        if len(self.pending) >= self.options.max_pending:
            error = IngestionError(
                f"memory ingestion skipped for turn {turn.get('id')}: "
                f"{len(self.pending)} ingestions are still pending (memory.maxPending)"
            )
            task = asyncio.ensure_future(self._report(error, report))
        else:
            task = asyncio.ensure_future(self._ingest(turn, extract, report))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def drain(self) -> None:
        """Wait until every pending ingestion has finished."""
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)

    async def _ingest(
        self,
        turn: Mapping[str, Any],
        extract: Callable[[Mapping[str, Any]], Awaitable[list[str]]],
        report: Reporter,
    ) -> None:
        try:
            ingester = self.options.ingester
            if ingester is None:
                facts: Any = await extract(turn)
            else:
                facts = ingester(turn)
                if inspect.isawaitable(facts):
                    facts = await facts
            if not isinstance(facts, (list, tuple)) or not all(isinstance(f, str) for f in facts):
                raise IngestionError(
                    f"the memory ingester must return a list of strings, got {type(facts).__name__}"
                )
            if facts:
                await self.options.store.add(list(facts))
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, IngestionError)
                else IngestionError(
                    f"memory ingestion failed for turn {turn.get('id')}: "
                    f"{type(exc).__name__}: {exc}"
                )
            )
            if error is not exc:
                error.__cause__ = exc
            await self._report(error, report)

    @staticmethod
    async def _report(error: IngestionError, report: Reporter) -> None:
        log.error("%s", error, exc_info=error.__cause__ or error)
        try:
            await report(error)
        except Exception:  # an onError hook that fails must not escape a background task
            log.exception("onError failed while reporting an ingestion error")


def parse_facts(text: str) -> list[str]:
    """The facts in a model's answer to :data:`EXTRACTION_PROMPT` (``- `` lines; NONE → [])."""
    facts = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("- ", "* ")):
            fact = line[2:].strip()
            if fact and fact.upper() != "NONE":
                facts.append(fact)
    return facts

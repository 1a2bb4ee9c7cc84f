"""Memory for one run (:class:`RunMemory`), with two hooks: :meth:`RunMemory.recall` before
the run's first model request fills the Memory section, :meth:`RunMemory.ingest` after the
turn learns from it in the background. Also the middleware context's ``embed`` functions.

A store that fails is reported (``onError``, the ``auwgent`` logger) and the run goes on
without memory: recall only adds context, it grants nothing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from auwgent.errors import ConfigError, IngestionError, describe_error
from auwgent.runtime.core import AgentCore
from auwgent.runtime.memory import EXTRACTION_PROMPT, log, parse_facts, recall, render_memory
from auwgent.runtime.providers.base import Message, ModelRequest, TextDelta
from auwgent.runtime.services import Services
from auwgent.runtime.session import Turn

__all__ = ["RunMemory"]

#: Gives an error to the application's ``onError`` (with the run's session and context).
ErrorHook = Callable[[BaseException], Awaitable[Any]]


class RunMemory:
    """The memory of one run: its Memory section, recall, ingestion and embeddings."""

    def __init__(
        self,
        core: AgentCore,
        services: Services,
        config: str | Mapping[str, str] | None,
        scope: str | None,
        on_error: ErrorHook,
    ) -> None:
        self._core = core
        self._services = services
        self._config = config
        self._scope = scope
        self._on_error = on_error
        #: The Memory section of the system prompt, fixed for the whole run.
        self.section = ""

    async def recall(self, text: str) -> None:
        """Before the first model request: fill the Memory section from the store, searched
        with the user's input."""
        options = self._core.options.memory
        if options is None:
            return
        self._lend_embedder(options.store)
        try:
            facts = await recall(options.store, text, options.limit, self._scope)
            self.section = render_memory(facts, options.budget, options.counter)
        except Exception as exc:
            await self.report_error(exc, f"memory search failed: {describe_error(exc)}")

    def ingest(self, turn: Turn | None, conversation: str | None) -> None:
        """After the turn: learn from it in the background (memory on, the turn not failed)."""
        ingestion = self._services.ingestion
        if ingestion is None or turn is None or turn["status"] == "error":
            return
        source = f"turn {turn['id']}" + (f" of conversation {conversation}" if conversation else "")
        ingestion.start(turn, self._extract_facts, self._on_error, scope=self._scope, source=source)

    async def report_error(self, error: BaseException, message: str) -> None:
        """Log a memory failure and pass it to ``onError`` as an ``IngestionError``."""
        wrapped = error if isinstance(error, IngestionError) else IngestionError(message)
        if wrapped is not error:
            wrapped.__cause__ = error
            log.error("%s", message, exc_info=error)
        try:
            await self._on_error(wrapped)
        except Exception:
            log.exception("onError failed while reporting a memory error")

    async def embed_batch(
        self, agent_name: str, texts: Sequence[str | Mapping[str, Any]]
    ) -> list[list[float]]:
        """Embed several texts with ``agent_name``'s config's ``embedding`` model, in order."""
        plain = [_embed_text(t) for t in texts]
        agent = self._core.doc["agents"][agent_name]
        cfg_name = self._core.config_for(agent, self._config)
        model = agent["configs"][cfg_name].get("embedding")
        if not model:
            raise ConfigError(
                f"embed: the {cfg_name!r} config of {agent['name']} has no embedding model; "
                f'add one, e.g. `embedding: gemini("gemini-embedding-001")`'
            )
        options = model.get("options") or {}
        return await self._services.pool.provider(model).embed(plain, str(model["model"]), options)

    def _root_config(self) -> Mapping[str, Any]:
        agent = self._core.doc["agents"][self._core.root]
        return agent["configs"][self._core.config_for(agent, self._config)]

    def _lend_embedder(self, store: Any) -> None:
        """Give a store that can use one the root config's embedding model (when declared)."""
        use = getattr(store, "use_embedder", None)
        model = self._root_config().get("embedding")
        if use is None or not model:
            return
        pool = self._services.pool

        async def embed(texts: list[str]) -> list[list[float]]:
            return await pool.provider(model).embed(list(texts), str(model["model"]))

        use(embed)

    async def _extract_facts(self, turn: Mapping[str, Any]) -> list[str]:
        """The default ingester: the root agent's own model, asked with the extraction prompt."""
        cfg = self._root_config()
        request = ModelRequest(
            model=str(cfg["model"]["model"]),
            system=EXTRACTION_PROMPT,
            messages=(Message(role="user", content=_transcript(turn)),),
            options=cfg["model"].get("options") or {},
        )
        chunks = [
            event.text
            async for event in self._services.pool.provider(cfg["model"]).stream(request)
            if isinstance(event, TextDelta)
        ]
        return parse_facts("".join(chunks))


def _embed_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return str(value["text"])
    raise TypeError(f"embed: expected a string (or a turn input {{'text': ...}}), got {value!r}")


def _transcript(turn: Mapping[str, Any]) -> str:
    """One turn as the default ingester shows it to the model: the input and the answers."""
    lines = [f"User: {turn['input']['text']}"]
    for intent in turn.get("intents", ()):
        value = intent.get("value")
        if intent.get("name") == "response_text" and isinstance(value, Mapping):
            lines.append(f"Assistant: {value.get('text', '')}")
        elif intent.get("name") == "response_schema" and isinstance(value, Mapping):
            lines.append(f"Assistant (structured): {json.dumps(value.get('response'))}")
    return "\n".join(lines)

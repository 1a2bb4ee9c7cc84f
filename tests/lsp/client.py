"""A real LSP client (pygls's) driving ``auwgent lsp`` in a subprocess over stdio."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient

TIMEOUT = 60.0


class Client(LanguageClient):
    """Keeps the diagnostics the server publishes, by URI, and wakes waiters on each."""

    def __init__(self) -> None:
        super().__init__("auwgent-tests", "1")
        self.diagnostics: dict[str, list[t.Diagnostic]] = {}
        self.published = asyncio.Condition()
        self.messages: list[str] = []
        self.log: list[str] = []
        self.initialize_result: t.InitializeResult | None = None

        @self.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def _published(params: t.PublishDiagnosticsParams) -> None:
            async with self.published:
                self.diagnostics[params.uri] = list(params.diagnostics)
                self.published.notify_all()

        @self.feature(t.WINDOW_LOG_MESSAGE)
        def _log(params: t.LogMessageParams) -> None:
            self.log.append(params.message)

        @self.feature(t.WINDOW_SHOW_MESSAGE)
        def _message(params: t.ShowMessageParams) -> None:
            self.messages.append(params.message)

    async def wait_for(self, uri: str, predicate: Any = bool) -> list[t.Diagnostic]:
        """The diagnostics of ``uri`` once ``predicate`` holds for them."""

        async def ready() -> list[t.Diagnostic]:
            async with self.published:
                await self.published.wait_for(
                    lambda: uri in self.diagnostics and predicate(self.diagnostics[uri])
                )
                return self.diagnostics[uri]

        return await asyncio.wait_for(ready(), TIMEOUT)

    # -- documents --------------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        self.text_document_did_open(
            t.DidOpenTextDocumentParams(
                t.TextDocumentItem(
                    uri=uri,
                    language_id="auwgent",
                    version=1,
                    text=path.read_text(encoding="utf-8") if text is None else text,
                )
            )
        )
        return uri

    def change(self, uri: str, text: str, version: int = 2) -> None:
        self.text_document_did_change(
            t.DidChangeTextDocumentParams(
                t.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [t.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )


@asynccontextmanager
async def session(root: Path, **options: Any) -> AsyncIterator[Client]:
    """``auwgent lsp`` started as a subprocess in ``root``, initialized, shut down after."""
    client = Client()
    await client.start_io(sys.executable, "-m", "auwgent", "lsp", cwd=str(root))
    client.initialize_result = await asyncio.wait_for(
        client.initialize_async(
            t.InitializeParams(
                capabilities=t.ClientCapabilities(),
                root_uri=root.as_uri(),
                initialization_options={"debounceMs": 10, **options},
            )
        ),
        TIMEOUT,
    )
    client.initialized(t.InitializedParams())
    try:
        yield client
    finally:
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        client.exit(None)
        await asyncio.wait_for(client.stop(), TIMEOUT)


def position(text: str, needle: str, nth: int = 0, offset: int = 0) -> t.Position:
    """The LSP position of the ``nth`` occurrence of ``needle`` in ``text`` (plus ``offset``)."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    index += offset
    line = text.count("\n", 0, index)
    return t.Position(line=line, character=index - (text.rfind("\n", 0, index) + 1))

"""Answers of ``auwgent lsp`` right after an edit and for requests it refuses, through a real
LSP client over stdio: the annotations offered after ``@``, the outline of the edited text,
and LSP errors (not internal errors with a traceback) for renames that cannot be made."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from .client import Client, position, session

DATA = Path(__file__).resolve().parents[1] / "data" / "lsp" / "project"

MAIN = """import { Ticket, Fast } from "./types"

helper Writer {
    description: "writes"
    default config {
        model: Fast
        prompt: "Write."
    }
}

agent Main {
    default config {
        model: Fast
        prompt: "Help {{ctx.name}}."
    }
    context {
        name: string
    }
    output: Ticket
    tool lookup(id: string): Ticket @desc "Finds a ticket"
    workflow run(id: string): string {
        description: "Looks a ticket up"
        tool store(key: string): string
        return lookup(id).title
    }
    helpers {
        Writer
    }
}
"""

ALL = {"desc", "example", "repeatable", "approval", "untrusted", "sensitive", "mcp"}
AT_CASES = [
    # (the text replaced in MAIN with the cursor `|` after a `@`, the annotations offered)
    ('@desc "Finds a ticket"', '@desc "Finds a ticket" @|', ALL - {"desc"}),
    ("lookup(id: string)", "lookup(id: string @|)", {"desc"}),
    ("store(key: string): string", "store(key: string): string @|", ALL),
    (
        "        return lookup(id).title\n    }",
        "        return lookup(id).title\n    } @|",
        {"example", "approval"},
    ),
    ("        Writer\n", "        Writer @|\n", {"approval"}),
    ("        name: string\n", "        name: string @d|\n", {"desc"}),
    (
        '@desc "Finds a ticket"',
        '@desc "Finds a ticket" @example(id = "1")\n        @|',
        ALL - {"desc"},
    ),
    (
        '@desc "Finds a ticket"',
        '@desc "Finds a ticket" @mcp(Files) @approval @untrusted @r|',
        {"example", "repeatable", "sensitive"},
    ),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(DATA, root)
    (root / "src" / "main.agent").write_text(MAIN, encoding="utf-8")
    return root


async def _complete(client: Client, uri: str, text: str, version: int) -> set[str]:
    client.change(uri, text.replace("|", "", 1), version=version)
    found = await client.text_document_completion_async(
        t.CompletionParams(
            text_document=t.TextDocumentIdentifier(uri=uri), position=position(text, "|")
        )
    )
    assert isinstance(found, t.CompletionList)
    return {item.label for item in found.items}


async def test_after_at_the_annotations_that_apply_there(project: Path) -> None:
    async with session(project) as client:
        uri = client.open(project / "src" / "main.agent")
        assert await client.wait_for(uri, lambda d: d == []) == []
        for version, (replaced, typed, expected) in enumerate(AT_CASES, start=2):
            assert replaced in MAIN
            labels = await _complete(client, uri, MAIN.replace(replaced, typed, 1), version)
            assert labels == expected, (typed, sorted(labels))


async def test_the_outline_is_the_edited_text(project: Path) -> None:
    # A long debounce: the edit's check is still waiting when the outline is asked for.
    async with session(project, debounceMs=60_000) as client:
        uri = client.open(project / "src" / "main.agent")
        assert await client.wait_for(uri, lambda d: d == []) == []
        edited = MAIN.replace("tool lookup(", "tool find(").replace("lookup(id)", "find(id)")
        client.change(uri, edited)
        symbols = await client.text_document_document_symbol_async(
            t.DocumentSymbolParams(text_document=t.TextDocumentIdentifier(uri=uri))
        )
        assert symbols is not None
        main = next(s for s in symbols if isinstance(s, t.DocumentSymbol) and s.name == "Main")
        names = {c.name for c in main.children or []}
        assert "find" in names and "lookup" not in names, sorted(names)
        find = next(c for c in main.children or [] if c.name == "find")
        assert find.selection_range.start == position(edited, "find(")


async def _rename(client: Client, uri: str, at: t.Position, new_name: str) -> None:
    await client.text_document_rename_async(
        t.RenameParams(
            text_document=t.TextDocumentIdentifier(uri=uri), position=at, new_name=new_name
        )
    )


async def test_a_rename_to_an_invalid_name_is_an_invalid_params_error(project: Path) -> None:
    async with session(project) as client:
        uri = client.open(project / "src" / "main.agent")
        assert await client.wait_for(uri, lambda d: d == []) == []
        for new_name in ("1st", "two words", "", "return", "a-b"):
            with pytest.raises(JsonRpcInvalidParams) as raised:
                await _rename(client, uri, position(MAIN, "lookup"), new_name)
            error = raised.value
            assert error.code == -32602
            assert error.message.startswith(f"`{new_name}` is not a name: ")
            assert "Traceback" not in error.message and "\n" not in error.message


async def test_a_rename_that_cannot_be_right_is_a_request_failed_error(project: Path) -> None:
    shared = MAIN + '\nprompt Intro {\n    "Hi {{ctx.name}}"\n}\n'
    (project / "src" / "main.agent").write_text(shared, encoding="utf-8")
    async with session(project) as client:
        uri = client.open(project / "src" / "main.agent")
        await client.wait_for(uri)
        with pytest.raises(JsonRpcException) as raised:
            await _rename(client, uri, position(shared, "name: string"), "who")
        error = raised.value
        assert error.code == t.LSPErrorCodes.RequestFailed
        assert error.message.startswith("`ctx.name` is also used in a prompt (main.agent:")
        assert "Traceback" not in error.message

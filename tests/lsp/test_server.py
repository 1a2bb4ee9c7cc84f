"""``auwgent lsp`` driven by a real LSP client (pygls's) over stdio, as an editor drives it."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types as t

from auwgent.compiler.format import format_text
from auwgent.compiler.pipeline import compile_sources

from .client import Client, position, session

DATA = Path(__file__).resolve().parents[1] / "data" / "lsp" / "project"


# One server for the whole module (each test has a project of its own): starting one costs
# a couple of seconds.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    async with session(tmp_path_factory.mktemp("lsp")) as started:
        yield started


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(DATA, root)
    return root


def _text(root: Path, name: str) -> str:
    return (root / "src" / name).read_text(encoding="utf-8")


def _apply(text: str, edits: list[t.TextEdit]) -> str:
    """``text`` with LSP edits applied (ASCII text: columns are characters)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def offset(p: t.Position) -> int:
        return min(starts[p.line] + p.character, len(text)) if p.line < len(lines) else len(text)

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def test_diagnostics_at_the_right_range_then_cleared(project: Path, client: Client) -> None:
    main = project / "src" / "main.agent"
    good = _text(project, "main.agent")
    bad = good.replace("output: Ticket", "output: Tickt")
    uri = client.open(main, bad)
    diags = await client.wait_for(uri)
    assert [d.code for d in diags] == ["E2010"]
    found = diags[0]
    start = position(bad, "Tickt")
    assert found.range == t.Range(
        start=start, end=t.Position(line=start.line, character=start.character + 5)
    )
    assert found.severity == t.DiagnosticSeverity.Error
    assert found.message.startswith("unknown type `Tickt`")
    assert "help: did you mean `Ticket`?" in found.message
    assert found.source == "auwgent"

    client.change(uri, good)
    assert await client.wait_for(uri, lambda d: d == []) == []


async def test_an_edit_in_one_file_reports_in_the_file_that_imports_it(
    project: Path, client: Client
) -> None:
    main_uri = client.open(project / "src" / "main.agent")
    assert await client.wait_for(main_uri, lambda d: d == []) == []
    types = project / "src" / "types.agent"
    types_uri = client.open(types)
    # Unsaved: the export is gone from the buffer, not from the disk.
    client.change(types_uri, _text(project, "types.agent").replace("export type", "type"))
    diags = await client.wait_for(main_uri)
    assert [d.code for d in diags] == ["E1002"]
    assert diags[0].range.start == position(_text(project, "main.agent"), "Ticket")
    assert "add `export` before `type Ticket` in types.agent:2" in diags[0].message
    client.change(types_uri, _text(project, "types.agent"), version=3)
    assert await client.wait_for(main_uri, lambda d: d == []) == []


async def test_syntax_errors_have_the_cli_message_and_help(project: Path, client: Client) -> None:
    text = _text(project, "main.agent").replace("    tool lookup", "    toool lookup")
    uri = client.open(project / "src" / "main.agent", text)
    diags = await client.wait_for(uri)
    assert diags[0].code == "E0103"
    assert "help: did you mean `tool`?" in diags[0].message
    assert "note: while parsing `agent Main`" in diags[0].message


async def test_hover_definition_and_references_across_files(project: Path, client: Client) -> None:
    main = _text(project, "main.agent")
    uri = client.open(project / "src" / "main.agent")
    await client.wait_for(uri, lambda d: d == [])
    doc = t.TextDocumentIdentifier(uri=uri)

    hover = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=position(main, "Ticket", nth=1))
    )
    assert hover is not None and isinstance(hover.contents, t.MarkupContent)
    assert "export type Ticket {" in hover.contents.value
    assert "from `types.agent`" in hover.contents.value

    hover = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=position(main, "lookup(id)"))
    )
    assert hover is not None and isinstance(hover.contents, t.MarkupContent)
    assert "tool lookup(id: string): Ticket" in hover.contents.value
    assert "Finds a ticket" in hover.contents.value

    where = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc, position=position(main, "Ticket", nth=1))
    )
    assert isinstance(where, t.Location)
    assert where.uri == (project / "src" / "types.agent").as_uri()
    assert where.range.start == t.Position(line=1, character=12)

    refs = await client.text_document_references_async(
        t.ReferenceParams(
            text_document=doc,
            position=position(main, "Ticket", nth=2),
            context=t.ReferenceContext(include_declaration=True),
        )
    )
    assert refs is not None
    places = sorted((Path(r.uri).name, r.range.start.line) for r in refs)
    assert places == [
        ("main.agent", 0),
        ("main.agent", 12),
        ("main.agent", 14),
        ("types.agent", 1),
    ]

    ctx = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc, position=position(main, "ctx.name", offset=4))
    )
    assert isinstance(ctx, t.Location) and ctx.range.start == position(main, "name: string")


async def test_rename_across_files(project: Path, client: Client) -> None:
    main = _text(project, "main.agent")
    uri = client.open(project / "src" / "main.agent")
    await client.wait_for(uri, lambda d: d == [])
    doc = t.TextDocumentIdentifier(uri=uri)
    prepared = await client.text_document_prepare_rename_async(
        t.PrepareRenameParams(text_document=doc, position=position(main, "Ticket", nth=1))
    )
    assert isinstance(prepared, t.Range)
    edit = await client.text_document_rename_async(
        t.RenameParams(
            text_document=doc, position=position(main, "Ticket", nth=1), new_name="Issue"
        )
    )
    assert edit is not None and edit.changes is not None
    files = {Path(uri).name: edits for uri, edits in edit.changes.items()}
    assert sorted(files) == ["main.agent", "types.agent"]
    assert len(files["main.agent"]) == 3 and len(files["types.agent"]) == 1
    renamed = {name: _apply(_text(project, name), edits) for name, edits in files.items()}
    assert "Ticket" not in renamed["main.agent"] and "Ticket" not in renamed["types.agent"]
    assert compile_sources(renamed).ok

    with pytest.raises(Exception, match="not a name"):
        await client.text_document_rename_async(
            t.RenameParams(
                text_document=doc, position=position(main, "Ticket", nth=1), new_name="no way"
            )
        )


async def test_completion_lists(project: Path, client: Client) -> None:
    main = _text(project, "main.agent")
    uri = client.open(project / "src" / "main.agent")
    await client.wait_for(uri, lambda d: d == [])
    doc = t.TextDocumentIdentifier(uri=uri)

    async def labels(text: str, needle: str, offset: int = 0, version: int = 2) -> set[str]:
        client.change(uri, text, version)
        result = await client.text_document_completion_async(
            t.CompletionParams(text_document=doc, position=position(text, needle, offset=offset))
        )
        assert isinstance(result, t.CompletionList)
        return {item.label for item in result.items}

    ctx = main.replace("return found.title", "return ctx.")
    assert await labels(ctx, "ctx.\n", offset=4) == {"name"}
    member = main.replace("    output: Ticket\n", "    \n")
    got = await labels(member, "    \n", offset=4, version=3)
    assert {"tool", "workflow", "context", "helpers", "default config", "intent:"} <= got
    typed = main.replace("name: string", "name: s")
    got = await labels(typed, "name: s", offset=7, version=4)
    assert {"string", "number", "boolean", "Ticket"} <= got and "Fast" not in got
    flow = main.replace("        return found.title", "        ")
    got = await labels(flow, "        \n    }", offset=8, version=5)
    assert {"lookup", "run", "id", "found", "let", "return", "if", "ctx"} <= got
    model = main.replace("model: Fast", "model: F")
    got = await labels(model, "model: F", offset=8, version=6)
    assert {"Fast", "gemini", "openai", "custom"} <= got and "Ticket" not in got
    config = main.replace("        model: Fast\n", "        m\n")
    got = await labels(config, "        m\n", offset=9, version=7)
    assert {"model", "prompt", "maxToolLoops", "embedding"} <= got
    top = main + "\n"
    got = await labels(top, "\n", offset=len(top) - 1 - top.index("\n"), version=8)
    assert {"agent", "helper", "type", "model", "prompt", "import"} <= got


async def test_formatting_edits(project: Path, client: Client) -> None:
    messy = '// keep me\nagent   Main {\n  default config { model: gemini( "m" )\n' + (
        '  prompt:"hi"   }  // and me\n}\n'
    )
    path = project / "src" / "messy.agent"
    path.write_text(messy, encoding="utf-8")
    uri = client.open(path)
    edits = await client.text_document_formatting_async(
        t.DocumentFormattingParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            options=t.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    assert edits
    assert _apply(messy, edits) == format_text(messy)
    assert "// keep me" in format_text(messy) and "// and me" in format_text(messy)

    client.change(uri, "agent {")
    edits = await client.text_document_formatting_async(
        t.DocumentFormattingParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            options=t.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    assert not edits


async def test_document_symbols(project: Path, client: Client) -> None:
    uri = client.open(project / "src" / "main.agent")
    await client.wait_for(uri, lambda d: d == [])
    symbols = await client.text_document_document_symbol_async(
        t.DocumentSymbolParams(text_document=t.TextDocumentIdentifier(uri=uri))
    )
    assert symbols is not None
    (main,) = symbols
    assert isinstance(main, t.DocumentSymbol) and main.name == "Main"
    assert main.kind == t.SymbolKind.Class
    children = {c.name: c for c in main.children or []}
    assert {"name", "lookup", "run"} <= set(children)
    assert {c.name for c in children["run"].children or []} == {"id", "found"}


GROUP = """mcp Files { command: "python", args: ["server.py"] }

export tools FilesTools {
    read_text(path: string): string @desc "Read a file" @mcp(Files)
    list_dir(path: string): string[] @mcp(Files)
}
"""

USES_GROUP = """import { FilesTools } from "./files_tools"

agent Reader {
    default config {
        model: openai("gpt-4o")
        prompt: "Read."
    }
    tools {
        FilesTools
    }
    workflow show(path: string): string {
        description: "Show a file"
        return read_text(path)
    }
}
"""


async def test_a_tool_group_in_the_outline_hover_and_definition(
    project: Path, client: Client
) -> None:
    (project / "src" / "files_tools.agent").write_text(GROUP, encoding="utf-8")
    (project / "src" / "reader.agent").write_text(USES_GROUP, encoding="utf-8")
    group_uri = client.open(project / "src" / "files_tools.agent")
    await client.wait_for(group_uri, lambda d: d == [])
    symbols = await client.text_document_document_symbol_async(
        t.DocumentSymbolParams(text_document=t.TextDocumentIdentifier(uri=group_uri))
    )
    assert symbols is not None
    group = next(s for s in symbols if isinstance(s, t.DocumentSymbol) and s.detail == "tools")
    assert (group.name, group.kind) == ("FilesTools", t.SymbolKind.Module)
    assert [c.name for c in group.children or []] == ["read_text", "list_dir"]

    uri = client.open(project / "src" / "reader.agent")
    await client.wait_for(uri, lambda d: d == [])
    doc = t.TextDocumentIdentifier(uri=uri)
    hover = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=position(USES_GROUP, "FilesTools", nth=1))
    )
    assert hover is not None and isinstance(hover.contents, t.MarkupContent)
    assert "tools FilesTools" in hover.contents.value
    where = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc, position=position(USES_GROUP, "FilesTools", nth=1))
    )
    assert isinstance(where, t.Location) and where.uri == group_uri
    assert where.range.start == position(GROUP, "FilesTools")
    called = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc, position=position(USES_GROUP, "read_text(path)"))
    )
    assert isinstance(called, t.Location) and called.uri == group_uri
    assert called.range.start == position(GROUP, "read_text")


async def test_a_new_file_joins_its_project_when_saved(project: Path, client: Client) -> None:
    new = project / "src" / "extra.agent"
    text = 'import { Ticket } from "./types"\n\nexport type Box {\n    item: Ticket\n}\n'
    uri = client.open(new, text)  # not on disk yet: a project of its own
    diags = await client.wait_for(uri)
    assert [d.code for d in diags] == ["E1001"]
    new.write_text(text, encoding="utf-8")
    client.text_document_did_save(
        t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
    )
    assert await client.wait_for(uri, lambda d: d == []) == []


async def test_positions_count_utf16_units(project: Path, client: Client) -> None:
    main = _text(project, "main.agent").replace(
        'prompt: "Help {{ctx.name}}."', 'prompt: "😀 é {{ctx.nme}}"'
    )
    uri = client.open(project / "src" / "main.agent", main)
    diags = await client.wait_for(uri)
    line = main.split("\n")[5]
    start = len(line[: line.index("nme")].encode("utf-16-le")) // 2
    assert diags[0].range.start == t.Position(line=5, character=start)
    assert diags[0].range.end == t.Position(line=5, character=start + 3)
    hover = await client.text_document_hover_async(
        t.HoverParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            position=position(main, "Ticket", nth=1),
        )
    )
    assert hover is not None


async def test_rename_refuses_a_reserved_word(project: Path, client: Client) -> None:
    main = _text(project, "main.agent")
    uri = client.open(project / "src" / "main.agent")
    await client.wait_for(uri, lambda d: d == [])
    with pytest.raises(Exception, match="not a name"):
        await client.text_document_rename_async(
            t.RenameParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                position=position(main, "lookup"),
                new_name="return",
            )
        )


async def test_renaming_a_context_field(project: Path, client: Client) -> None:
    main = _text(project, "main.agent")
    uri = client.open(project / "src" / "main.agent")
    await client.wait_for(uri, lambda d: d == [])
    doc = t.TextDocumentIdentifier(uri=uri)
    edit = await client.text_document_rename_async(
        t.RenameParams(text_document=doc, position=position(main, "name: string"), new_name="who")
    )
    assert edit is not None and edit.changes is not None
    renamed = _apply(main, edit.changes[uri])
    assert "{{ctx.who}}" in renamed and "who: string" in renamed
    assert compile_sources({"main.agent": renamed, "types.agent": _text(project, "types.agent")}).ok

    # A top-level prompt reads the context of any agent using it: no rename is right.
    shared = main + '\nprompt Intro {\n    "Hi {{ctx.name}}"\n}\n'
    client.change(uri, shared)
    with pytest.raises(
        Exception, match=r"`ctx.name` is also used in a prompt \(main.agent:25:15\)"
    ):
        await client.text_document_rename_async(
            t.RenameParams(
                text_document=doc, position=position(shared, "name: string"), new_name="who"
            )
        )


async def test_files_changed_on_disk_are_read_again(project: Path, client: Client) -> None:
    main_uri = client.open(project / "src" / "main.agent")
    assert await client.wait_for(main_uri, lambda d: d == []) == []
    types = project / "src" / "types.agent"
    types.write_text(_text(project, "types.agent").replace("export model", "model"))
    client.workspace_did_change_watched_files(
        t.DidChangeWatchedFilesParams(
            changes=[t.FileEvent(uri=types.as_uri(), type=t.FileChangeType.Changed)]
        )
    )
    diags = await client.wait_for(main_uri)
    assert [d.code for d in diags] == ["E1002"]
    assert "`Fast` is declared in types.agent but not exported" in diags[0].message


async def test_the_server_advertises_its_features(client: Client) -> None:
    assert client.initialize_result is not None
    caps = client.initialize_result.capabilities
    assert client.initialize_result.server_info is not None
    assert client.initialize_result.server_info.name == "auwgent"
    assert caps.hover_provider and caps.definition_provider and caps.references_provider
    assert caps.document_symbol_provider and caps.document_formatting_provider
    assert caps.rename_provider  # with prepareRename for clients that support it
    assert caps.completion_provider is not None
    assert set(caps.completion_provider.trigger_characters or ()) == {".", ":", "{", "@"}

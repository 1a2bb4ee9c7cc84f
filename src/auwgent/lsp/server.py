"""``auwgent lsp``: the language server, over standard input and output.

Built on pygls. Diagnostics are published for every file of the project of an open document
(the same codes, messages, notes and help as ``auwgent check``): at once after an edit that
follows a quiet spell, and while edits keep coming, once none has come for ``debounceMs``
(an initialization option, default 50). The rest answers requests
from the index of the last check (``index.py``) and the formatter (``compiler/format.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from lsprotocol import types as t
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from auwgent._records import record
from auwgent.compiler import (
    STATEMENT_WORDS,  # cannot name anything in an expression
    Diagnostic,
    FormatError,
    Severity,
    SourceFile,
    Span,
    format_source,
)

from .._version import __version__
from .complete import Candidate, complete
from .index import PROMPT_CONTEXT, Definition, FileIndex
from .workspace import ProjectState, Workspace, offset_to_position, position_to_offset

__all__ = ["AuwgentServer", "serve"]

DEFAULT_DEBOUNCE_MS = 50

logger = logging.getLogger(__name__)

_SYMBOL_KINDS = {
    "model": t.SymbolKind.Object,
    "type": t.SymbolKind.Struct,
    "prompt": t.SymbolKind.String,
    "persona": t.SymbolKind.String,
    "intent": t.SymbolKind.Event,
    "agent": t.SymbolKind.Class,
    "helper": t.SymbolKind.Class,
    "tool": t.SymbolKind.Method,
    "tools": t.SymbolKind.Module,
    "workflow": t.SymbolKind.Function,
    "field": t.SymbolKind.Field,
    "parameter": t.SymbolKind.Variable,
    "variable": t.SymbolKind.Variable,
    "config": t.SymbolKind.Property,
}


class AuwgentServer(LanguageServer):
    """The server: a ``Workspace`` of projects and the pending checks."""

    def __init__(self) -> None:
        super().__init__("auwgent", __version__)
        self.projects = Workspace()
        self.debounce = DEFAULT_DEBOUNCE_MS / 1000
        self.pending: dict[Path, asyncio.TimerHandle] = {}
        self.checked_at: dict[Path, float] = {}  # the event loop's clock
        self.uris: dict[tuple[Path, str], str] = {}  # the client's URI of each open file

    # -- documents ---------------------------------------------------------------------------

    def document(self, uri: str) -> tuple[ProjectState, str] | None:
        path = to_fs_path(uri)
        if path is None:
            return None
        project, rel = self.projects.project_for(Path(path))
        self.uris[(project.key, rel)] = uri
        return project, rel

    def uri_of(self, project: ProjectState, rel: str) -> str:
        known = self.uris.get((project.key, rel))
        return known or from_fs_path(str(project.path_of(rel))) or project.path_of(rel).as_uri()

    def source(self, project: ProjectState, rel: str) -> SourceFile:
        return project.sources.get(rel) or SourceFile(rel, project.texts.get(rel, ""))

    def schedule(self, project: ProjectState) -> None:
        """Check ``project`` after an edit: at once after a quiet spell, else (while edits
        keep coming) once none has come for ``self.debounce`` seconds."""
        previous = self.pending.pop(project.key, None)
        if previous is not None:
            previous.cancel()
        loop = asyncio.get_running_loop()
        last = self.checked_at.get(project.key)
        quiet = previous is None and (last is None or loop.time() - last >= self.debounce)
        delay = 0.0 if quiet else self.debounce
        self.pending[project.key] = loop.call_later(delay, self.check_now, project)

    def check_now(self, project: ProjectState) -> None:
        pending = self.pending.pop(project.key, None)
        if pending is not None:
            pending.cancel()
        started = time.perf_counter()
        try:
            changed = project.check()
        except Exception as exc:  # a bug in Auwgent: say so, and check afresh next time
            project.forget()
            logger.exception("checking %s failed", project.key)
            self.window_show_message(
                t.ShowMessageParams(
                    type=t.MessageType.Error,
                    message=f"auwgent: internal error while checking ({type(exc).__name__}: "
                    f"{exc}); this is a bug in Auwgent, please report it with the input",
                )
            )
            return
        elapsed = (time.perf_counter() - started) * 1000
        if changed:
            self.window_log_message(
                t.LogMessageParams(
                    type=t.MessageType.Log,
                    message=f"checked {len(project.last_checked)} of {len(project.texts)} "
                    f"files in {elapsed:.1f} ms",
                )
            )
        self.checked_at[project.key] = asyncio.get_running_loop().time()
        for rel, diags in sorted(changed.items()):
            source = self.source(project, rel)
            self.text_document_publish_diagnostics(
                t.PublishDiagnosticsParams(
                    uri=self.uri_of(project, rel),
                    diagnostics=[self.to_lsp(project, source, d) for d in diags],
                )
            )

    def to_lsp(self, project: ProjectState, source: SourceFile, diag: Diagnostic) -> t.Diagnostic:
        lines = [diag.message]
        related = []
        for note in diag.notes:
            text = note.message
            if note.span is not None:
                line, col = diag.source.line_col(note.span.start)
                text += f": {diag.source.path}:{line}:{col}"
                related.append(
                    t.DiagnosticRelatedInformation(
                        location=t.Location(
                            uri=self.uri_of(project, source.path),
                            range=self.span_range(source, note.span),
                        ),
                        message=note.message,
                    )
                )
            lines.append(f"note: {text}")
        if diag.help:
            lines.append(f"help: {diag.help}")
        return t.Diagnostic(
            range=self.span_range(source, diag.span),
            message="\n".join(lines),
            severity=(
                t.DiagnosticSeverity.Error
                if diag.severity is Severity.ERROR
                else t.DiagnosticSeverity.Warning
            ),
            code=diag.code,
            source="auwgent",
            related_information=related or None,
        )

    # -- answers -----------------------------------------------------------------------------

    def at(self, uri: str, position: t.Position) -> tuple[ProjectState, str, int] | None:
        found = self.document(uri)
        if found is None:
            return None
        project, rel = found
        self.up_to_date(project)
        source = self.source(project, rel)
        offset = position_to_offset(source, position.line, position.character, self.encoding)
        return project, rel, offset

    def up_to_date(self, project: ProjectState) -> None:
        """Check ``project`` now if an edit is waiting for its check: answer from the text
        the user sees."""
        if project.graph is None or project.key in self.pending:
            self.check_now(project)

    def name_at(self, uri: str, position: t.Position) -> NameAt | None:
        """The name at ``position`` in document ``uri`` that the index knows, if any."""
        found = self.at(uri, position)
        if found is None:
            return None
        project, rel, offset = found
        index = project.index(rel)
        name = index.span_at(offset) if index is not None else None
        return NameAt(project, rel, name[0], name[1]) if name is not None else None

    def check_context_rename(self, found: NameAt) -> None:
        """Refuse to rename a context field that a top-level prompt uses as ``ctx.x``: the
        prompt takes the context of every agent that uses it, so no rename of one agent's
        field can be right for it."""
        key = found.key
        if not key.startswith(PROMPT_CONTEXT) and ".ctx." not in key:
            return
        field = (
            key[len(PROMPT_CONTEXT) :] if key.startswith(PROMPT_CONTEXT) else key.rsplit(".")[-1]
        )
        for index in found.project.all_indexes():
            for use in index.references:
                if use.key == PROMPT_CONTEXT + field:
                    line, col = self.source(found.project, index.path).line_col(use.span.start)
                    raise JsonRpcException(
                        code=t.LSPErrorCodes.RequestFailed,
                        message=f"`ctx.{field}` is also used in a prompt ({index.path}:{line}:{col}), "
                        "which reads the context of every agent that uses it: rename it there "
                        "and in those agents by hand",
                    )

    def definition_of(self, project: ProjectState, key: str) -> Definition | None:
        index = project.index(key.split("::", 1)[0])
        if index is None:
            return None
        return next((d for d in index.definitions if d.key == key), None)

    @property
    def encoding(self) -> str:
        """The position encoding agreed with the client (UTF-16 unless it offered another)."""
        agreed = self.server_capabilities.position_encoding
        return str(
            agreed.value if isinstance(agreed, t.PositionEncodingKind) else agreed or "utf-16"
        )

    def span_range(self, source: SourceFile, span: Span) -> t.Range:
        start = offset_to_position(source, span.start, self.encoding)
        end = offset_to_position(source, max(span.start, span.end), self.encoding)
        return t.Range(start=_position(start), end=_position(end))

    def range(self, project: ProjectState, path: str, span: Span) -> t.Range:
        return self.span_range(self.source(project, path), span)

    def location(self, project: ProjectState, path: str, span: Span) -> t.Location:
        return t.Location(uri=self.uri_of(project, path), range=self.range(project, path, span))

    def occurrences(
        self, project: ProjectState, key: str, *, declaration: bool
    ) -> list[tuple[str, Span]]:
        found: list[tuple[str, Span]] = []
        for index in _readers(project, key):
            found.extend((index.path, r.span) for r in index.references if r.key == key)
            if declaration:
                found.extend((index.path, d.span) for d in index.definitions if d.key == key)
        return sorted(set(found))


@record
class NameAt:
    """A name under the cursor: its project and file, the key it resolves to, its span."""

    project: ProjectState
    rel: str
    key: str
    span: Span


def _readers(project: ProjectState, key: str) -> list[FileIndex]:
    """The indexes of the files that can name ``key``: its file and those importing it."""
    home = key.split("::", 1)[0]
    graph = project.graph
    if graph is None:
        return []
    importers: dict[str, set[str]] = {}
    for path, scope in graph.scopes.items():
        for imported in scope.imported.values():
            importers.setdefault(imported.source_path, set()).add(path)
    seen = {home}
    todo = [home]
    while todo:
        for other in importers.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return [i for path in sorted(seen) if (i := project.index(path)) is not None]


def _position(where: tuple[int, int]) -> t.Position:
    return t.Position(line=where[0], character=where[1])


server = AuwgentServer()


@server.feature(t.INITIALIZE)
def _initialize(ls: AuwgentServer, params: t.InitializeParams) -> None:
    options = params.initialization_options
    if isinstance(options, dict):
        value = options.get("debounceMs")
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            ls.debounce = value / 1000


@server.feature(t.TEXT_DOCUMENT_DID_OPEN)
def _did_open(ls: AuwgentServer, params: t.DidOpenTextDocumentParams) -> None:
    found = ls.document(params.text_document.uri)
    if found is not None:
        project, rel = found
        project.update(rel, params.text_document.text)
        ls.check_now(project)


@server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
def _did_change(ls: AuwgentServer, params: t.DidChangeTextDocumentParams) -> None:
    found = ls.document(params.text_document.uri)
    if found is not None:
        project, rel = found
        document = ls.workspace.get_text_document(params.text_document.uri)
        project.update(rel, document.source)
        ls.schedule(project)


@server.feature(t.TEXT_DOCUMENT_DID_SAVE)
def _did_save(ls: AuwgentServer, params: t.DidSaveTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri)
    if path is not None:
        project, rel = ls.projects.saved(Path(path))
        ls.uris[(project.key, rel)] = params.text_document.uri
        project.update(rel, ls.workspace.get_text_document(params.text_document.uri).source)
        ls.schedule(project)


@server.feature(t.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def _watched(ls: AuwgentServer, params: t.DidChangeWatchedFilesParams) -> None:
    for project in ls.projects.files_changed():
        ls.schedule(project)


@server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
def _did_close(ls: AuwgentServer, params: t.DidCloseTextDocumentParams) -> None:
    found = ls.document(params.text_document.uri)
    if found is not None:
        project, rel = found
        project.update(rel, None)
        ls.schedule(project)


@server.feature(t.TEXT_DOCUMENT_HOVER)
def _hover(ls: AuwgentServer, params: t.HoverParams) -> t.Hover | None:
    found = ls.name_at(params.text_document.uri, params.position)
    definition = ls.definition_of(found.project, found.key) if found else None
    if found is None or definition is None:
        return None
    text = f"```auwgent\n{definition.signature}\n```"
    if definition.doc:
        text += f"\n\n{definition.doc}"
    if definition.path != found.rel:
        text += f"\n\n*{definition.kind} from `{definition.path}`*"
    return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=text))


@server.feature(t.TEXT_DOCUMENT_DEFINITION)
def _definition(ls: AuwgentServer, params: t.DefinitionParams) -> t.Location | None:
    found = ls.name_at(params.text_document.uri, params.position)
    definition = ls.definition_of(found.project, found.key) if found else None
    if found is None or definition is None:
        return None
    return ls.location(found.project, definition.path, definition.span)


@server.feature(t.TEXT_DOCUMENT_REFERENCES)
def _references(ls: AuwgentServer, params: t.ReferenceParams) -> list[t.Location] | None:
    found = ls.name_at(params.text_document.uri, params.position)
    if found is None:
        return None
    declaration = params.context.include_declaration
    return [
        ls.location(found.project, path, span)
        for path, span in ls.occurrences(found.project, found.key, declaration=declaration)
    ]


@server.feature(t.TEXT_DOCUMENT_PREPARE_RENAME)
def _prepare_rename(ls: AuwgentServer, params: t.PrepareRenameParams) -> t.Range | None:
    found = ls.name_at(params.text_document.uri, params.position)
    if found is None:
        return None
    return ls.range(found.project, found.rel, found.span)


@server.feature(t.TEXT_DOCUMENT_RENAME)
def _rename(ls: AuwgentServer, params: t.RenameParams) -> t.WorkspaceEdit | None:
    new_name = params.new_name
    if not new_name.isidentifier() or new_name in STATEMENT_WORDS:
        raise JsonRpcInvalidParams(
            f"`{new_name}` is not a name: a name starts with a letter or `_` and goes on with "
            f"letters, digits and `_`, and is not one of {', '.join(sorted(STATEMENT_WORDS))}"
        )
    found = ls.name_at(params.text_document.uri, params.position)
    if found is None:
        return None
    ls.check_context_rename(found)
    changes: dict[str, list[t.TextEdit]] = {}
    for path, span in ls.occurrences(found.project, found.key, declaration=True):
        edit = t.TextEdit(range=ls.range(found.project, path, span), new_text=new_name)
        changes.setdefault(ls.uri_of(found.project, path), []).append(edit)
    return t.WorkspaceEdit(changes=changes)


@server.feature(t.TEXT_DOCUMENT_FORMATTING)
def _formatting(ls: AuwgentServer, params: t.DocumentFormattingParams) -> list[t.TextEdit] | None:
    document = ls.workspace.get_text_document(params.text_document.uri)
    source = SourceFile(document.path, document.source)
    try:
        formatted = format_source(source)
    except FormatError as exc:
        ls.window_show_message(t.ShowMessageParams(type=t.MessageType.Warning, message=str(exc)))
        return None
    if formatted == source.text:
        return []
    whole = ls.span_range(source, Span(0, len(source.text)))
    return [t.TextEdit(range=whole, new_text=formatted)]


@server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def _symbols(ls: AuwgentServer, params: t.DocumentSymbolParams) -> list[t.DocumentSymbol] | None:
    found = ls.document(params.text_document.uri)
    if found is None:
        return None
    project, rel = found
    ls.up_to_date(project)
    index = project.index(rel)
    if index is None:
        return []
    source = ls.source(project, rel)
    keys = {d.key for d in index.definitions}
    children: dict[str | None, list[Definition]] = {}
    seen: set[str] = set()
    for definition in index.definitions:
        if definition.key not in seen:  # the first definition of a key stands for it
            seen.add(definition.key)
            children.setdefault(_parent(definition.key, keys), []).append(definition)

    def build(parent: str | None) -> list[t.DocumentSymbol]:
        return [
            t.DocumentSymbol(
                name=d.name,
                kind=_SYMBOL_KINDS.get(d.kind, t.SymbolKind.Variable),
                range=ls.span_range(source, d.decl_span.to(d.span)),
                selection_range=ls.span_range(source, d.span),
                detail=d.kind,
                children=build(d.key),
            )
            for d in sorted(children.get(parent, ()), key=lambda d: d.span)
        ]

    return build(None)


def _parent(key: str, keys: set[str]) -> str | None:
    """The nearest enclosing key among ``keys`` (``a::M.x(y)`` is inside ``a::M.x``)."""
    head, _, rest = key.partition("::")
    while True:
        cut = max(rest.rfind("."), rest.rfind("("))
        if cut <= 0:
            return None
        rest = rest[:cut]
        if f"{head}::{rest}" in keys:
            return f"{head}::{rest}"


@server.feature(
    t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=[".", ":", "{", "@"])
)
def _completion(ls: AuwgentServer, params: t.CompletionParams) -> t.CompletionList | None:
    found = ls.at(params.text_document.uri, params.position)
    if found is None:
        return None
    project, rel, offset = found
    items = [_item(c) for c in complete(project, rel, offset)]
    return t.CompletionList(is_incomplete=False, items=items)


_COMPLETION_KINDS = {
    "keyword": t.CompletionItemKind.Keyword,
    "type": t.CompletionItemKind.Class,
    "model": t.CompletionItemKind.Module,
    "prompt": t.CompletionItemKind.Text,
    "persona": t.CompletionItemKind.Text,
    "intent": t.CompletionItemKind.Event,
    "helper": t.CompletionItemKind.Class,
    "agent": t.CompletionItemKind.Class,
    "tool": t.CompletionItemKind.Method,
    "workflow": t.CompletionItemKind.Function,
    "field": t.CompletionItemKind.Field,
    "parameter": t.CompletionItemKind.Variable,
    "variable": t.CompletionItemKind.Variable,
    "provider": t.CompletionItemKind.Function,
}


def _item(candidate: Candidate) -> t.CompletionItem:
    return t.CompletionItem(
        label=candidate.label,
        kind=_COMPLETION_KINDS.get(candidate.kind, t.CompletionItemKind.Text),
        detail=candidate.detail,
        documentation=candidate.doc,
        insert_text=candidate.insert,
    )


def serve() -> int:
    """Run the server on standard input and output until the client says ``exit``."""
    server.start_io()
    return 0

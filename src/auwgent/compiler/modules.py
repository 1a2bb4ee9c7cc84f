"""The module graph: which file each name comes from.

Every ``.agent`` file is a module keyed by its path relative to the source root
(``"helpers/data.agent"``, always ``/``-separated). ``import { A } from "./x"`` resolves
relative to the importing file, with or without the ``.agent`` suffix. Only ``model``, ``mcp``,
``prompt``, ``persona``, ``type``, ``helper``, ``intent`` and tool group (``tools Name { }``)
declarations can be exported; a single tool and a workflow live with their agent.

Diagnostics (``E1xxx``) point at the import or the export that is wrong. A name whose import
failed is simply absent from the importing file's scope, and the checker is told not to
report it again as unknown.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from .._records import record
from . import nodes as n
from .diagnostics import Diagnostic, Note, did_you_mean, error, listing, suggest, suggestion_budget
from .source import SourceFile

#: Declarations that have a name in a file's top-level scope.
NamedDecl = (
    n.ModelDecl
    | n.McpDecl
    | n.TypeDecl
    | n.PromptDecl
    | n.PersonaDecl
    | n.IntentDecl
    | n.AgentDecl
    | n.ToolGroupDecl
)

SUFFIX = ".agent"

KIND_WORDS: dict[type, str] = {
    n.ModelDecl: "model",
    n.McpDecl: "mcp",
    n.TypeDecl: "type",
    n.PromptDecl: "prompt",
    n.PersonaDecl: "persona",
    n.IntentDecl: "intent",
    n.ToolGroupDecl: "tools",
}


def kind_word(decl: NamedDecl) -> str:
    """The keyword that declared ``decl`` (``model``, ``agent``, ``helper``, ...)."""
    if isinstance(decl, n.AgentDecl):
        return decl.kind
    return KIND_WORDS[type(decl)]


@record
class Symbol:
    """A top-level declaration and the file that declares it."""

    name: str
    decl: NamedDecl
    path: str

    @property
    def key(self) -> str:
        """Unique across the project: ``path::name``."""
        return f"{self.path}::{self.name}"

    @property
    def kind(self) -> str:
        """The declaring keyword, for messages."""
        return kind_word(self.decl)


@record
class ImportedName:
    """One name brought in by an import, and what it resolved to."""

    name: n.Name
    symbol: Symbol
    source_path: str


class FileScope:
    """One file's top level: what it declares and what it imports.

    ``local`` holds the first declaration of each name (the checker reports duplicates);
    ``imported`` the successfully resolved imports; ``failed`` names whose import was already
    reported, which the checker must not report again as unknown.
    """

    # A plain class: `auwgent check` never imports dataclasses (see auwgent/_records.py).
    __slots__ = ("path", "module", "local", "imported", "failed")

    def __init__(self, path: str, module: n.Module) -> None:
        self.path = path
        self.module = module
        self.local: dict[str, Symbol] = {}
        self.imported: dict[str, ImportedName] = {}
        self.failed: set[str] = set()

    def lookup(self, name: str) -> Symbol | None:
        """The symbol ``name`` denotes in this file (a local declaration wins)."""
        if name in self.local:
            return self.local[name]
        found = self.imported.get(name)
        return found.symbol if found else None

    def visible_names(self) -> list[str]:
        """Every name usable at this file's top level (for did-you-mean)."""
        return sorted({*self.local, *self.imported})

    def groups(self, names: Iterable[n.Name]) -> Iterator[Symbol]:
        """The tool groups (``tools Name { }``) that ``names`` denote here, in order, once
        each; names that denote no group are skipped (the checker reports them)."""
        seen: set[str] = set()
        for name in names:
            symbol = self.lookup(name.text)
            if symbol is not None and isinstance(symbol.decl, n.ToolGroupDecl):
                if symbol.key not in seen:
                    seen.add(symbol.key)
                    yield symbol


@record
class ModuleGraph:
    """Every file's scope, keyed by relative path, and the diagnostics found building them."""

    scopes: Mapping[str, FileScope]
    diagnostics: tuple[Diagnostic, ...]

    def scope(self, path: str) -> FileScope:
        """The scope of the file at ``path``."""
        return self.scopes[path]


class _HasScope(Protocol):
    scope: FileScope


class InFile:
    """Context manager: ``walker.scope`` is another file's scope for the ``with`` block.

    The checker and the lowering step into imported files this way. A plain class: a
    ``contextlib.contextmanager`` costs a generator and several more calls for each of the
    hundreds of declarations from other files a project uses.
    """

    __slots__ = ("walker", "scope", "previous")

    def __init__(self, walker: _HasScope, scope: FileScope) -> None:
        self.walker = walker
        self.scope = scope
        self.previous = walker.scope

    def __enter__(self) -> None:
        self.walker.scope = self.scope

    def __exit__(self, *exc: object) -> None:
        self.walker.scope = self.previous


def resolve_modules(modules: Mapping[str, n.Module]) -> ModuleGraph:
    """Build the scope of every file and check imports and exports."""
    diags: list[Diagnostic] = []
    scopes = {path: _declare(path, module, diags) for path, module in sorted(modules.items())}
    edges: dict[str, list[tuple[str, n.ImportDecl]]] = {path: [] for path in scopes}
    exports: dict[str, list[str]] = {}  # sorted export names of each file, when needed
    files = _ProjectFiles(scopes)
    for path, scope in scopes.items():
        with suggestion_budget(scope.module.source):
            for imp in scope.module.imports:
                target = _import_target(path, imp, scopes, diags, files)
                if target == path:
                    diags.append(_self_import(scope, imp))
                    continue
                if target is None:
                    scope.failed.update(name.text for name in imp.names)
                    continue
                edges[path].append((target, imp))
                _bind_names(scope, scopes[target], imp, diags, exports)
    diags.extend(_cycles(scopes, edges))
    return ModuleGraph(scopes, tuple(diags))


# --------------------------------------------------------------------------------------------
# Declarations and exports


def _declare(path: str, module: n.Module, diags: list[Diagnostic]) -> FileScope:
    scope = FileScope(path, module)
    for decl in module.decls:
        if isinstance(decl, n.ToolDecl | n.WorkflowDecl):
            _check_unexportable(module, decl, diags)
        elif isinstance(decl, n.ToolsBlock):
            for tool in decl.tools:
                _check_unexportable(module, tool, diags)
        elif isinstance(decl, n.ImportDecl | n.TestDecl):
            continue
        else:
            if isinstance(decl, n.AgentDecl) and not decl.is_helper and decl.export_span:
                diags.append(
                    error(
                        "E1007",
                        f"agent `{decl.name.text}` cannot be exported",
                        module.source,
                        decl.export_span,
                        help="an agent is compiled on its own; to reuse it from another "
                        "agent, declare it as a `helper` and export that",
                    )
                )
            scope.local.setdefault(decl.name.text, Symbol(decl.name.text, decl, path))
    return scope


def _check_unexportable(
    module: n.Module, decl: n.ToolDecl | n.WorkflowDecl, diags: list[Diagnostic]
) -> None:
    if decl.export_span is None:
        return
    word = "tool" if isinstance(decl, n.ToolDecl) else "workflow"
    diags.append(
        error(
            "E1005",
            f"{word} `{decl.name.text}` cannot be exported",
            module.source,
            decl.export_span,
            help=f"tools and workflows live with the agent or helper that uses them: declare "
            f"the {word} inside that block; to share "
            + (
                "tools, export a tool group (`export tools Name { ... }`)"
                if word == "tool"
                else "it, export a `helper` that has it"
            ),
        )
    )


def is_exported(decl: NamedDecl) -> bool:
    """True when ``decl`` was written with ``export`` (and may be exported)."""
    if isinstance(decl, n.AgentDecl) and not decl.is_helper:
        return False
    return decl.export_span is not None


# --------------------------------------------------------------------------------------------
# Imports


def normalize_import(importer: str, spec: str) -> str:
    """The project-relative path that ``spec``, written in file ``importer``, points to."""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
    return joined if joined.endswith(SUFFIX) else joined + SUFFIX


def relative_spec(importer: str, target: str) -> str:
    """How file ``importer`` writes an import of file ``target`` (``./x``, ``../y/z``)."""
    rel = posixpath.relpath(target, posixpath.dirname(importer) or ".")
    rel = rel[: -len(SUFFIX)] if rel.endswith(SUFFIX) else rel
    return rel if rel.startswith("../") else "./" + rel


class _ProjectFiles:
    """The project's files for did-you-mean on missing imports: by path, and by file name
    (made once, at the first missing import: per import, it made the check quadratic)."""

    __slots__ = ("scopes", "_by_name")

    def __init__(self, scopes: Mapping[str, FileScope]) -> None:
        self.scopes = scopes
        self._by_name: dict[str, list[str]] | None = None

    def by_name(self) -> dict[str, list[str]]:
        if self._by_name is None:
            self._by_name = {}
            for path in self.scopes:
                self._by_name.setdefault(posixpath.basename(path), []).append(path)
        return self._by_name


def _closest_file(target: str, importer: str, files: _ProjectFiles) -> str | None:
    """The project file (other than ``importer``) an import most likely meant: a close path,
    else the same file name in another folder (a wrong `./` or `../`), else a close file
    name. ``None`` unless one file stands out."""
    close = suggest(target, (p for p in files.scopes if p != importer))
    if close:
        return close
    stem, ext = posixpath.splitext(target[: -len(SUFFIX)])
    if ext:  # `./models.agnet`: the typo is in the suffix, the file is `models.agent`
        bare = stem + SUFFIX
        if bare in files.scopes and bare != importer:
            return bare
        close = suggest(bare, (p for p in files.scopes if p != importer))
        if close:
            return close
        target = bare
    by_name = files.by_name()

    def elsewhere(name: str) -> list[str]:
        return [p for p in by_name.get(name, ()) if p != importer]

    name = posixpath.basename(target)
    hit = name if elsewhere(name) else suggest(name, (k for k in by_name if elsewhere(k)))
    found = elsewhere(hit) if hit is not None else []
    return found[0] if len(found) == 1 else None


def _import_target(
    path: str,
    imp: n.ImportDecl,
    scopes: Mapping[str, FileScope],
    diags: list[Diagnostic],
    files: _ProjectFiles,
) -> str | None:
    source = scopes[path].module.source
    spec = imp.path.value
    if not spec.startswith(("./", "../")):
        # `"models"`, `"/models"` or a path from the project root: point at the real file
        # when there is one, else show the relative form of what was written.
        bare = spec.lstrip("/\\") or spec
        found = next(
            (
                t
                for t in (normalize_import(path, "./" + bare), normalize_import("", bare))
                if t in scopes
            ),
            None,
        )
        example = relative_spec(path, found) if found else "./" + bare
        diags.append(
            error(
                "E1001",
                f'import path "{spec}" must start with "./" or "../"',
                source,
                imp.path.span,
                help=f'imports are relative to this file, e.g. "{example}"',
            )
        )
        return None
    target = normalize_import(path, spec)
    if target in scopes:
        return target
    close = _closest_file(target, path, files)
    hint = f'did you mean "{relative_spec(path, close)}"?' if close else None
    diags.append(
        error(
            "E1001",
            f'cannot find "{spec}": no file {target} in the project',
            source,
            imp.path.span,
            help=hint
            or "paths are relative to the importing file; the `.agent` suffix is optional",
        )
    )
    return None


def _bind_names(
    scope: FileScope,
    target: FileScope,
    imp: n.ImportDecl,
    diags: list[Diagnostic],
    exports: dict[str, list[str]],
) -> None:
    source = scope.module.source
    for name in imp.names:
        previous = scope.imported.get(name.text)
        if previous is not None or name.text in scope.failed:
            first = previous.name.span if previous else None
            diags.append(
                error(
                    "E1006",
                    f"`{name.text}` is imported more than once",
                    source,
                    name.span,
                    notes=[Note("first imported here", first)] if first else [],
                    help="remove this import",
                )
            )
            continue
        symbol = target.local.get(name.text)
        if symbol is not None and is_exported(symbol.decl):
            scope.imported[name.text] = ImportedName(name, symbol, target.path)
            continue
        scope.failed.add(name.text)
        if symbol is None and target.path not in exports:
            exported = (s.name for s in target.local.values() if is_exported(s.decl))
            exports[target.path] = sorted(exported)
        diags.append(_not_exported(source, name, target, symbol, exports.get(target.path, [])))


def _not_exported(
    source: SourceFile,
    name: n.Name,
    target: FileScope,
    symbol: Symbol | None,
    exported: list[str],
) -> Diagnostic:
    """E1003 (``exported``: the target's export names, sorted) or E1002 for ``name``."""
    if symbol is None:
        return error(
            "E1003",
            f"{target.path} has no export named `{name.text}`",
            source,
            name.span,
            help=did_you_mean(name.text, exported) or _exports_listing(exported),
        )
    kind = symbol.kind
    if kind == "agent":
        hint = "agents cannot be exported; declare it as a `helper` to use it from another agent"
    else:
        line, _ = target.module.source.line_col(symbol.decl.span.start)
        hint = f"add `export` before `{kind} {name.text}` in {target.path}:{line}"
    return error(
        "E1002",
        f"`{name.text}` is declared in {target.path} but not exported",
        source,
        name.span,
        help=hint,
    )


def _exports_listing(exported: list[str]) -> str:
    if not exported:
        return "that file exports nothing; mark a declaration with `export` to share it"
    return "it exports: " + listing(exported, "`{}`".format)


# --------------------------------------------------------------------------------------------
# Cycles


def _cycles(
    scopes: Mapping[str, FileScope], edges: Mapping[str, list[tuple[str, n.ImportDecl]]]
) -> Iterator[Diagnostic]:
    """One diagnostic per import that closes a cycle, found by depth-first search."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    stack: list[str] = []

    def visit(path: str) -> Iterator[Diagnostic]:
        state[path] = 1
        stack.append(path)
        for target, imp in edges[path]:
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :] + [target]
                yield _cycle_error(scopes[path], imp, cycle)
            elif target not in state:
                yield from visit(target)  # noqa: F821 - deleted only once the search is done
        stack.pop()
        state[path] = 2

    for path in sorted(scopes):
        if path not in state:
            yield from visit(path)
    # `visit` refers to itself through its closure: a reference cycle that would keep every
    # scope (and so every syntax tree) alive until the next full garbage collection.
    del visit


def _self_import(scope: FileScope, imp: n.ImportDecl) -> Diagnostic:
    return error(
        "E1004",
        f"{scope.path} imports itself",
        scope.module.source,
        imp.span,
        help="remove this import: a file's own declarations are already visible in it",
    )


def _cycle_error(scope: FileScope, imp: n.ImportDecl, cycle: list[str]) -> Diagnostic:
    chain = " -> ".join(cycle)
    return error(
        "E1004",
        f"import cycle: {chain}",
        scope.module.source,
        imp.span,
        help="move the shared declarations into a file that both can import",
    )

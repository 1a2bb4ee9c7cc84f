"""The language server's view of the projects being edited, checked incrementally.

A document belongs to the project of the nearest ``auwgent.yml`` above it (when the file is
one of that project's sources), else to the project ``auwgent check FILE`` would check: the
file and what it imports. A project holds the text of every file, from disk or, for files
open in the editor, from the unsaved buffer.

Checking after an edit redoes only what the edit can change. Syntax trees are kept per file
and only changed files are parsed again. A file's diagnostics depend only on the file and
on what it imports, directly or not (see ``compiler/parallel.py`` for the argument and its
three exceptions, all errors), so after an edit the checker runs over the changed files and
their importers (the *affected* files) together with what they import, and the other files
keep their diagnostics. That result is kept only when it has no error and no other file has
one either; otherwise the whole project is checked again (from the kept syntax trees), so the
messages are always exactly those of ``auwgent check``. A project with ``custom(`` providers
checks all files that use one together, as the split compile does.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable
from pathlib import Path

from auwgent.compiler import (
    Diagnostic,
    ModuleGraph,
    SourceFile,
    Span,
    check,
    error,
    name_clashes,
    normalize_import,
    parse,
    resolve_modules,
    sort_key,
)
from auwgent.compiler import nodes as n

from ..errors import ConfigError
from ..project import CONFIG_NAMES, load_project
from .index import FileIndex, index_file

__all__ = ["ProjectState", "Workspace"]

_CUSTOM = re.compile(r"custom\s*\(")


class ProjectState:
    """One project: its files' texts, syntax trees, diagnostics and indexes.

    Paths inside are relative to ``source_root`` and ``/``-separated, as in the IR.
    """

    def __init__(self, key: Path, source_root: Path, files: Iterable[Path]) -> None:
        self.key = key
        self.source_root = source_root
        self.texts: dict[str, str] = {}
        self.unreadable: dict[str, str] = {}
        self.open: dict[str, str] = {}  # unsaved buffers by path
        self.parsed: dict[str, tuple[n.Module, list[Diagnostic]]] = {}
        self.parsed_text: dict[str, str] = {}
        self.sources: dict[str, SourceFile] = {}
        self.diagnostics: dict[str, list[Diagnostic]] = {}  # as last published
        self.found: dict[str, list[Diagnostic]] = {}  # parser, modules and checker, by file
        self.clashes: dict[str, list[Diagnostic]] = {}  # the lowering's, once looked for
        self.graph: ModuleGraph | None = None
        self.indexes: dict[str, FileIndex] = {}
        self.checked_files: frozenset[str] = frozenset()
        #: Paths the last check ran the checker over (for tests and the benchmark).
        self.last_checked: frozenset[str] = frozenset()
        self.set_files(files)

    # -- files -----------------------------------------------------------------------------

    def rel(self, path: Path) -> str:
        return path.resolve().relative_to(self.source_root).as_posix()

    def path_of(self, rel: str) -> Path:
        return self.source_root / rel

    def set_files(self, files: Iterable[Path]) -> None:
        """The project's files on disk (open buffers are added on top)."""
        texts: dict[str, str] = {}
        self.unreadable = {}
        for path in files:
            rel = self.rel(path)
            try:
                texts[rel] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as exc:
                self.unreadable[rel] = f"it is not UTF-8 text (byte {exc.start})"
            except OSError as exc:
                self.unreadable[rel] = exc.strerror or str(exc)
        texts.update(self.open)
        self.texts = texts

    def update(self, rel: str, text: str | None) -> None:
        """A buffer was opened or changed (``text``), or closed (``None``: back to disk)."""
        if text is None:
            self.open.pop(rel, None)
            try:
                self.texts[rel] = self.path_of(rel).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                self.texts.pop(rel, None)
            return
        self.open[rel] = text
        self.texts[rel] = text
        self.unreadable.pop(rel, None)

    # -- checking --------------------------------------------------------------------------

    def forget(self) -> None:
        """Drop what the checks kept: the next check parses and checks every file again."""
        for cache in (self.parsed, self.parsed_text, self.sources, self.found, self.clashes):
            cache.clear()
        self.checked_files = frozenset()

    def check(self) -> dict[str, list[Diagnostic]]:
        """Check what changed since the last check; the diagnostics of the changed files and
        of every file whose diagnostics changed (an empty list clears a file's)."""
        changed = {p for p, t in self.texts.items() if self.parsed_text.get(p) != t}
        for path in changed:
            self.parsed.pop(path, None)
            self.parsed_text[path] = self.texts[path]
            self.sources[path] = SourceFile(path, self.texts[path])
        files = frozenset(self.texts)
        if not changed and files == self.checked_files:
            return {}
        for path in set(self.parsed_text) - files:
            for cache in (self.parsed, self.parsed_text, self.sources, self.found):
                cache.pop(path, None)
        # As in the compiler: the syntax trees hold no reference cycles, so the cyclic
        # collector would only walk them again and again (see pipeline._compile).
        collecting = gc.isenabled()
        gc.disable()
        try:
            if files != self.checked_files:  # a file came or went: imports may resolve anew
                changed = set(files)
            self._check(changed)
        finally:
            if collecting:
                gc.enable()
        self.checked_files = files
        return self._publish(changed)

    def _check(self, changed: set[str]) -> None:
        """Check the files ``changed`` can affect; their diagnostics go to ``self.found``."""
        for path, source in self.sources.items():
            if path not in self.parsed:
                self.parsed[path] = parse(source)
        modules = {p: self.parsed[p][0] for p in sorted(self.texts)}
        imports = {
            path: {normalize_import(path, imp.path.value) for imp in module.imports}
            for path, module in modules.items()
        }
        # The help of some errors names other files' exports: a file with an error is
        # checked again whatever changed.
        erring = {p for p, diags in self.found.items() if any(d.is_error for d in diags)}
        affected = _closure(changed | erring, _reverse(imports)) & set(modules)
        needed = _closure(affected, imports) & set(modules)
        custom = {p for p in modules if _CUSTOM.search(self.sources[p].text)}
        if custom & needed:  # one id, one URL across the project: check them together
            needed |= custom
        broken = {p for p in modules if any(d.is_error for d in self.parsed[p][1])}
        self.graph = graph = resolve_modules(modules)
        self.indexes = {}
        found: dict[str, list[Diagnostic]] = {p: list(self.parsed[p][1]) for p in affected}
        skip = (set(modules) - needed) | broken
        for diag in (*graph.diagnostics, *check(graph, skip)):
            if diag.source.path in found:
                found[diag.source.path].append(diag)
        for path in affected:
            self.found[path] = sorted(found[path], key=sort_key)
            self.clashes.pop(path, None)
        self.last_checked = frozenset(needed)

    def _publish(self, edited: set[str]) -> dict[str, list[Diagnostic]]:
        """Every file's diagnostics as ``auwgent check`` shows them; those of the ``edited``
        files and those that changed.

        The lowering's name clashes (E2071) are looked for, as by ``auwgent check``, only
        when the project has no other error."""
        clean = not self.unreadable and not any(
            d.is_error for diags in self.found.values() for d in diags
        )
        changed: dict[str, list[Diagnostic]] = {}
        for path in sorted({*self.found, *self.unreadable, *self.diagnostics}):
            shown = list(self.found.get(path, ()))
            if path in self.unreadable:
                where = SourceFile(str(self.path_of(path)), "")
                reason = f"cannot read {where.path}: {self.unreadable[path]}"
                shown = [error("E0000", reason, where, Span(0, 0))]
            elif path not in self.texts:
                shown = []
            elif clean and self.graph is not None:
                if path not in self.clashes:
                    self.clashes[path] = list(name_clashes(self.graph, path) or ())
                shown = sorted(shown + self.clashes[path], key=sort_key)
            if path in edited or self.diagnostics.get(path) != shown:
                changed[path] = shown
            if path in self.texts or path in self.unreadable:
                self.diagnostics[path] = shown
            else:
                self.diagnostics.pop(path, None)
        return changed

    # -- what the editor features read -------------------------------------------------------

    def module(self, rel: str) -> n.Module | None:
        parsed = self.parsed.get(rel)
        return parsed[0] if parsed else None

    def index(self, rel: str) -> FileIndex | None:
        """The index of ``rel`` (built on first use after each check)."""
        if self.graph is None or rel not in self.graph.scopes:
            return None
        if rel not in self.indexes:
            self.indexes[rel] = index_file(self.graph.scope(rel))
        return self.indexes[rel]

    def all_indexes(self) -> list[FileIndex]:
        return [i for rel in sorted(self.texts) if (i := self.index(rel)) is not None]


def _reverse(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    reverse: dict[str, set[str]] = {}
    for source, targets in edges.items():
        for target in targets:
            reverse.setdefault(target, set()).add(source)
    return reverse


def _closure(start: set[str], edges: dict[str, set[str]]) -> set[str]:
    """``start`` and everything reachable from it along ``edges``."""
    seen = set(start)
    todo = list(start)
    while todo:
        for target in edges.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


class Workspace:
    """Every project that holds an open document, found from the document's path."""

    def __init__(self) -> None:
        self.projects: dict[Path, ProjectState] = {}
        self.owner: dict[Path, Path] = {}  # document path -> project key

    def project_for(self, path: Path) -> tuple[ProjectState, str]:
        """The project that ``path`` belongs to (loaded on first use), and its relative path."""
        path = path.resolve()
        key = self.owner.get(path)
        if key is None or key not in self.projects:
            key, root, files = _locate(path)
            if key not in self.projects:
                self.projects[key] = ProjectState(key, root, files)
            self.owner[path] = key
        project = self.projects[key]
        return project, project.rel(path)

    def saved(self, path: Path) -> tuple[ProjectState, str]:
        """After a save: the project of ``path`` is looked for again and its files listed
        again (a file or an import may have come or gone, an ``auwgent.yml`` may now claim
        the file). A project no open file belongs to any more is dropped."""
        return self._relocate(path.resolve(), set())

    def files_changed(self) -> list[ProjectState]:
        """Files changed on disk (the editor's file watcher saw it): the project of every
        document is looked for again; the projects, once each."""
        refreshed: set[Path] = set()
        found = [self._relocate(path, refreshed)[0] for path in list(self.owner)]
        return list({project.key: project for project in found}.values())

    def _relocate(self, path: Path, refreshed: set[Path]) -> tuple[ProjectState, str]:
        old = self.owner.get(path)
        key, root, files = _locate(path)
        current = self.projects.get(key)
        if current is not None and current.source_root == root:
            if key not in refreshed:
                current.set_files(files)
        else:
            fresh = self.projects[key] = ProjectState(key, root, files)
            if current is not None:  # the source root moved: unsaved buffers come along
                for rel, text in current.open.items():
                    moved = current.path_of(rel).resolve()
                    if moved.is_relative_to(root):
                        fresh.update(fresh.rel(moved), text)
        refreshed.add(key)
        self.owner[path] = key
        if old is not None and old != key and old not in self.owner.values():
            self.projects.pop(old, None)
        project = self.projects[key]
        return project, project.rel(path)


def _locate(path: Path) -> tuple[Path, Path, tuple[Path, ...]]:
    """The project of the file ``path``: its key, its source root and its files."""
    config = _find_config(path.parent)
    if config is not None:
        try:
            loaded = load_project(config)
        except ConfigError:
            loaded = None
        if loaded is not None and path in loaded.files:
            return config, loaded.source_root, loaded.files
    if path.is_file():
        try:
            loaded = load_project(path)
        except ConfigError:
            loaded = None
        if loaded is not None:
            return path, loaded.source_root, loaded.files
    return path, path.parent, ()


def _find_config(folder: Path) -> Path | None:
    for current in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            candidate = current / name
            if candidate.is_file():
                return candidate
        if (current / ".git").exists():
            return None
    return None


def _units(text: str, encoding: str) -> int:
    """The length of ``text`` in the position encoding's units (``utf-16`` by default)."""
    if text.isascii() or encoding == "utf-32":
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def offset_to_position(
    source: SourceFile, offset: int, encoding: str = "utf-16"
) -> tuple[int, int]:
    """0-based line and column of ``offset``, in the units LSP counts them in."""
    line, col = source.line_col(offset)
    return line - 1, _units(source.line_text(line)[: col - 1], encoding)


def position_to_offset(
    source: SourceFile, line: int, character: int, encoding: str = "utf-16"
) -> int:
    """The offset of an LSP position (0-based line and column), clamped into the file."""
    if line >= source.line_count:
        return len(source.text)
    start = source.line_start(line + 1)
    text = source.line_text(line + 1)
    if text.isascii() or encoding == "utf-32":
        return start + min(character, len(text))
    units = 0
    for index, char in enumerate(text):
        if units >= character:
            return start + index
        units += _units(char, encoding)
    return start + len(text)

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

from ..compiler import nodes as n
from ..compiler.diagnostics import Diagnostic, error, sort_key
from ..compiler.modules import ModuleGraph, normalize_import, resolve_modules
from ..compiler.pipeline import _compile_set
from ..compiler.source import SourceFile, Span
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
        self.diagnostics: dict[str, list[Diagnostic]] = {}
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

    # -- checking --------------------------------------------------------------------------

    def check(self) -> dict[str, list[Diagnostic]]:
        """Check what changed since the last check; the diagnostics of every file whose
        diagnostics may have changed (an empty list clears a file's)."""
        changed = {p for p, t in self.texts.items() if self.parsed_text.get(p) != t}
        for path in changed:
            self.parsed.pop(path, None)
            self.parsed_text[path] = self.texts[path]
            self.sources[path] = SourceFile(path, self.texts[path])
        files = frozenset(self.texts)
        gone = set(self.diagnostics) - files - set(self.unreadable)
        if not changed and files == self.checked_files and self.graph is not None:
            return {}
        for path in gone:
            for cache in (self.parsed, self.parsed_text, self.sources):
                cache.pop(path, None)
        sources = {p: self.sources[p] for p in self.texts}
        # As in the compiler: the syntax trees hold no reference cycles, so the cyclic
        # collector would only walk them again and again (see pipeline._compile).
        collecting = gc.isenabled()
        gc.disable()
        try:
            result: dict[str, list[Diagnostic]] | None = None
            if files == self.checked_files and self.graph is not None:
                result = self._partial(sources, changed)
            if result is None:
                result = self._full(sources)
        finally:
            if collecting:
                gc.enable()
        for path in gone:
            result[path] = []
        self.checked_files = files
        self.diagnostics.update(result)
        for path in gone:
            self.diagnostics.pop(path, None)
        return result

    def _full(self, sources: dict[str, SourceFile]) -> dict[str, list[Diagnostic]]:
        everything = frozenset(sources)
        diags = self._run(sources, everything, everything)
        for rel, reason in self.unreadable.items():
            shown = str(self.path_of(rel))
            diags.setdefault(rel, []).append(
                error("E0000", f"cannot read {shown}: {reason}", SourceFile(rel, ""), Span(0, 0))
            )
        return {path: diags.get(path, []) for path in (*sources, *self.unreadable)}

    def _partial(
        self, sources: dict[str, SourceFile], changed: set[str]
    ) -> dict[str, list[Diagnostic]] | None:
        """The diagnostics of the affected files alone, or None when a full check is due."""
        if any(d.is_error for diags in self.diagnostics.values() for d in diags):
            return None
        imports = self._imports(sources)
        importers: dict[str, set[str]] = {}
        for path, targets in imports.items():
            for target in targets:
                importers.setdefault(target, set()).add(path)
        affected = set(changed)
        todo = list(changed)
        while todo:
            for importer in importers.get(todo.pop(), ()):
                if importer not in affected:
                    affected.add(importer)
                    todo.append(importer)
        needed = set(affected)
        todo = list(affected)
        while todo:
            for target in imports.get(todo.pop(), ()):
                if target not in needed:
                    needed.add(target)
                    todo.append(target)
        custom = {p for p, s in sources.items() if _CUSTOM.search(s.text)}
        if custom & needed:
            needed |= custom
        diags = self._run({p: sources[p] for p in needed}, frozenset(needed), frozenset(affected))
        if any(d.is_error for found in diags.values() for d in found):
            return None
        return {path: diags.get(path, []) for path in affected}

    def _run(
        self,
        sources: dict[str, SourceFile],
        files: frozenset[str],
        owned: frozenset[str],
    ) -> dict[str, list[Diagnostic]]:
        """Compile ``files`` (no IR); the diagnostics of ``owned`` by path."""
        ordered = sorted((p, sources[p]) for p in files)
        outcome = _compile_set(ordered, owned, hashed=False, documents=False, parsed=self.parsed)
        self.last_checked = files
        by_path: dict[str, list[Diagnostic]] = {}
        for diag in sorted(outcome.diagnostics, key=sort_key):
            if diag.source.path in owned:
                by_path.setdefault(diag.source.path, []).append(diag)
        # Every file has a syntax tree by now (a changed file is always among the affected).
        self.graph = resolve_modules({p: self.parsed[p][0] for p in self.texts})
        self.indexes = {}
        return by_path

    def _imports(self, sources: dict[str, SourceFile]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for path in sources:
            module = self.parsed[path][0] if path in self.parsed else None
            if module is None:
                continue
            found[path] = {
                target
                for imp in module.imports
                if (target := normalize_import(path, imp.path.value)) in sources
            }
        return found

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


class Workspace:
    """Every project that holds an open document, found from the document's path."""

    def __init__(self) -> None:
        self.projects: dict[Path, ProjectState] = {}
        self.owner: dict[Path, Path] = {}  # document path -> project key

    def project_for(self, path: Path) -> tuple[ProjectState, str]:
        """The project that ``path`` belongs to (loaded on first use), and its relative path."""
        path = path.resolve()
        key = self.owner.get(path)
        if key is not None and key in self.projects:
            project = self.projects[key]
            return project, project.rel(path)
        project = self._load(path)
        self.projects.setdefault(project.key, project)
        project = self.projects[project.key]
        self.owner[path] = project.key
        return project, project.rel(path)

    def _load(self, path: Path) -> ProjectState:
        config = _find_config(path.parent)
        if config is not None:
            try:
                loaded = load_project(config)
            except ConfigError:
                loaded = None
            if loaded is not None and path in loaded.files:
                return ProjectState(config, loaded.source_root, loaded.files)
        if path.is_file():
            try:
                loaded = load_project(path)
            except ConfigError:
                loaded = None
            if loaded is not None:
                return ProjectState(path, loaded.source_root, loaded.files)
        return ProjectState(path, path.parent, ())

    def reload(self, project: ProjectState) -> None:
        """Read the list of files again (after a save: imports or files may have changed)."""
        key = project.key
        try:
            loaded = load_project(key)
        except ConfigError:
            return
        if loaded.source_root != project.source_root:
            return
        project.set_files(loaded.files)


def _find_config(folder: Path) -> Path | None:
    for current in (folder, *folder.parents):
        for name in CONFIG_NAMES:
            candidate = current / name
            if candidate.is_file():
                return candidate
        if (current / ".git").exists():
            return None
    return None


def offset_to_position(source: SourceFile, offset: int) -> tuple[int, int]:
    """0-based line and UTF-16 column of ``offset``, as LSP counts them."""
    line, col = source.line_col(offset)
    text = source.line_text(line)[: col - 1]
    if not text.isascii():
        return line - 1, len(text.encode("utf-16-le")) // 2
    return line - 1, col - 1


def position_to_offset(source: SourceFile, line: int, character: int) -> int:
    """The offset of an LSP position (0-based line, UTF-16 column), clamped into the file."""
    if line >= source.line_count:
        return len(source.text)
    start = source.line_start(line + 1)
    text = source.line_text(line + 1)
    if text.isascii():
        return start + min(character, len(text))
    units = 0
    for index, char in enumerate(text):
        if units >= character:
            return start + index
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(text)

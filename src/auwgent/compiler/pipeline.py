"""The whole compiler in two calls: files in, IR documents and diagnostics out.

``compile_project`` reads ``.agent`` files from disk; ``compile_sources`` takes them from a
mapping (tests, tools, the language server later). Both parse every file, resolve the module
graph, run the checker and, when no error was found, lower each agent file to its IR
document. Library files (no ``agent``) produce no document.
"""

from __future__ import annotations

import gc
import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from .._records import record
from ..errors import CompileError
from . import nodes as n
from .checker import check
from .diagnostics import Diagnostic, error, limit_per_file, render_all, sort_key
from .lower import lower_file, name_clashes
from .modules import resolve_modules
from .parallel import Outcome, compile_split, default_jobs
from .parser import parse
from .source import SourceFile, Span

if TYPE_CHECKING:
    from ..ir.model import Document

__all__ = ["CompileResult", "compile_project", "compile_sources"]


@record
class CompileResult:
    """What a compilation produced.

    ``documents`` maps each agent file's path (relative to the source root, ``/``-separated)
    to its IR document; it is empty when there is any error. ``files`` counts the sources read
    and ``agents`` the ``agent`` blocks among them.
    """

    documents: Mapping[str, Document]
    diagnostics: tuple[Diagnostic, ...]
    files: int
    agents: int
    sources: Mapping[str, SourceFile] = MappingProxyType({})

    def __repr__(self) -> str:  # without the sources: their texts would fill the screen
        return (
            f"CompileResult(documents={self.documents!r}, diagnostics={self.diagnostics!r}, "
            f"files={self.files!r}, agents={self.agents!r})"
        )

    @property
    def ok(self) -> bool:
        """True when no diagnostic is an error (warnings allowed)."""
        return not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        """The error diagnostics only."""
        return tuple(d for d in self.diagnostics if d.is_error)

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        """The warning diagnostics only."""
        return tuple(d for d in self.diagnostics if not d.is_error)

    def raise_for_errors(self) -> None:
        """Raise ``CompileError`` with the rendered errors, if there are any."""
        if self.ok:
            return
        errors = self.errors
        count = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
        raise CompileError(f"{count} in the .agent sources:\n\n{render_all(errors, color=False)}")


def compile_sources(sources: Mapping[str, str], *, jobs: int | None = 1) -> CompileResult:
    """Compile in-memory files keyed by relative path (``"main.agent"``, ``"lib/x.agent"``).

    ``jobs`` as for ``compile_project``.
    """
    files = [(_normalize(path), text) for path, text in sources.items()]
    return _compile([(path, SourceFile(path, text)) for path, text in files], [], jobs=jobs)


def compile_project(
    files: Sequence[Path],
    source_root: Path,
    *,
    display: Callable[[Path], str] | None = None,
    hashed: bool = True,
    documents: bool = True,
    jobs: int | None = 1,
) -> CompileResult:
    """Compile ``files`` from disk; their paths in the IR are relative to ``source_root``.

    Diagnostics name files by the same relative path unless ``display`` gives another (the
    CLI shows paths relative to the working directory, so that they can be clicked).
    ``hashed=False`` leaves the ``hash`` field of the documents empty; ``documents=False``
    builds no IR at all, for callers that only want the diagnostics (``auwgent check``): the
    result's ``documents`` is then empty. ``jobs`` above 1 lets a large project be compiled
    in that many processes (see ``parallel.py``), ``None`` in one per usable CPU; the result
    is the same.
    """
    loaded: list[tuple[str, SourceFile]] = []
    problems: list[Diagnostic] = []
    root = source_root.resolve()  # once: resolving costs a system call per path component
    for path in files:
        rel = _relative(path, root)
        shown = display(path) if display else rel
        if _not_utf8(rel):
            # The path goes into the IR ("source") and the generated module names; a name the
            # file system gave as undecodable bytes cannot be written to either.
            problems.append(_unreadable(shown, "its name is not valid UTF-8; rename the file"))
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            problems.append(_unreadable(shown, f"it is not UTF-8 text (byte {exc.start})"))
            continue
        except OSError as exc:
            problems.append(_unreadable(shown, exc.strerror or str(exc)))
            continue
        loaded.append((rel, SourceFile(shown, text)))
    return _compile(loaded, problems, hashed, documents, jobs)


def _not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _unreadable(shown: str, reason: str) -> Diagnostic:
    # Same code and wording as the front end's reader, so both paths report alike.
    return error("E0000", f"cannot read {shown}: {reason}", SourceFile(shown, ""), Span(0, 0))


def _compile(
    files: list[tuple[str, SourceFile]],
    problems: list[Diagnostic],
    hashed: bool = True,
    documents: bool = True,
    jobs: int | None = 1,
) -> CompileResult:
    # The front end builds hundreds of thousands of small objects that all stay alive until
    # the end, and the syntax tree has no reference cycles; the cyclic collector would walk
    # them again and again for nothing (about a third of a cold `auwgent check`). Pause it,
    # and restore the caller's setting afterwards.
    paused = gc.isenabled()
    gc.disable()
    try:
        files = sorted(files, key=lambda item: item[0])
        # Syntax trees by path: when a split compile falls back to one process, the files
        # this process already parsed for its own share are not parsed again.
        parsed: dict[str, tuple[n.Module, list[Diagnostic]]] = {}
        compile_set = partial(_compile_set, hashed=hashed, documents=documents, parsed=parsed)
        outcome = compile_split(files, default_jobs() if jobs is None else jobs, compile_set)
        if outcome is None:
            outcome = compile_set(files, frozenset(path for path, _ in files))
    finally:
        if paused:
            gc.enable()
    diags = problems + outcome.diagnostics
    lowered = {} if any(d.is_error for d in diags) else dict(sorted(outcome.documents.items()))
    sources = {path: source for path, source in files}
    ordered = tuple(limit_per_file(sorted(diags, key=sort_key)))
    count = len(files) + len(problems)
    return CompileResult(lowered, ordered, count, outcome.agents, sources)


def _compile_set(
    files: Sequence[tuple[str, SourceFile]],
    owned: frozenset[str],
    *,
    hashed: bool,
    documents: bool,
    parsed: dict[str, tuple[n.Module, list[Diagnostic]]],
) -> Outcome:
    """Compile ``files`` (sorted by path); documents and agents only for ``owned`` paths."""
    diags: list[Diagnostic] = []
    modules: dict[str, n.Module] = {}
    broken: set[str] = set()
    for path, source in files:
        if path not in parsed:
            parsed[path] = parse(source)
        module, parse_diags = parsed[path]
        modules[path] = module
        diags.extend(parse_diags)
        if any(d.is_error for d in parse_diags):
            broken.add(path)
    agents = sum(1 for p in owned for a in modules[p].agents if not a.is_helper)
    graph = resolve_modules(modules)
    diags.extend(graph.diagnostics)
    diags.extend(check(graph, broken))
    lowered: dict[str, Document] = {}
    if not any(d.is_error for d in diags):
        for path in sorted(owned):
            if not documents:  # the lowering's own checks only, without building the IR
                diags.extend(name_clashes(graph, path) or ())
                continue
            result = lower_file(graph, path, hashed=hashed)
            if result is not None:
                diags.extend(result.diagnostics)
                if result.document is not None:
                    lowered[path] = result.document
    return Outcome(diags, lowered, agents)


def _normalize(path: str) -> str:
    return posixpath.normpath(path.replace("\\", "/"))


def _relative(path: Path, root: Path) -> str:
    """``path`` relative to the already resolved ``root``, ``/``-separated."""
    try:
        return path.resolve().relative_to(root).as_posix()
    except RuntimeError:  # a symlink loop cannot be resolved; reading it reports the problem
        return Path(os.path.relpath(os.path.abspath(path), root)).as_posix()
    except ValueError:
        return path.as_posix()

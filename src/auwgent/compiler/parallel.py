"""Compiling a large project on several cores.

A file's diagnostics depend only on the file itself and on what it imports, directly or not
(its *closure*), with three exceptions, all errors: the help of an unknown-name error lists
exports of any file in the project, an import of a missing file suggests the project's file
names, and one custom provider id may not be given two base URLs anywhere in the project. So the files are split into *shares*: each share is compiled in its
own forked process together with the closures of its files (a library imported by files of
two shares is read in both), and the results are merged.

The split is a plan, made before anything is parsed, from a cheap scan of each text for
``from "..."`` (imports) and ``custom(`` (custom providers, which all go to one share). The
scan may see too much (an import in a comment only costs time); if it misses an import, the
share lacks a file and reports an import error. A merged result is therefore only used when
no share found an error: then it is exactly what one process would have found (warnings are
local to a file and its closure). When a share finds an error, the whole project is compiled
again in one process, so that error messages are always those of a single compile. Projects
with errors are the slower case; clean projects, the common case of a large code base, are
checked in about the time of their largest share.

Workers are forked (``os.fork``), so they start in a millisecond with every module already
imported; where there is no ``fork``, or when the calling process runs other threads (a fork
copies only the calling thread, and a lock held by another one would never be released), the
compile stays in one process.
"""

from __future__ import annotations

import marshal
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ir.model import Document

from .._records import record
from .diagnostics import Diagnostic, Note, Severity
from .modules import normalize_import
from .source import SourceFile, Span

#: Below this many characters of source (about 2,000 lines) a fork costs more than it saves.
MIN_PARALLEL_CHARS = 64_000

# No `\b` at the front: a pattern that starts with a literal is found by a fast substring
# search (fifty times faster here), and a match inside a longer word only costs time.
_IMPORT_FROM = re.compile(r"""from\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')""")
_CUSTOM = re.compile(r"custom\s*\(")

Files = Sequence[tuple[str, SourceFile]]


@record
class Outcome:
    """What compiling a set of files found, for the files the set owns.

    ``diagnostics`` are unsorted; ``documents`` are IR documents by path; ``agents`` counts
    the ``agent`` blocks of the owned files.
    """

    diagnostics: list[Diagnostic]
    documents: dict[str, Document]
    agents: int


#: Compiles ``files``; only the paths in the set (the second argument) are the caller's own.
CompileSet = Callable[[Files, frozenset[str]], Outcome]


def default_jobs() -> int:
    """One process per CPU this process may run on.

    Not fewer on a busy machine: with a fair scheduler more processes get more of the CPU, and
    measured here a split was as fast as one process with one other busy program, 20% faster
    with two, and 35% faster with none.
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def compile_split(files: Files, jobs: int, compile_set: CompileSet) -> Outcome | None:
    """Compile ``files`` in up to ``jobs`` processes; None when it cannot be done that way.

    None means the caller should compile in one process: the project is too small, there is
    one core or one share, forking is not possible or safe here, a worker failed, or a share
    found an error (see the module docstring).
    """
    threading = sys.modules.get("threading")  # not imported: no thread was started with it
    if jobs < 2 or not hasattr(os, "fork") or (threading and threading.active_count() > 1):
        return None
    if sum(len(source.text) for _, source in files) < MIN_PARALLEL_CHARS:
        return None
    shares = plan(files, jobs)
    if len(shares) < 2:
        return None
    children = [_fork(_subset(files, paths), own, compile_set) for own, paths in shares[1:]]
    outcomes: list[Outcome | None] = []
    try:
        own, paths = shares[0]
        outcomes.append(compile_set(_subset(files, paths), own))
    finally:
        # Collect the children even when this process failed; when its own share has an
        # error the whole project is compiled again anyway, so stop them at once rather than
        # let them compete with that compile.
        mine = outcomes[0] if outcomes else None
        if mine is None or _has_error(mine):
            for pid, _ in children:
                os.kill(pid, signal.SIGKILL)
        sources = {source.path: source for _, source in files}
        outcomes.extend(_collect(pid, read, sources) for pid, read in children)
    return _merge(outcomes)


def plan(files: Files, jobs: int) -> list[tuple[frozenset[str], frozenset[str]]]:
    """Split ``files`` into at most ``jobs`` shares of similar cost: (owned, compiled) paths.

    A share compiles its own files and their closures; its cost is the size of that text.
    Files that name a custom provider form one unit. Units are placed largest first, each
    into the share where the total stays smallest (so files sharing libraries go together).
    """
    texts = {path: source.text for path, source in files}
    edges = {path: _imports(path, text, texts) for path, text in texts.items()}
    custom = {path for path, text in texts.items() if _CUSTOM.search(text)}
    units = ([custom] if custom else []) + [{path} for path in sorted(texts) if path not in custom]
    placed = [(unit, _closure(unit, edges)) for unit in units]

    def size(paths: set[str]) -> int:
        return sum(len(texts[path]) for path in paths)

    shares: list[tuple[set[str], set[str]]] = [(set(), set()) for _ in range(jobs)]
    costs = [0] * jobs
    for unit, reach in sorted(placed, key=lambda pair: -size(pair[1])):
        added = [size(reach - compiled) for _, compiled in shares]
        totals = [(cost + add, add) for cost, add in zip(costs, added, strict=True)]
        best = totals.index(min(totals))
        shares[best][0].update(unit)
        shares[best][1].update(reach)
        costs[best] += added[best]
    return [(frozenset(own), frozenset(reach)) for own, reach in shares if own]


def _imports(path: str, text: str, known: dict[str, str]) -> set[str]:
    """The project files ``text`` seems to import (more is harmless, see the docstring)."""
    found = set()
    for double, single in _IMPORT_FROM.findall(text):
        target = normalize_import(path, double or single)
        if target in known:
            found.add(target)
    return found


def _closure(paths: set[str], edges: dict[str, set[str]]) -> set[str]:
    """``paths`` and every file they import, directly or not."""
    seen = set(paths)
    todo = list(paths)
    while todo:
        for target in edges[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _subset(files: Files, paths: frozenset[str]) -> list[tuple[str, SourceFile]]:
    """The files among ``paths``, in input order."""
    return [(path, source) for path, source in files if path in paths]


def _fork(files: Files, owned: frozenset[str], compile_set: CompileSet) -> tuple[int, int]:
    """Start a worker compiling ``files`` for ``owned``: its process id and pipe's read end."""
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    # The worker: compile, send the outcome, and end without running any cleanup that
    # belongs to the parent (atexit handlers, buffered output, temporary files).
    status = 1
    try:
        os.close(read)
        outcome = compile_set(files, owned)
        with os.fdopen(write, "wb") as pipe:
            pipe.write(marshal.dumps(_to_wire(outcome)))
        status = 0
    finally:
        os._exit(status)


def _collect(pid: int, read: int, sources: dict[str, SourceFile]) -> Outcome | None:
    """The outcome a worker sent; None if it failed."""
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return None
    try:
        return _from_wire(marshal.loads(data), sources)
    except (ValueError, EOFError, TypeError, KeyError):  # unreadable: compile in one process
        return None


def _merge(outcomes: list[Outcome | None]) -> Outcome | None:
    """One outcome from the shares', or None if any failed or found an error."""
    diagnostics: list[Diagnostic] = []
    documents: dict[str, Document] = {}
    seen: set[tuple[str, str, Span, str]] = set()
    for outcome in outcomes:
        if outcome is None or _has_error(outcome):
            return None
        for diag in outcome.diagnostics:
            key = (diag.code, diag.source.path, diag.span, diag.message)
            if key not in seen:  # a file read by two shares is reported by both
                seen.add(key)
                diagnostics.append(diag)
        documents.update(outcome.documents)
    return Outcome(diagnostics, documents, sum(o.agents for o in outcomes if o))


def _has_error(outcome: Outcome) -> bool:
    return any(d.is_error for d in outcome.diagnostics)


# What crosses the pipe: plain values only (a diagnostic names its file by path), in the
# interpreter's own ``marshal`` format: built in, so nothing to import, and faster than pickle.
Wire = tuple[list[tuple[Any, ...]], "dict[str, Document]", int]


def _to_wire(outcome: Outcome) -> Wire:
    diagnostics = [
        (
            d.code,
            d.severity.value,
            d.message,
            d.source.path,
            (d.span.start, d.span.end),
            tuple(
                (note.message, note.span and (note.span.start, note.span.end)) for note in d.notes
            ),
            d.help,
        )
        for d in outcome.diagnostics
    ]
    return diagnostics, outcome.documents, outcome.agents


def _from_wire(wire: Wire, sources: dict[str, SourceFile]) -> Outcome:
    diagnostics, documents, agents = wire
    return Outcome(
        [
            Diagnostic(
                code,
                Severity(severity),
                message,
                sources[path],
                Span(*span),
                tuple(Note(text, Span(*at) if at else None) for text, at in notes),
                help,
            )
            for code, severity, message, path, span, notes, help in diagnostics
        ],
        documents,
        agents,
    )

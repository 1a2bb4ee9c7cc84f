"""The checker: every rule a ``.agent`` project must satisfy before anything runs.

It walks the module graph file by file and collects diagnostics with stable codes
(``E2xxx`` errors, ``W2xxx`` warnings; docs/checker.md lists them all with examples). Names are
resolved in the scope of the file that wrote them, so a helper imported from another file is
checked against its own imports.

A package of rule modules over one :class:`~.context.Context`:

- ``context``: the current file, reporting, name lookup, type resolution;
- ``types``: the checker's view of types; ``exprs``: expressions and workflow bodies;
- ``prompts``: models, configs' values and prompts;
- ``agents``: files, agents and helpers (configs, context, tools, workflows, intents);
- ``tests``: ``test`` blocks.

Every import points down that list: a rule module never imports one listed after it.
"""

from __future__ import annotations

from collections.abc import Collection

from .. import nodes as n
from ..diagnostics import Diagnostic, sort_key, suggestion_budget
from ..modules import ModuleGraph
from . import agents, tests
from .context import CheckState, Context

__all__ = ["check"]


def check(graph: ModuleGraph, skip: Collection[str] = ()) -> tuple[Diagnostic, ...]:
    """Check every file of ``graph``; return the diagnostics sorted by file and position.

    Files in ``skip`` (those with syntax errors) are not checked themselves: a half-parsed
    block would only produce follow-on errors. Their declarations still resolve for others.
    """
    state = CheckState(graph)
    if not graph.scopes:
        return ()
    cx = Context(state)
    agents.build_type_table(cx)
    for path in sorted(graph.scopes):
        if path not in skip:
            with cx.in_file(path), suggestion_budget(cx.source):
                agents.check_file(cx)
    for path in sorted(graph.scopes):
        if path not in skip:
            with cx.in_file(path):
                for decl in cx.scope.module.decls:
                    if isinstance(decl, n.TestDecl):
                        tests.check_test(cx, decl)
    agents.unused_warnings(cx, skip)
    # The expression checker reports through a bound method of the context: a reference
    # cycle that would keep every syntax tree alive until the next full garbage collection.
    del cx.exprs
    broken = {graph.scope(path).module.source.path for path in skip}
    kept = [d for d in state.diagnostics if d.source.path not in broken]
    unique = {(d.code, d.source.path, d.span, d.message): d for d in kept}
    return tuple(sorted(unique.values(), key=sort_key))

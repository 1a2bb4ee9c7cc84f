"""``test`` blocks as plain data for the test runner (``auwgent test``).

Tests are checked like everything else (see ``checker.tests``) but are not part of any IR
document: an agent's compiled output is the same with or without them. This module turns the
``test`` blocks of checked files into JSON-like specs::

    {"name", "file", "line", "agent", "config", "persona", "context", "input", "cassette",
     "replies": [{"kind": "call", "name", "args"} | {"kind": "say", "text"}
                 | {"kind": "output", "value"}] | None,
     "tools": {name: result},
     "expects": [{"kind": "called" | "not_called", "name", "args" | None}
                 | {"kind": "text", "contains"} | {"kind": "output", "value"}
                 | {"kind": "error", "contains" | None} | {"kind": "intent", "name", "fields"}]}
"""

from __future__ import annotations

from typing import Any

from . import nodes as n
from .lower import const_value

__all__ = ["collect_tests"]

JSON = dict[str, Any]


def collect_tests(module: n.Module, path: str) -> list[JSON]:
    """The specs of the ``test`` blocks of one checked ``module`` (at ``path``)."""
    return [_spec(d, module, path) for d in module.decls if isinstance(d, n.TestDecl)]


def _spec(decl: n.TestDecl, module: n.Module, path: str) -> JSON:
    line, _ = module.source.line_col(decl.span.start)
    return {
        "name": decl.name.value,
        "file": path,
        "line": line,
        "agent": _name(decl, "agent"),
        "config": _name(decl, "config"),
        "persona": _name(decl, "persona"),
        "context": _context(decl),
        "input": _string(decl, "input"),
        "cassette": _string(decl, "cassette"),
        "replies": None if decl.replies is None else [_reply(r) for r in decl.replies],
        "tools": {t.name.text: const_value(t.value) for t in decl.tools},
        "expects": [_expect(e) for e in decl.expects],
    }


def _term(decl: n.TestDecl, key: str) -> n.ConfigTerm | None:
    entry = decl.entry(key)
    return entry.value.terms[0] if entry is not None else None


def _name(decl: n.TestDecl, key: str) -> str | None:
    term = _term(decl, key)
    return term.name if isinstance(term, n.NameRef) else None


def _string(decl: n.TestDecl, key: str) -> str | None:
    term = _term(decl, key)
    return term.string.value if isinstance(term, n.PromptText) else None


def _context(decl: n.TestDecl) -> JSON:
    term = _term(decl, "context")
    value = const_value(term) if isinstance(term, n.ObjectExpr) else None
    return value if isinstance(value, dict) else {}


def _args(args: tuple[n.ExampleArg, ...]) -> JSON:
    return {arg.name.text: const_value(arg.value) for arg in args}


def _reply(reply: n.TestReply) -> JSON:
    if reply.kind == "call":
        assert reply.name is not None
        return {"kind": "call", "name": reply.name.text, "args": _args(reply.args)}
    value = const_value(reply.value) if reply.value is not None else None
    if reply.kind == "say":
        return {"kind": "say", "text": value}
    return {"kind": "output", "value": value}


def _expect(expect: n.TestExpect) -> JSON:
    value = const_value(expect.value) if expect.value is not None else None
    name = expect.name.text if expect.name is not None else None
    match expect.kind:
        case "called" | "not_called":
            args = _args(expect.args) if expect.args is not None else None
            return {"kind": expect.kind, "name": name, "args": args}
        case "text":
            return {"kind": "text", "contains": value}
        case "error":
            return {"kind": "error", "contains": value}
        case "intent":
            return {"kind": "intent", "name": name, "fields": value}
    return {"kind": "output", "value": value}

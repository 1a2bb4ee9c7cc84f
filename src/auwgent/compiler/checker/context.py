"""The context every rule module of the checker works over.

:class:`Context` is the current file, reporting (errors and warnings with stable codes), name
lookup in the file's scope, type resolution and the small checks several constructs share;
:class:`CheckState` is what accumulates across files. The rule modules (``prompts``,
``agents``, ``tests``) are functions of a context; none of them holds state of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...ir.vocabulary import provider_arity
from .. import nodes as n
from ..diagnostics import (
    Diagnostic,
    Note,
    did_you_mean,
    error,
    suggest,
    warning,
)
from ..modules import FileScope, InFile, ModuleGraph, Symbol, is_exported, relative_spec
from ..source import SourceFile, Span
from .exprs import Env, ExprChecker
from .types import PRIMS, TEXT, UNKNOWN, Arr, FieldTy, Lit, Named, Obj, Ty, union_of

#: Where each taint annotation goes (checker/taint.py checks them; E2130 elsewhere).
TAINT_PLACES = {
    "untrusted": "a tool",
    "sensitive": "a tool",
    "trusted": "an `mcp` server (after its closing brace)",
    "quarantine": "a helper (after its closing brace)",
}

PROVIDERS = provider_arity()

#: Type names from other languages (lower-cased) and the built-in type the user meant:
#: `String`, `int` or `bool` are not declared types, so E2010 suggests `string`, `number`...
_BUILTIN_ALIASES = {
    **dict.fromkeys(("string", "str", "char", "varchar"), "string"),
    **dict.fromkeys(("number", "int", "integer", "float", "double", "decimal", "long"), "number"),
    **dict.fromkeys(("boolean", "bool"), "boolean"),
    "text": "Text",
}

#: Human words for the kind a reference must have, keyed by the declaring keyword.
KIND_CODES = {
    "model": "E2011",
    "mcp": "E2111",
    "prompt": "E2012",
    "helper": "E2013",
    "intent": "E2014",
    "persona": "E2090",
    "type": "E2010",
    "tools": "E2120",
}


class CheckState:
    """Everything the checker accumulates across files."""

    # A plain class: `auwgent check` never imports dataclasses (see auwgent/_records.py).
    __slots__ = (
        "graph",
        "diagnostics",
        "used_keys",
        "used_imports",
        "types",
        "prompt_uses",
        "custom_urls",
    )

    def __init__(self, graph: ModuleGraph) -> None:
        self.graph = graph
        self.diagnostics: list[Diagnostic] = []
        self.used_keys: set[str] = set()
        self.used_imports: set[tuple[str, str]] = set()
        self.types: dict[str, Obj] = {}
        self.prompt_uses: set[tuple[str, str]] = set()
        self.custom_urls: dict[str, tuple[str, str]] = {}


class Context:
    """The one context every rule module works over: the current file, reporting, name lookup
    and type resolution, and the state accumulated across files (``state``)."""

    def __init__(self, state: CheckState) -> None:
        self.state = state
        # Any file will do until ``in_file`` picks the one being checked.
        self.scope: FileScope = next(iter(state.graph.scopes.values()))
        self.exprs = ExprChecker(self.report, state.types)
        self._kind_names: dict[tuple[str, str], list[str]] = {}
        self._exporters: dict[tuple[str, str], list[str]] | None = None

    # -- where we are and what we say ----------------------------------------------------

    @property
    def source(self) -> SourceFile:
        """The file being checked."""
        return self.scope.module.source

    def in_file(self, path: str) -> InFile:
        """Check in the scope of another file for the duration of the ``with`` block."""
        return InFile(self, self.state.graph.scope(path))

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        *,
        help: str | None = None,
        notes: Sequence[Note] = (),
    ) -> None:
        """Add an error at ``span`` in the current file."""
        self.state.diagnostics.append(
            error(code, message, self.source, span, notes=notes, help=help)
        )

    def warn(
        self,
        code: str,
        message: str,
        span: Span,
        *,
        help: str | None = None,
        notes: Sequence[Note] = (),
    ) -> None:
        """Add a warning at ``span`` in the current file."""
        self.state.diagnostics.append(
            warning(code, message, self.source, span, notes=notes, help=help)
        )

    # -- names ---------------------------------------------------------------------------

    def lookup(self, name: str) -> Symbol | None:
        """Resolve a top-level name in the current file and record the use."""
        symbol = self.scope.lookup(name)
        if symbol is not None:
            self.state.used_keys.add(symbol.key)
            if name in self.scope.imported and name not in self.scope.local:
                self.state.used_imports.add((self.scope.path, name))
        return symbol

    def lookup_kind(self, name: str, span: Span, kind: str) -> Symbol | None:
        """Resolve ``name`` to a declaration of ``kind``, reporting anything else."""
        symbol = self.lookup(name)
        if symbol is not None and symbol.kind == kind:
            return symbol
        if symbol is None and name in self.scope.failed:
            return None  # the import already said why
        builtin = _BUILTIN_ALIASES.get(name.lower()) if kind == "type" and symbol is None else None
        close = None if builtin else suggest(name, self._names_of_kind(kind))
        meant = self.scope.lookup(close) if close is not None else None
        if meant is not None:
            # The user meant it: do not also warn that it is unused.
            self.state.used_keys.add(meant.key)
        elif kind == "type" and symbol is None and not builtin:
            builtin = suggest(name.lower(), ("string", "number", "boolean"))
        hint = f"did you mean `{close or builtin}`?" if close or builtin else None
        if symbol is not None:
            self.report("E2016", f"`{name}` is {_a(symbol.kind)}, not {_a(kind)}", span, help=hint)
            return None
        self.report(
            KIND_CODES.get(kind, "E2016"),
            f"unknown {_KIND_LABELS.get(kind, kind)} `{name}`",
            span,
            help=hint or self._import_help(name, kind) or self._kind_help(kind),
        )
        return None

    def _import_help(self, name: str, kind: str) -> str | None:
        """``add import { X } from "./y"`` when another file exports a ``kind`` called ``name``."""
        if self._exporters is None:  # by name and kind, in path order: built once, not per name
            self._exporters = {}
            for path, scope in sorted(self.state.graph.scopes.items()):
                for symbol in scope.local.values():
                    if is_exported(symbol.decl):
                        self._exporters.setdefault((symbol.name, symbol.kind), []).append(path)
        for path in self._exporters.get((name, kind), ())[:2]:  # (one may be this file)
            if path != self.scope.path:
                spec = relative_spec(self.scope.path, path)
                return f'{path} exports it: add `import {{ {name} }} from "{spec}"`'
        return None

    def _names_of_kind(self, kind: str) -> list[str]:
        """The names of the declarations of ``kind`` visible in this file, listed once per
        file and kind (each unknown name would otherwise list them all again)."""
        key = (self.scope.path, kind)
        names = self._kind_names.get(key)
        if names is None:
            visible = map(self.scope.lookup, self.scope.visible_names())
            names = [s.name for s in visible if s is not None and s.kind == kind]
            self._kind_names[key] = names
        return names

    @staticmethod
    def _kind_help(kind: str) -> str:
        return f"declare `{kind} ...` in this file, or import it from the file that exports it"

    # -- types ---------------------------------------------------------------------------

    def type_of(self, texpr: n.TypeExpr, *, allow_text: bool = False) -> Ty:
        """Resolve a written type in the current file, reporting unknown names."""
        # The cases are disjoint; the common ones come first. Plain isinstance tests cost
        # less than a `match` of class patterns (which also fetches the matched attributes).
        if isinstance(texpr, n.PrimitiveType):
            return PRIMS[texpr.name]
        if isinstance(texpr, n.NamedType):
            symbol = self.lookup_kind(texpr.name, texpr.span, "type")
            return Named(texpr.name, symbol.key) if symbol else UNKNOWN
        if isinstance(texpr, n.TextType):
            if not allow_text:
                self.report(
                    "E2028",
                    "`Text` can only be an agent's whole input or output",
                    texpr.span,
                    help="use `string` for a text value",
                )
                return UNKNOWN
            return TEXT
        if isinstance(texpr, n.LiteralType):
            return Lit(texpr.value)
        if isinstance(texpr, n.ArrayType):
            return Arr(self.type_of(texpr.element))
        if isinstance(texpr, n.ObjectType):
            return Obj(self.fields_of(texpr.fields))
        if isinstance(texpr, n.UnionType):
            return union_of([self.type_of(v) for v in texpr.variants])
        return UNKNOWN  # pragma: no cover - the tests above are exhaustive

    def fields_of(self, fields: tuple[n.Field, ...], what: str = "field") -> tuple[FieldTy, ...]:
        """Resolve fields, reporting duplicate names and repeated ``@desc``."""
        out: list[FieldTy] = []
        seen: dict[str, Span] = {}
        for item in fields:
            annotations = item.annotations
            if annotations:
                # Only two or more annotations can repeat `@desc`; skip building the message.
                if len(annotations) > 1:
                    self.single_desc(annotations, f"{what} `{item.name.text}`")
                for annotation in annotations:
                    if isinstance(annotation, n.ExampleAnnotation):
                        self.report(
                            "E2033",
                            f"`@example` does not apply to a {what}",
                            annotation.span,
                            help="put `@example(...)` on a tool or workflow",
                        )
                    elif isinstance(annotation, n.FlagAnnotation | n.SensitiveAnnotation):
                        self.misplaced_flag(annotation, what)
                    elif isinstance(annotation, n.McpAnnotation):
                        self.misplaced_mcp(annotation, f"a {what}")
                    elif isinstance(annotation, n.MaxOutputAnnotation):
                        self.report(
                            "E2140",
                            f"`@maxOutput` does not apply to a {what}",
                            annotation.span,
                            help="put `@maxOutput(N)` on a tool",
                        )
                    elif isinstance(annotation, n.ApprovalAnnotation):
                        self.report(
                            "E2034",
                            f"`@approval` does not apply to a {what}",
                            annotation.span,
                            help="put `@approval` on a tool, a workflow or a helper's line in "
                            "`helpers { }`",
                        )
            ty = self.type_of(item.type)
            name = item.name
            if name.text in seen:
                self.duplicate(name, seen, what)  # reports it
                continue
            seen[name.text] = name.span  # (what `duplicate` does for a new name)
            out.append(FieldTy(name.text, ty, item.optional))
        return tuple(out)

    def duplicate(self, name: n.Name, seen: dict[str, Span], what: str) -> bool:
        """Report ``name`` if already in ``seen`` (E2001); otherwise remember it."""
        first = seen.get(name.text)
        if first is None:
            seen[name.text] = name.span
            return False
        self.report(
            "E2001",
            f"{what} `{name.text}` is declared more than once",
            name.span,
            notes=[Note("first declared here", first)],
            help="rename or remove one of them",
        )
        return True

    def misplaced_mcp(self, annotation: n.McpAnnotation, what: str) -> None:
        """``@mcp`` anywhere but on a tool."""
        self.report(
            "E2112",
            f"`@mcp` does not apply to {what}",
            annotation.span,
            help="only a tool can live on an MCP server: put `@mcp(Name)` on a `tool`",
        )

    def misplaced_flag(
        self, annotation: n.FlagAnnotation | n.SensitiveAnnotation, what: str
    ) -> None:
        if annotation.name in TAINT_PLACES:  # the taint annotations (docs/security.md)
            self.report(
                "E2130",
                f"`@{annotation.name}` does not apply to a {what}",
                annotation.span,
                help=f"`@{annotation.name}` goes on {TAINT_PLACES[annotation.name]}",
            )
            return
        self.report(
            "E2033",
            f"`@{annotation.name}` does not apply to a {what}",
            annotation.span,
            help=f"put `@{annotation.name}` on a tool",
        )

    def single_desc(self, annotations: tuple[n.Annotation, ...], what: str) -> None:
        """Report every ``@desc`` after the first one."""
        descs = [a for a in annotations if isinstance(a, n.DescAnnotation)]
        for extra in descs[1:]:
            self.report(
                "E2033",
                f"{what} has more than one `@desc`",
                extra.span,
                notes=[Note("first `@desc` here", descs[0].span)],
                help="join the descriptions into one",
            )

    def check_approval(self, annotations: tuple[n.Annotation, ...], what: str) -> None:
        """``@approval`` at most once, with only a positive number ``timeout``."""
        approvals = [a for a in annotations if isinstance(a, n.ApprovalAnnotation)]
        for extra in approvals[1:]:
            self.report(
                "E2034",
                f"{what} has more than one `@approval`",
                extra.span,
                notes=[Note("first `@approval` here", approvals[0].span)],
                help="keep one `@approval` (give it the timeout you want)",
            )
        seen: dict[str, Span] = {}
        for arg in (approvals[0].args or ()) if approvals else ():
            if arg.name.text != "timeout":
                self.report(
                    "E2034",
                    f"`@approval` has no argument `{arg.name.text}`",
                    arg.name.span,
                    help=did_you_mean(arg.name.text, ("timeout",))
                    or "its only argument is `timeout`, in seconds: `@approval(timeout = 300)`",
                )
            elif not self.duplicate(arg.name, seen, "`@approval` argument"):
                self._approval_timeout(arg.value)

    def _approval_timeout(self, value: n.Expr) -> None:
        number = self.constant(value, "the approval timeout")
        if number is None:
            return  # already reported
        if isinstance(number, bool) or not isinstance(number, int | float) or number <= 0:
            self.report(
                "E2034",
                "the approval timeout must be a positive number of seconds, got "
                + json.dumps(number),
                value.span,
                help="write e.g. `@approval(timeout = 300)`; leave `timeout` out for the "
                "runtime's default",
            )

    # -- constants (provider options, @example values) ----------------------------------

    def constant(self, expr: n.Expr, what: str) -> Any:
        """The JSON value of a literal expression, or report it (E2031) and return None."""
        match expr:
            case n.Literal(value=value):
                return value
            case n.Unary(op="-", operand=n.Literal(value=value)) if isinstance(
                value, int | float
            ) and not isinstance(value, bool):
                return -value
            case n.ArrayExpr(items=items):
                return [self.constant(item, what) for item in items]
            case n.ObjectExpr(entries=entries):
                seen: dict[str, Span] = {}
                out: dict[str, Any] = {}
                for entry in entries:
                    if not self.duplicate(entry.key, seen, "key"):
                        out[entry.key.text] = self.constant(entry.value, what)
                return out
        self.report(
            "E2031",
            f"{what} must be a literal value",
            expr.span,
            help="write a string, number, boolean, null, array or object literal",
        )
        return None


_KIND_LABELS = {"mcp": "MCP server", "tools": "tool group"}


def _a(word: str) -> str:
    word = _KIND_LABELS.get(word, word)
    return ("an " if word[0] in "aeiouM" else "a ") + word


def env_for_prompt(params: tuple[FieldTy, ...], ctx: dict[str, Ty] | None) -> Env:
    """The environment of a prompt body or argument: its parameters and maybe ``ctx``."""
    return Env([{p.name: p.ty for p in params}], ctx, tools=None, strict=False)


__all__ = ["PROVIDERS", "CheckState", "Context", "env_for_prompt"]

"""Checking ``test`` blocks: every name a test uses must exist in the agent it tests, and every
value must fit its declared type, so a test cannot silently test nothing.

Codes: E2101 (the test block's own shape), E2102 (a name the tested agent does not have),
E2103 (a value of the wrong type). The names come from the agent and, recursively, its
helpers: the scripted model answers every model call of the run, a helper's included.
"""

from __future__ import annotations

from .. import nodes as n
from ..diagnostics import did_you_mean
from ..members import agent_parts
from ..modules import Symbol
from ..source import Span
from .context import Context
from .exprs import Env
from .types import UNKNOWN, FieldTy, Ty, assignable

__all__ = ["TEST_FIELDS", "check_test", "find_agent"]

TEST_FIELDS = ("agent", "input", "context", "config", "persona", "cassette")
BUILTIN_INTENTS = (
    "response_text",
    "response_schema",
    "tool_call",
    "tool_result",
    "tool_error",
    "workflow_call",
    "workflow_result",
    "helper_call",
    "helper_result",
    "handoff_complete",
    "error",
)


class _Callable:
    __slots__ = ("kind", "params", "returns")

    def __init__(self, kind: str, params: tuple[FieldTy, ...], returns: Ty) -> None:
        self.kind = kind
        self.params = params
        self.returns = returns


class _Surface:
    """What a test may name in one agent and its helpers (types resolved in their files)."""

    def __init__(self, ck: Context, symbol: Symbol) -> None:
        self.callables: dict[str, _Callable] = {}
        self.tools: set[str] = set()
        self.configs: set[str] = set()
        self.personas: set[str] = set()
        self.intents: set[str] = set(BUILTIN_INTENTS)
        self.context: dict[str, Ty] = {}
        self.output: Ty = UNKNOWN
        self._walk(ck, symbol, root=True, seen=set())

    def _walk(self, ck: Context, symbol: Symbol, *, root: bool, seen: set[str]) -> None:
        if symbol.key in seen or not isinstance(symbol.decl, n.AgentDecl):
            return
        seen.add(symbol.key)
        decl = symbol.decl
        with ck.in_file(symbol.path):
            parts = agent_parts(decl)
            tools = list(parts.tools) + [t for w in parts.workflows for t in w.tools]
            for tool in tools:
                self._add(ck, "tool", tool.name.text, tool.params, tool.returns)
                self.tools.add(tool.name.text)
            for group in ck.scope.groups(parts.groups):
                assert isinstance(group.decl, n.ToolGroupDecl)
                with ck.in_file(group.path):
                    for tool in group.decl.tools:
                        self._add(ck, "tool", tool.name.text, tool.params, tool.returns)
                        self.tools.add(tool.name.text)
            for workflow in parts.workflows:
                self._add(ck, "workflow", workflow.name.text, workflow.params, workflow.returns)
            for intent in parts.intents[:1]:
                for item in intent.items:
                    self.intents.add(item.name if isinstance(item, n.NameRef) else item.name.text)
            if root:
                self.configs = {c.name.text for c in parts.configs if c.name is not None}
                self.personas = {p.text for b in parts.personas[:1] for p in b.names}
                for context in parts.contexts[:1]:
                    self.context = {f.name: f.ty for f in ck.fields_of(context.fields)}
                if parts.outputs:
                    self.output = ck.type_of(parts.outputs[0].type, allow_text=True)
            helpers = [use for block in parts.helpers[:1] for use in block.uses]
            found = [(use.name.text, ck.scope.lookup(use.name.text)) for use in helpers]
        for name, helper in found:
            self.callables.setdefault(name, _Callable("helper", (), UNKNOWN))
            if helper is not None:
                self._walk(ck, helper, root=False, seen=seen)

    def _add(
        self,
        ck: Context,
        kind: str,
        name: str,
        params: tuple[n.Field, ...],
        returns: n.TypeExpr | None,
    ) -> None:
        if name not in self.callables:
            ret = ck.type_of(returns) if returns is not None else UNKNOWN
            self.callables[name] = _Callable(kind, ck.fields_of(params, "parameter"), ret)


def find_agent(ck: Context, name: str) -> Symbol | None:
    """The agent ``name``: declared in this file, else the root agent of another file."""
    local = ck.scope.local.get(name)
    if local is not None and isinstance(local.decl, n.AgentDecl):
        return local
    for path in sorted(ck.state.graph.scopes):
        symbol = ck.state.graph.scope(path).local.get(name)
        if (
            symbol is not None
            and isinstance(symbol.decl, n.AgentDecl)
            and not symbol.decl.is_helper
        ):
            return symbol
    return None


def check_test(ck: Context, decl: n.TestDecl) -> None:
    """Every rule for one ``test`` block."""
    label = f"test {decl.name.value!r}"
    seen: dict[str, Span] = {}
    for entry in decl.entries:
        if ck.duplicate(entry.name, seen, "test field"):
            continue
        if entry.name.text not in TEST_FIELDS:
            ck.report(
                "E2101",
                f"unknown test field `{entry.name.text}`",
                entry.name.span,
                help=did_you_mean(entry.name.text, TEST_FIELDS)
                or "test fields: " + ", ".join(TEST_FIELDS),
            )
    for required in ("agent", "input"):
        if required not in seen:
            ck.report(
                "E2101",
                f"{label} has no `{required}:`",
                decl.name.span,
                help='e.g. `agent: Main` and `input: "What is the weather in Accra?"`',
            )
    cassette = decl.entry("cassette")
    if (decl.replies is None) == (cassette is None):
        ck.report(
            "E2101",
            f"{label} needs exactly one of `model {{ ... }}` and `cassette:`",
            cassette.span if cassette else decl.name.span,
            help="script the model's replies in `model { }`, or replay a recorded cassette",
        )
    _string_entry(ck, decl, "input")
    _string_entry(ck, decl, "cassette")
    agent_entry = decl.entry("agent")
    if agent_entry is None:
        return
    term = agent_entry.value.terms[0] if len(agent_entry.value.terms) == 1 else None
    if not isinstance(term, n.NameRef):
        ck.report("E2101", "`agent:` takes the name of an agent", agent_entry.value.span)
        return
    symbol = find_agent(ck, term.name)
    if symbol is None:
        agents = [
            s.name
            for scope in ck.state.graph.scopes.values()
            for s in scope.local.values()
            if isinstance(s.decl, n.AgentDecl) and not s.decl.is_helper
        ]
        ck.report(
            "E2102",
            f"unknown agent `{term.name}`",
            term.span,
            help=did_you_mean(term.name, agents)
            or "name an agent of this project (helpers are tested through their agent)",
        )
        return
    surface = _Surface(ck, symbol)
    _named_entry(ck, decl, "config", surface.configs, "named config")
    _named_entry(ck, decl, "persona", surface.personas, "persona")
    _context(ck, decl, surface)
    for reply in decl.replies or ():
        _reply(ck, reply, surface)
    for result in decl.tools:
        tool = surface.callables.get(result.name.text)
        if result.name.text not in surface.tools or tool is None:
            _unknown(ck, result.name, "tool", surface.tools)
            continue
        _value(ck, result.value, tool.returns, f"the result of `{result.name.text}`")
    for expect in decl.expects:
        _expectation(ck, expect, surface)


def _string_entry(ck: Context, decl: n.TestDecl, key: str) -> None:
    entry = decl.entry(key)
    if entry is None:
        return
    term = entry.value.terms[0] if len(entry.value.terms) == 1 else None
    if not isinstance(term, n.PromptText):
        ck.report("E2103", f"`{key}:` takes a string", entry.value.span)


def _named_entry(ck: Context, decl: n.TestDecl, key: str, valid: set[str], what: str) -> None:
    entry = decl.entry(key)
    if entry is None:
        return
    term = entry.value.terms[0] if len(entry.value.terms) == 1 else None
    if not isinstance(term, n.NameRef):
        ck.report("E2101", f"`{key}:` takes the name of a {what}", entry.value.span)
    elif term.name not in valid:
        _unknown(ck, n.Name(term.name, term.span), what, valid)


def _context(ck: Context, decl: n.TestDecl, surface: _Surface) -> None:
    entry = decl.entry("context")
    if entry is None:
        return
    term = entry.value.terms[0] if len(entry.value.terms) == 1 else None
    if not isinstance(term, n.ObjectExpr):
        ck.report("E2103", "`context:` takes an object, e.g. `{ is_admin: false }`", entry.span)
        return
    for item in term.entries:
        ty = surface.context.get(item.key.text)
        if ty is None:
            _unknown(ck, item.key, "context field", set(surface.context))
        else:
            _value(ck, item.value, ty, f"context `{item.key.text}`")


def _reply(ck: Context, reply: n.TestReply, surface: _Surface) -> None:
    if reply.kind == "call":
        assert reply.name is not None
        _call_args(ck, reply.name, reply.args, surface, complete=True)
    elif reply.kind == "output" and reply.value is not None:
        _value(ck, reply.value, surface.output, "the scripted output")


def _expectation(ck: Context, expect: n.TestExpect, surface: _Surface) -> None:
    if expect.kind in ("called", "not_called"):
        assert expect.name is not None
        _call_args(ck, expect.name, expect.args or (), surface, complete=False)
    elif expect.kind == "intent":
        assert expect.name is not None
        if expect.name.text not in surface.intents:
            _unknown(ck, expect.name, "intent", surface.intents)
        elif expect.value is not None:
            ck.constant(expect.value, "an expected intent payload")
    elif expect.kind == "output" and expect.value is not None:
        ck.constant(expect.value, "an expected output")


def _call_args(
    ck: Context,
    name: n.Name,
    args: tuple[n.ExampleArg, ...],
    surface: _Surface,
    *,
    complete: bool,
) -> None:
    found = surface.callables.get(name.text)
    if found is None:
        _unknown(ck, name, "tool, workflow or helper", set(surface.callables))
        return
    if found.kind == "helper":
        for arg in args:
            ck.constant(arg.value, "an argument")
        return
    params = {p.name: p for p in found.params}
    given: dict[str, Span] = {}
    for arg in args:
        if ck.duplicate(arg.name, given, "argument"):
            continue
        param = params.get(arg.name.text)
        if param is None:
            _unknown(ck, arg.name, "parameter", set(params), owner=f"`{name.text}`")
        else:
            _value(ck, arg.value, param.ty, f"argument `{arg.name.text}`")
    missing = [p.name for p in found.params if not p.optional and p.name not in given]
    if complete and missing:
        ck.report(
            "E2103",
            f"`call {name.text}` leaves out " + ", ".join(f"`{m}`" for m in missing),
            name.span,
            help="a scripted call should be one the model could make; give every required argument",
        )


def _value(ck: Context, expr: n.Expr, ty: Ty, what: str) -> None:
    before = len(ck.state.diagnostics)
    ck.constant(expr, f"{what} in a test")
    if len(ck.state.diagnostics) > before:
        return
    got = ck.exprs.type_of(expr, Env([{}], None, strict=False))
    if not assignable(got, ty, ck.state.types):
        ck.exprs.mismatch(got, ty, expr.span, code="E2103", what=what)


def _unknown(
    ck: Context, name: n.Name, what: str, valid: set[str], owner: str = "the tested agent"
) -> None:
    ck.report(
        "E2102",
        f"{owner} has no {what} `{name.text}`",
        name.span,
        help=did_you_mean(name.text, sorted(valid))
        or (f"valid: {', '.join(sorted(valid))}" if valid else None),
    )

"""What each name in a file is: the definitions and references the editor features use.

``index_file`` walks one file's syntax tree with its scope from the module graph and lists
every definition (top-level declarations, tools, workflows, context fields, parameters,
``let`` variables, fields) and every reference it can resolve: type names, models and
prompts in configs, helpers, intents, imported names, tool and workflow calls, ``ctx.x``,
parameters and variables. Each definition has a key unique in the project
(``lib/types.agent::Ticket``, ``main.agent::Main.lookup``), so hover, go to definition, find
references and rename across files all come down to finding a key.

Plain standard library: the language server builds on it, and its tests need no server.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from auwgent._records import field, record
from auwgent.compiler import FileScope, SourceFile, Span, kind_word
from auwgent.compiler import nodes as n

from .._records import record_fields

__all__ = ["PROMPT_CONTEXT", "Definition", "FileIndex", "Reference", "index_file"]

#: The key prefix of ``ctx.x`` in a top-level prompt: the context of whichever agent uses
#: the prompt, so no one definition (``ctx:x``).
PROMPT_CONTEXT = "ctx:"


@record
class Definition:
    """Something with a name: where it is declared and how to describe it."""

    key: str
    name: str
    kind: str  # model, type, prompt, intent, agent, helper, tool, workflow, field, ...
    path: str
    span: Span  # the name
    decl_span: Span  # the whole declaration
    signature: str
    doc: str | None = None
    container: str | None = None  # the enclosing agent or declaration, for symbols


@record
class Reference:
    """One use of a name that resolves to the definition ``key``."""

    key: str
    path: str
    span: Span


@record(frozen=False)
class FileIndex:
    """Definitions and references of one file; ``agents`` maps agent names to context keys."""

    path: str
    definitions: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    context: dict[str, list[Definition]] = field(default_factory=dict)

    def at(self, offset: int) -> str | None:
        """The key of the name at ``offset`` (a definition's name or a reference)."""
        found = self.span_at(offset)
        return found[0] if found else None

    def span_at(self, offset: int) -> tuple[str, Span] | None:
        """The key and span of the name at ``offset``."""
        for reference in self.references:
            if reference.span.start <= offset <= reference.span.end:
                return reference.key, reference.span
        for definition in self.definitions:
            if definition.span.start <= offset <= definition.span.end:
                return definition.key, definition.span
        return None


def index_file(scope: FileScope) -> FileIndex:
    """Index the file of ``scope`` (its module and what it imports)."""
    return _Indexer(scope).run()


def _signature_text(source: SourceFile, span: Span, limit: int = 12) -> str:
    """The source of ``span``, cut after ``limit`` lines."""
    lines = source.text[span.start : span.end].split("\n")
    if len(lines) > limit:
        lines = [*lines[:limit], "    ..."]
    return "\n".join(lines)


def _field_text(source: SourceFile, item: n.Field) -> str:
    return source.text[item.span.start : item.type.span.end]


class _Indexer:
    def __init__(self, scope: FileScope) -> None:
        self.scope = scope
        self.path = scope.path
        self.source = scope.module.source
        self.index = FileIndex(scope.path)

    def run(self) -> FileIndex:
        decls = self.scope.module.decls
        for decl in decls:
            if not isinstance(decl, n.TestDecl):
                self.decl(decl)
        defined = {d.key for d in self.index.definitions}
        for decl in decls:  # after the agents they test, wherever those stand
            if isinstance(decl, n.TestDecl):
                self.test(decl, defined)
        return self.index

    # -- recording -------------------------------------------------------------------------

    def define(
        self,
        key: str,
        name: n.Name,
        kind: str,
        decl_span: Span,
        signature: str,
        doc: str | None = None,
        container: str | None = None,
    ) -> Definition:
        found = Definition(
            key, name.text, kind, self.path, name.span, decl_span, signature, doc, container
        )
        self.index.definitions.append(found)
        return found

    def refer(self, key: str | None, span: Span) -> None:
        if key is not None:
            self.index.references.append(Reference(key, self.path, span))

    def top(self, name: str) -> str | None:
        symbol = self.scope.lookup(name)
        return f"{symbol.path}::{symbol.name}" if symbol is not None else None

    # -- declarations ----------------------------------------------------------------------

    def decl(self, decl: n.Decl) -> None:
        if isinstance(decl, n.ImportDecl):
            for name in decl.names:
                found = self.scope.imported.get(name.text)
                if found is not None and found.name is name:
                    self.refer(f"{found.symbol.path}::{name.text}", name.span)
            return
        if isinstance(decl, n.ToolDecl | n.ToolsBlock | n.WorkflowDecl | n.TestDecl):
            return  # outside an agent: the checker reports it; nothing to resolve
        key = f"{self.path}::{decl.name.text}"
        kind = kind_word(decl)
        if isinstance(decl, n.AgentDecl):
            self.agent(decl, key)
            return
        if isinstance(decl, n.ToolGroupDecl):
            self.define(key, decl.name, kind, decl.span, f"tools {decl.name.text}", None)
            for tool in decl.tools:
                self.tool(tool, f"{key}.{tool.name.text}", decl.name.text)
            return
        doc = None
        if isinstance(decl, n.IntentDecl) and decl.description is not None:
            doc = decl.description.text.value
        self.define(key, decl.name, kind, decl.span, self._signature(decl), doc)
        self.members(decl, key)

    def _signature(self, decl: n.Decl) -> str:
        """The declaration's header as hover shows it."""
        if isinstance(decl, n.PromptDecl | n.PersonaDecl):
            header_end = decl.name.span.end
            if isinstance(decl, n.PromptDecl) and decl.params:
                header_end = self.source.text.find(")", decl.params[-1].span.end) + 1
            return self.source.text[decl.span.start : header_end]
        return _signature_text(self.source, decl.span)

    def members(self, decl: n.Decl, key: str) -> None:
        """The fields, parameters and expressions inside a top-level declaration."""
        if isinstance(decl, n.TypeDecl | n.IntentDecl):
            self.fields(decl.fields, key, decl.name.text)
        elif isinstance(decl, n.PromptDecl):
            env = self.params(decl.params or (), key, decl.name.text)
            self.exprs(decl.items, env, None, None)
        elif isinstance(decl, n.PersonaDecl):
            self.exprs(decl.items, {}, None, None)
        elif isinstance(decl, n.ModelDecl):
            self.exprs(decl.entries, {}, {}, None)

    def test(self, decl: n.TestDecl, defined: set[str]) -> None:
        """A ``test`` block: its agent, persona and intents, and the tools (or workflows)
        it scripts, expects or stubs, when the agent is declared in this file."""
        self.exprs(decl.entries, {}, {}, None)
        entry = decl.entry("agent")
        term = entry.value.terms[0] if entry is not None and entry.value.terms else None
        agent = f"{self.path}::{term.name}" if isinstance(term, n.NameRef) else None
        names = [r.name for r in decl.replies or () if r.kind == "call"]
        names += [t.name for t in decl.tools]
        names += [e.name for e in decl.expects if e.kind in ("called", "not_called")]
        for name in filter(None, names):
            key = f"{agent}.{name.text}" if agent is not None else None
            self.refer(key if key in defined else None, name.span)
        for expect in decl.expects:
            if expect.kind == "intent" and expect.name is not None:
                self.refer(self.top(expect.name.text), expect.name.span)

    def fields(self, fields: Iterable[n.Field], owner: str, container: str) -> dict[str, str]:
        """Define ``fields`` (of a type, intent, context, object) and resolve their types."""
        return self.named_fields(fields, owner, "field", container)

    def params(self, params: Iterable[n.Field], owner: str, container: str) -> dict[str, str]:
        """Define the parameters of ``owner`` and resolve their types."""
        return self.named_fields(params, owner, "parameter", container)

    def named_fields(
        self, fields: Iterable[n.Field], owner: str, kind: str, container: str
    ) -> dict[str, str]:
        """Define fields (``owner.name``) or parameters (``owner(name)``); keys by name."""
        keys: dict[str, str] = {}
        for item in fields:
            name = item.name.text
            key = f"{owner}.{name}" if kind == "field" else f"{owner}({name})"
            keys.setdefault(name, key)
            desc = item.desc
            signature = _field_text(self.source, item)
            doc = desc.value if desc else None
            self.define(key, item.name, kind, item.span, signature, doc, container)
            self.types(item.type)
        return keys

    def types(self, node: object) -> None:
        for item in _walk(node):
            if isinstance(item, n.NamedType):
                self.refer(self.top(item.name), item.span)

    # -- agents and helpers ----------------------------------------------------------------

    def agent(self, decl: n.AgentDecl, key: str) -> None:
        name = decl.name.text
        self.define(key, decl.name, decl.kind, decl.span, f"{decl.kind} {name}", _describe(decl))
        callables: dict[str, str] = {}
        tools: list[n.ToolDecl] = []
        groups: list[n.Name] = []
        for member in decl.members:
            if isinstance(member, n.ToolDecl):
                tools.append(member)
            elif isinstance(member, n.ToolsBlock):
                tools.extend(member.tools)
                groups.extend(member.groups)
        for tool in tools:
            callables.setdefault(tool.name.text, self.tool(tool, f"{key}.{tool.name.text}", name))
        for group in groups:  # its tools are called by name like the agent's own
            self.refer(self.top(group.text), group.span)
            for symbol in self.scope.groups([group]):
                assert isinstance(symbol.decl, n.ToolGroupDecl)
                for tool in symbol.decl.tools:
                    callables.setdefault(tool.name.text, f"{symbol.key}.{tool.name.text}")
        workflows = [m for m in decl.members if isinstance(m, n.WorkflowDecl)]
        for flow in workflows:
            callables.setdefault(flow.name.text, f"{key}.{flow.name.text}")
        context: dict[str, str] = {}
        for member in decl.members:
            if isinstance(member, n.ContextBlock):
                for field_name, field_key in self.fields(member.fields, f"{key}.ctx", name).items():
                    context.setdefault(field_name, field_key)
        self.index.context[name] = [
            d for d in self.index.definitions if d.key.startswith(f"{key}.ctx.")
        ]
        for member in decl.members:
            self.member(member, key, name, callables, context)

    def tool(self, tool: n.ToolDecl, key: str, container: str) -> str:
        end = tool.returns.span.end if tool.returns is not None else tool.name.span.end
        signature = "tool " + self.source.text[tool.name.span.start : end]
        desc = tool.desc
        self.define(
            key, tool.name, "tool", tool.span, signature, desc.value if desc else None, container
        )
        self.params(tool.params, key, tool.name.text)
        if tool.returns is not None:
            self.types(tool.returns)
        for annotation in tool.examples:
            for arg in annotation.args:
                self.refer(f"{key}({arg.name.text})", arg.name.span)
        use = n.mcp_of(tool.annotations)
        if use is not None and use.server is not None:
            self.refer(self.top(use.server.text), use.server.span)  # @mcp(Files) -> its server
        return key

    def member(
        self,
        member: n.AgentMember,
        key: str,
        agent: str,
        callables: dict[str, str],
        context: dict[str, str],
    ) -> None:
        if isinstance(member, n.ConfigBlock):
            if member.name is not None:
                self.define(
                    f"{key}.config.{member.name.text}",
                    member.name,
                    "config",
                    member.span,
                    f"config {member.name.text}",
                    None,
                    agent,
                )
            self.exprs(member.entries, {}, context, None)
        elif isinstance(member, n.InputDecl | n.OutputDecl):
            self.types(member.type)
        elif isinstance(member, n.WorkflowDecl):
            self.workflow(member, key, agent, callables, context)
        elif isinstance(member, n.PersonasBlock):
            for name in member.names:
                self.refer(self.top(name.text), name.span)
        elif isinstance(member, n.HelpersBlock):
            for use in member.uses:
                self.refer(self.top(use.name.text), use.name.span)
                if isinstance(use.grant, n.ToolGrantList):
                    for granted in use.grant.names:
                        self.refer(callables.get(granted.text), granted.span)
        elif isinstance(member, n.IntentAttach):
            for item in member.items:
                if isinstance(item, n.NameRef):
                    self.refer(self.top(item.name), item.span)
                else:
                    inline = f"{key}.intent.{item.name.text}"
                    doc = item.description.text.value if item.description else None
                    signature = _signature_text(self.source, item.span)
                    self.define(inline, item.name, "intent", item.span, signature, doc, agent)
                    self.fields(item.fields, inline, item.name.text)

    def workflow(
        self,
        flow: n.WorkflowDecl,
        agent_key: str,
        agent: str,
        callables: dict[str, str],
        context: dict[str, str],
    ) -> None:
        key = f"{agent_key}.{flow.name.text}"
        end = flow.returns.span.end if flow.returns is not None else flow.name.span.end
        if flow.returns is None and flow.params:
            end = self.source.text.find(")", flow.params[-1].span.end) + 1
        signature = "workflow " + self.source.text[flow.name.span.start : end]
        doc = flow.description.text.value if flow.description else None
        self.define(key, flow.name, "workflow", flow.span, signature, doc, agent)
        env = self.params(flow.params, key, flow.name.text)
        if flow.returns is not None:
            self.types(flow.returns)
        scoped = dict(callables)
        for tool in flow.tools:
            scoped[tool.name.text] = self.tool(tool, f"{key}.{tool.name.text}", flow.name.text)
        for annotation in flow.examples:
            for arg in annotation.args:
                self.refer(env.get(arg.name.text), arg.name.span)
        for stmt in _statements(flow.body):
            if isinstance(stmt, n.LetStmt):
                self.exprs((stmt.value,), env, context, scoped)
                let_key = f"{key}.{stmt.name.text}"
                if stmt.name.text not in env:
                    env[stmt.name.text] = let_key
                    self.define(
                        let_key,
                        stmt.name,
                        "variable",
                        stmt.span,
                        self.source.text[stmt.span.start : stmt.span.end],
                        None,
                        flow.name.text,
                    )
                else:
                    self.refer(env[stmt.name.text], stmt.name.span)
            elif isinstance(stmt, n.AssignStmt):
                self.refer(env.get(stmt.name.text), stmt.name.span)
                self.exprs((stmt.value,), env, context, scoped)
            elif isinstance(stmt, n.IfStmt):
                self.exprs(tuple(b.cond for b in stmt.branches), env, context, scoped)
            elif isinstance(stmt, n.ReturnStmt):
                if stmt.value is not None:
                    self.exprs((stmt.value,), env, context, scoped)
            else:
                self.exprs((stmt.expr,), env, context, scoped)

    # -- expressions -----------------------------------------------------------------------

    def exprs(
        self,
        nodes: Iterable[object],
        env: dict[str, str],
        context: dict[str, str] | None,
        callables: dict[str, str] | None,
    ) -> None:
        """Resolve names, calls and ``ctx.x`` anywhere under ``nodes`` (``context`` None: in
        a top-level prompt)."""
        for node in nodes:
            for item in _walk(node):
                if isinstance(item, n.NameRef):
                    self.refer(env.get(item.name) or self.top(item.name), item.span)
                elif isinstance(item, n.CtxRef):
                    name = item.name.text
                    key = PROMPT_CONTEXT + name if context is None else context.get(name)
                    self.refer(key, item.name.span)
                elif isinstance(item, n.Call):
                    name = item.callee.text
                    key = (callables or {}).get(name) or self.top(name)
                    self.refer(key, item.callee.span)


_SKIP = (n.StringLit, n.Name, n.Literal, n.TText, n.TSchema, Span, str, int, float, bool)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _walk(node: object) -> Iterator[object]:
    """The nodes under ``node`` that may hold a name (``nodes.walk`` without the leaves:
    it would step through every character offset of every string)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, tuple):
            stack.extend(reversed(current))
            continue
        if current is None or isinstance(current, _SKIP):
            continue
        kind = type(current)
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = tuple(f for f in record_fields(current) if f != "span")
        yield current
        stack.extend(reversed([getattr(current, name) for name in names]))


def _describe(decl: n.AgentDecl) -> str | None:
    """An agent's or helper's ``description`` (a member, or in its ``default config``)."""
    for member in decl.members:
        if isinstance(member, n.DescriptionEntry):
            return member.text.value
    for member in decl.members:
        if isinstance(member, n.ConfigBlock) and member.is_default:
            entry = member.entry("description")
            for term in entry.value.terms if entry is not None else ():
                if isinstance(term, n.PromptText):
                    return term.string.value
    return None


def _statements(body: Iterable[n.Stmt]) -> Iterator[n.Stmt]:
    """Every statement of a workflow body, nested ``if`` branches included, in source order."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, n.IfStmt):
            for branch in stmt.branches:
                yield from _statements(branch.body)
            if stmt.else_body is not None:
                yield from _statements(stmt.else_body)

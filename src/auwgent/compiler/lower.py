"""Lowering: a checked agent file to its IR document (docs/ir.md).

Lowering runs only on projects the checker accepted, so it trusts names and shapes. It
flattens everything one agent needs into one document: the root agent, every helper it can
reach, the named types and prompts they use. Names stay the user's names; if two different
declarations with the same name would meet in one document, that is reported (E2071) rather
than silently renamed.

Workflow calls are bound by name in the tool's declaration order, so the runtime never sees a
positional argument; ``return`` stays a statement that ends the workflow from any depth.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from .. import _version
from .._records import record
from .._typing import assert_never
from ..ir import with_hash
from ..ir.vocabulary import PROVIDERS
from . import nodes as n
from .diagnostics import Diagnostic, error
from .members import AgentParts, agent_parts
from .modules import FileScope, InFile, ModuleGraph, Symbol
from .source import SourceFile, Span

if TYPE_CHECKING:
    # Types only: importing auwgent.ir would load json and hashlib into `auwgent check`.
    from ..ir import model as m

_Approvable = TypeVar("_Approvable", "m.Tool", "m.Workflow", "m.HelperUse")

MAX_EXAMPLES = 5
_PROVIDER_WORDS = tuple(provider.name for provider in PROVIDERS)


# --------------------------------------------------------------------------------------------
# Example selection (shared with the checker's W2003)


@record
class ExampleCandidate:
    """One ``@example`` and the facts its sort key is made of."""

    kind: Literal["tool", "workflow"]
    target: str
    position: int  # index among its own target's examples
    order: int  # source order of the target in the agent
    example: n.ExampleAnnotation

    @property
    def sort_key(self) -> tuple[int, int, int]:
        """Breadth first, then examples with arguments, then source order."""
        return (self.position, 0 if self.example.args else 1, self.order)


def example_candidates(
    tools: Iterable[n.ToolDecl], workflows: Iterable[n.WorkflowDecl]
) -> list[ExampleCandidate]:
    """Every ``@example`` of an agent's model-visible tools and workflows, in source order."""
    targets: list[tuple[Literal["tool", "workflow"], n.ToolDecl | n.WorkflowDecl]]
    targets = [("tool", t) for t in tools]
    targets += [("workflow", w) for w in workflows]
    targets.sort(key=lambda item: item[1].span.start)
    return [
        ExampleCandidate(kind, decl.name.text, position, order, example)
        for order, (kind, decl) in enumerate(targets)
        for position, example in enumerate(decl.examples)
    ]


def select_examples(
    candidates: list[ExampleCandidate],
) -> tuple[list[ExampleCandidate], list[ExampleCandidate]]:
    """The examples that reach the model (at most five, by sort key) and the dropped rest."""
    # Ranked by index (a stable sort, so ties keep source order); the dropped ones go back
    # to source order by index too, instead of comparing whole candidates with `not in`.
    ranked = sorted(range(len(candidates)), key=lambda i: candidates[i].sort_key)
    chosen = [candidates[i] for i in ranked[:MAX_EXAMPLES]]
    return chosen, [candidates[i] for i in sorted(ranked[MAX_EXAMPLES:])]


# --------------------------------------------------------------------------------------------
# Documents


@record
class Lowered:
    """The IR document of one agent file, or the name clashes that prevent it."""

    document: m.Document | None
    diagnostics: tuple[Diagnostic, ...]


def lower_file(graph: ModuleGraph, path: str, *, hashed: bool = True) -> Lowered | None:
    """Lower the agent declared in file ``path``; ``None`` for a library file (no agent).

    ``hashed=False`` leaves the ``hash`` field empty, for callers that only want the
    diagnostics (``auwgent check``): hashing is a third of the time spent lowering.
    """
    scope = graph.scope(path)
    root = next((d for d in scope.module.agents if not d.is_helper), None)
    if root is None:
        return None
    lowering = _Lowering(graph, path)
    document = lowering.document(root)
    if lowering.diagnostics:
        return Lowered(None, tuple(lowering.diagnostics))
    if not hashed:
        return Lowered(document, ())
    # Imported here so that `auwgent check` loads neither json nor hashlib.
    return Lowered(with_hash(document), ())


def name_clashes(graph: ModuleGraph, path: str) -> tuple[Diagnostic, ...] | None:
    """The E2071 diagnostics ``lower_file(graph, path)`` would give, without building the IR.

    ``None`` for a library file, like ``lower_file``. For callers that want diagnostics only
    (``auwgent check``): only declarations that take a name in the document's tables can
    clash, so this walks just the types, prompts, helpers and intents, in the order the
    lowering claims their names (see ``_Names``); workflow bodies, templates, expressions and
    examples are skipped, and no location is computed.
    """
    scope = graph.scope(path)
    root = next((d for d in scope.module.agents if not d.is_helper), None)
    if root is None:
        return None
    lowering = _Lowering(graph, path)
    _Names(lowering).agent(root, Symbol(root.name.text, root, path))
    return tuple(lowering.diagnostics)


class _Lowering:
    """Builds one document; tables are filled as references are met."""

    def __init__(self, graph: ModuleGraph, path: str) -> None:
        self.graph = graph
        self.path = path
        self.scope: FileScope = graph.scope(path)
        self.agents: dict[str, m.Agent] = {}
        self.types: dict[str, m.ObjectType] = {}
        self.prompts: dict[str, m.NamedPrompt] = {}
        self.personas: dict[str, m.Persona] = {}
        self.mcp: dict[str, m.McpServer] = {}
        self.owners: dict[tuple[str, str], str] = {}  # (table, name) -> symbol key
        self.diagnostics: list[Diagnostic] = []

    @property
    def source(self) -> SourceFile:
        return self.scope.module.source

    def loc(self, span: Span) -> list[int]:
        # Called for every statement and call: the source without the property's call.
        return list(self.scope.module.source.line_col(span.start))

    def document(self, root: n.AgentDecl) -> m.Document:
        self.agent(root, Symbol(root.name.text, root, self.path))
        doc: m.Document = {
            "ir_version": _version.IR_VERSION,
            "compiler_version": _version.__version__,
            "hash": "",
            "source": self.path,
            "root": root.name.text,
            "agents": self.agents,
            "types": self.types,
            "prompts": self.prompts,
            "personas": self.personas,
        }
        if self.mcp:  # only documents whose tools live on MCP servers have the key
            doc["mcp"] = self.mcp
        return doc

    # -- names that meet in one document -------------------------------------------------

    def claim(self, table: str, name: str, key: str, span: Span) -> bool:
        """Reserve ``name`` in ``table`` for ``key``; False if already lowered (or clashing)."""
        owner = self.owners.get((table, name))
        if owner is None:
            self.owners[(table, name)] = key
            return True
        if owner != key:
            where = owner.split("::")[0]
            self.diagnostics.append(
                error(
                    "E2071",
                    f"two different {table} named `{name}` meet in the IR of {self.path}",
                    self.source,
                    span,
                    help=f"the other one is declared in {where}; rename one of them",
                )
            )
        return False

    def within(self, path: str) -> InFile:
        """Lower in the scope of another file for the duration of the ``with`` block."""
        return InFile(self, self.graph.scope(path))

    # -- agents --------------------------------------------------------------------------

    def agent(self, decl: n.AgentDecl, symbol: Symbol) -> None:
        if not self.claim("agents", decl.name.text, symbol.key, decl.name.span):
            return
        entry = cast("m.Agent", {})
        self.agents[decl.name.text] = entry  # reserve first: helpers may use each other
        with self.within(symbol.path):
            entry.update(_AgentLowering(self, decl).build())


class _AgentLowering:
    """Lowers one agent or helper block (in its own file's scope)."""

    def __init__(self, lowering: _Lowering, decl: n.AgentDecl) -> None:
        self.low = lowering
        self.decl = decl
        self.parts = agent_parts(decl)

    def build(self) -> m.Agent:
        decl, parts, low = self.decl, self.parts, self.low
        chosen, dropped = select_examples(example_candidates(parts.tools, parts.workflows))
        helpers = [use for block in parts.helpers[:1] for use in block.uses]
        groups = list(low.scope.groups(parts.groups))
        # By name, the first of each (built once: per workflow, it was quadratic).
        agent_sigs = {t.name.text: t for t in reversed(parts.tools)}
        for symbol in groups:
            assert isinstance(symbol.decl, n.ToolGroupDecl)
            agent_sigs.update({t.name.text: t for t in symbol.decl.tools})
        lowered: m.Agent = {
            "name": decl.name.text,
            "kind": decl.kind,
            "description": self.description(),
            "configs": self.configs(),
            "context": [low_field(low, f) for c in parts.contexts[:1] for f in c.fields],
            "input": self.io(parts.inputs, "Input"),
            "output": self.io(parts.outputs, "Output"),
            "tools": [lower_tool(low, t) for t in parts.tools] + self.group_tools(groups),
            "workflows": [lower_workflow(low, w, agent_sigs) for w in parts.workflows],
            "helpers": [self.helper_use(use) for use in helpers],
            "personas": self.personas(),
            "intents": self.intents(),
            "examples": [lower_example(c) for c in chosen],
            "dropped_examples": [lower_example(c) for c in dropped],
        }
        if decl.is_helper and n.flagged(decl.annotations, "quarantine"):
            lowered["quarantine"] = True
        return lowered

    def group_tools(self, groups: list[Symbol]) -> list[m.Tool]:
        """The tools of the tool groups the agent names, each lowered in its group's file
        (after the agent's own tools, in the order the groups are named)."""
        out: list[m.Tool] = []
        for symbol in groups:
            assert isinstance(symbol.decl, n.ToolGroupDecl)
            with self.low.within(symbol.path):
                out.extend(lower_tool(self.low, t) for t in symbol.decl.tools)
        return out

    def description(self) -> str | None:
        if not self.decl.is_helper:
            return None
        for entry in self.parts.descriptions:
            return entry.text.value
        for config in self.parts.configs:
            found = config.entry("description") if config.is_default else None
            if found is not None:
                return _string_term(found.value)
        return None

    def configs(self) -> dict[str, m.Config]:
        out: dict[str, m.Config] = {}
        for config in self.parts.configs:
            name = "default" if config.name is None else config.name.text
            out.setdefault(name, self.config(config))
        return out

    def config(self, config: n.ConfigBlock) -> m.Config:
        low = self.low
        model = config.entry("model")
        embedding = config.entry("embedding")
        prompt = config.entry("prompt")
        loops = config.entry("maxToolLoops")
        protocol = config.entry("protocol")
        fallback = config.entry("fallback")
        lowered: m.Config = {
            # The checker makes every config name its model.
            "model": cast("m.Model", lower_model(low, model.value.terms[0]) if model else None),
            "embedding": lower_model(low, embedding.value.terms[0]) if embedding else None,
            "prompt": [lower_prompt_part(low, t) for t in prompt.value.terms] if prompt else [],
            "max_tool_loops": _literal_term(loops.value) if loops else None,
            "protocol": cast(
                'Literal["blocks", "native"] | None',
                _string_term(protocol.value) if protocol else None,
            ),
        }
        if fallback is not None and isinstance(fallback.value.terms[0], n.ArrayExpr):
            elements = fallback.value.terms[0].items
            lowered["fallback"] = cast("list[m.Model]", [lower_model(low, e) for e in elements])
        code_mode = config.entry("codeMode")
        if code_mode is not None:  # only when given: configs without it keep their IR (and hash)
            lowered["codeMode"] = _literal_term(code_mode.value) is True
        taint = config.entry("taint")
        if taint is not None and isinstance(taint.value.terms[0], n.ObjectExpr):
            lowered["taint"] = cast(
                "m.TaintPolicy",
                {e.key.text: _expr_value(e.value) for e in taint.value.terms[0].entries},
            )
        return with_budget(low, lowered, config)

    def io(self, decls: list[n.InputDecl] | list[n.OutputDecl], suffix: str) -> m.Type:
        if not decls:
            return {"kind": "text"}
        texpr = decls[0].type
        base = f"{self.decl.name.text}{suffix}"
        if isinstance(texpr, n.ObjectType):
            return name_object(self.low, base, texpr, texpr.span)
        if isinstance(texpr, n.UnionType):
            count = 0
            variants: list[m.Type] = []
            for variant in texpr.variants:
                if isinstance(variant, n.ObjectType):
                    count += 1
                    variants.append(name_object(self.low, f"{base}{count}", variant, variant.span))
                else:
                    variants.append(lower_type(self.low, variant))
            return {"kind": "union", "variants": variants}
        return lower_type(self.low, texpr)

    def helper_use(self, use: n.HelperUse) -> m.HelperUse:
        symbol = self.low.scope.lookup(use.name.text)
        if symbol is not None and isinstance(symbol.decl, n.AgentDecl):
            self.low.agent(symbol.decl, symbol)
        grant: Literal["none", "all"] | list[str]
        match use.grant:
            case n.ToolGrantAll():
                grant = "all"
            case n.ToolGrantList(names=names):
                grant = [name.text for name in names]
            case n.ToolGrantNone():
                grant = "none"
            case _:
                assert_never(use.grant)
        lowered: m.HelperUse = {"name": use.name.text, "tools": grant, "handoff": use.handoff}
        return with_approval(lowered, use.annotations)

    def personas(self) -> list[str]:
        """The names listed in ``personas { }``; their bodies go to the document's table."""
        out: list[str] = []
        for block in self.parts.personas[:1]:
            for name in block.names:
                if name.text not in out and named_persona(self.low, name.text, name.span):
                    out.append(name.text)
        return out

    def intents(self) -> list[m.Intent]:
        out: list[m.Intent] = []
        for attach in self.parts.intents[:1]:
            for item in attach.items:
                if isinstance(item, n.NameRef):
                    symbol = self.low.scope.lookup(item.name)
                    if symbol is None or not isinstance(symbol.decl, n.IntentDecl):
                        continue
                    with self.low.within(symbol.path):
                        out.append(lower_intent(self.low, symbol.decl))
                else:
                    out.append(lower_intent(self.low, item))
        return out


# --------------------------------------------------------------------------------------------
# Types


def lower_type(low: _Lowering, texpr: n.TypeExpr) -> m.Type:
    """A written type as an IR ``Type`` (named types are added to the ``types`` table)."""
    # The cases are disjoint; the common ones come first (each miss is an isinstance test).
    match texpr:
        case n.PrimitiveType(name=name):
            return {"kind": name}
        case n.NamedType(name=name, span=span):
            named_type(low, name, span)
            return {"kind": "ref", "name": name}
        case n.TextType():
            return {"kind": "text"}
        case n.LiteralType(value=value):
            return {"kind": "literal", "value": value}
        case n.ArrayType(element=element):
            return {"kind": "array", "items": lower_type(low, element)}
        case n.ObjectType(fields=fields):
            return {"kind": "object", "fields": [low_field(low, f) for f in fields]}
        case n.UnionType(variants=variants):
            return {"kind": "union", "variants": [lower_type(low, v) for v in variants]}
        case _:
            assert_never(texpr)


def named_type(low: _Lowering, name: str, span: Span) -> None:
    """Add the ``type`` block ``name`` (as seen from the current file) to the table."""
    symbol = low.scope.lookup(name)
    if symbol is None or not isinstance(symbol.decl, n.TypeDecl):
        return
    if not low.claim("types", name, symbol.key, span):
        return
    entry: m.ObjectType = {"kind": "object", "fields": []}
    low.types[name] = entry  # reserved first: a type may refer to itself
    with low.within(symbol.path):
        entry["fields"] = [low_field(low, f) for f in symbol.decl.fields]


def name_object(low: _Lowering, name: str, texpr: n.ObjectType, span: Span) -> m.RefType:
    """Store an inline object under a synthesized name and return a reference to it."""
    if low.claim("types", name, f"{low.scope.path}::{name}#synth", span):
        low.types[name] = {"kind": "object", "fields": [low_field(low, f) for f in texpr.fields]}
    return {"kind": "ref", "name": name}


def low_field(low: _Lowering, item: n.Field) -> m.Field:
    """An IR ``Field``."""
    desc = item.desc
    return {
        "name": item.name.text,
        "type": lower_type(low, item.type),
        "optional": item.optional,
        "description": desc.value if desc else None,
    }


# --------------------------------------------------------------------------------------------
# Models and configs


def lower_model(low: _Lowering, term: n.ConfigTerm | n.Expr) -> m.Model | None:
    """A ``model:`` value: a model block by name or an inline provider call."""
    name: str | None = None
    limits: dict[str, Any] = {}
    if isinstance(term, n.NameRef):
        symbol = low.scope.lookup(term.name)
        if symbol is None or not isinstance(symbol.decl, n.ModelDecl):
            return None
        name = symbol.name
        provider = next((e for e in symbol.decl.entries if e.name.text == "provider"), None)
        if provider is None:
            return None
        term = provider.value.terms[0]
        limits = {
            e.name.text: _literal_term(e.value)
            for e in symbol.decl.entries
            if e.name.text in ("contextWindow", "maxOutputTokens")
        }
    if not isinstance(term, n.Call) or term.callee.text not in _PROVIDER_WORDS:
        return None
    values = [const_value(arg) for arg in term.args]
    kind = cast('Literal["gemini", "openai", "anthropic", "custom"]', term.callee.text)
    strings = 3 if kind == "custom" else 1
    options = values[strings] if len(values) > strings else {}
    custom = kind == "custom"
    lowered: m.Model = {
        "provider": kind,
        "model": values[2] if custom else values[0],
        "options": options,
        "name": name,
        "id": values[0] if custom else None,
        "base_url": values[1] if custom else None,
    }
    lowered.update(limits)  # type: ignore[typeddict-item]
    return lowered


def with_budget(low: _Lowering, lowered: m.Config, config: n.ConfigBlock) -> m.Config:
    """``lowered`` plus ``maxToolOutput`` and ``history`` when the config gives them (the
    keys are left out otherwise, so IR without them is unchanged)."""
    cap = config.entry("maxToolOutput")
    if cap is not None:
        value = const_value(cast("n.Expr", cap.value.terms[0]))
        given = value if isinstance(value, dict) else {"tokens": value}
        lowered["maxToolOutput"] = cast("m.OutputCap", given)
    history = config.entry("history")
    if history is not None and isinstance(history.value.terms[0], n.ObjectExpr):
        policy: dict[str, Any] = {}
        for item in history.value.terms[0].entries:
            if item.key.text == "summarizeWith":
                policy["summarizeWith"] = lower_model(low, item.value)
            else:
                policy[item.key.text] = const_value(item.value)
        lowered["history"] = cast("m.History", policy)
    return lowered


def const_value(expr: n.Expr) -> Any:
    """The JSON value of a literal expression (checked before lowering)."""
    match expr:
        case n.Literal(value=value):
            return value
        case n.Unary(op="-", operand=operand):
            return -const_value(operand)
        case n.ArrayExpr(items=items):
            return [const_value(item) for item in items]
        case n.ObjectExpr(entries=entries):
            return {entry.key.text: const_value(entry.value) for entry in entries}
    return None


def _literal_term(value: n.ConfigValue) -> Any:
    term = value.terms[0]
    return term.value if isinstance(term, n.Literal) else None


def _expr_value(expr: n.Expr) -> Any:
    return expr.value if isinstance(expr, n.Literal) else None


def _string_term(value: n.ConfigValue) -> str | None:
    term = value.terms[0]
    return term.string.value if isinstance(term, n.PromptText) else None


# --------------------------------------------------------------------------------------------
# Prompts


def lower_prompt_part(low: _Lowering, term: n.ConfigTerm) -> m.PromptPart:
    """One ``+``-separated part of ``prompt:``."""
    loc = low.loc(term.span)
    match term:
        case n.NameRef(name=name):
            named_prompt(low, name, term.span)
            return {"kind": "ref", "name": name, "args": [], "loc": loc}
        case n.Call(callee=callee, args=args):
            named_prompt(low, callee.text, callee.span)
            return {
                "kind": "ref",
                "name": callee.text,
                "args": [lower_expr(low, a) for a in args],
                "loc": loc,
            }
        case n.PromptText():
            return {"kind": "inline", "body": [lower_prompt_item(low, term)], "loc": loc}
        case n.PromptBlock(items=items):
            return {
                "kind": "inline",
                "body": [lower_prompt_item(low, i) for i in items],
                "loc": loc,
            }
        case n.Literal() | n.ObjectExpr() | n.ArrayExpr():  # the checker refuses these (E2027)
            raise AssertionError(f"unexpected prompt part {term!r}")  # pragma: no cover
        case _:
            assert_never(term)


def named_prompt(low: _Lowering, name: str, span: Span) -> None:
    """Add the prompt ``name`` (as seen from the current file) to the ``prompts`` table."""
    symbol = low.scope.lookup(name)
    if symbol is None or not isinstance(symbol.decl, n.PromptDecl):
        return
    if not low.claim("prompts", name, symbol.key, span):
        return
    decl = symbol.decl
    with low.within(symbol.path):
        low.prompts[name] = {
            "name": name,
            "params": [low_field(low, p) for p in decl.params or ()],
            "body": [lower_prompt_item(low, item) for item in decl.items],
        }


def named_persona(low: _Lowering, name: str, span: Span) -> bool:
    """Add the persona ``name`` to the ``personas`` table; False if it is not a persona."""
    symbol = low.scope.lookup(name)
    if symbol is None or not isinstance(symbol.decl, n.PersonaDecl):
        return False
    if low.claim("personas", name, symbol.key, span):
        with low.within(symbol.path):
            body = [lower_prompt_item(low, item) for item in symbol.decl.items]
        low.personas[name] = {"name": name, "body": body}
    return True


def lower_prompt_item(low: _Lowering, item: n.PromptItem) -> m.PromptItem:
    """A prompt body item: text, ``Example`` or JS-style ``if``."""
    match item:
        case n.PromptText(template=template):
            return {"kind": "text", "template": lower_template(low, template)}
        case n.PromptExample(user=user, assistant=assistant):
            return {
                "kind": "example",
                "user": lower_template(low, user.template),
                "assistant": lower_template(low, assistant.template),
            }
        case n.PromptIf(cond=cond, then=then, else_=else_):
            return {
                "kind": "if",
                "cond": lower_expr(low, cond),
                "then": [lower_prompt_item(low, i) for i in then],
                "else": [lower_prompt_item(low, i) for i in else_ or ()],
            }
        case _:
            assert_never(item)


def lower_template(low: _Lowering, nodes: tuple[n.TNode, ...]) -> m.Template:
    """A template tree, as written (the runtime trims standalone ``{{#if}}`` lines)."""
    out: m.Template = []
    for node in nodes:
        match node:
            case n.TText(value=value):
                if out and out[-1]["t"] == "text":
                    out[-1] = {"t": "text", "value": out[-1]["value"] + value}
                elif value:
                    out.append({"t": "text", "value": value})
            case n.TExpr(expr=expr):
                out.append({"t": "expr", "expr": lower_expr(low, expr)})
            case n.TIf(cond=cond, then=then, else_=else_):
                out.append(
                    {
                        "t": "if",
                        "cond": lower_expr(low, cond),
                        "then": lower_template(low, then),
                        "else": lower_template(low, else_ or ()),
                    }
                )
            case n.TSchema(target=target):
                out.append({"t": "schema", "target": target})
            case _:
                assert_never(node)
    return out


# --------------------------------------------------------------------------------------------
# Tools, workflows, intents, examples


def lower_tool(low: _Lowering, tool: n.ToolDecl) -> m.Tool:
    """An IR ``Tool``."""
    desc = tool.desc
    lowered: m.Tool = {
        "name": tool.name.text,
        "description": desc.value if desc else None,
        "params": [low_field(low, p) for p in tool.params],
        "returns": lower_type(low, tool.returns) if tool.returns else {"kind": "string"},
        "examples": [example_args(e) for e in tool.examples],
    }
    if tool.repeatable:
        lowered["repeatable"] = True
    max_output = n.max_output_of(tool.annotations)
    if max_output is not None and max_output.args:
        arg = max_output.args[0]
        lowered["maxOutput"] = cast("m.OutputCap", {arg.name.text: const_value(arg.value)})
    use = n.mcp_of(tool.annotations)
    if use is not None and use.server is not None:
        lowered["mcp"] = use.server.text
        if use.remote is not None and use.remote.value != tool.name.text:
            lowered["mcpTool"] = use.remote.value
        named_mcp(low, use.server.text, use.server.span)
    return with_taint(low, with_approval(lowered, tool.annotations), tool.annotations)


def with_taint(low: _Lowering, lowered: m.Tool, annotations: tuple[n.Annotation, ...]) -> m.Tool:
    """``untrusted`` (``@untrusted``, or a tool of an ``mcp`` server without ``@trusted``) and
    ``sensitive`` (``@sensitive``, with its policy or ``None``)."""
    server = lowered.get("mcp")
    if n.flagged(annotations, "untrusted") or (server is not None and not _trusted(low, server)):
        lowered["untrusted"] = True
    sensitive = n.sensitive_of(annotations)
    if sensitive is not None:
        policy = next((a.value for a in sensitive.args or () if a.name.text == "policy"), None)
        lowered["sensitive"] = {"policy": _expr_value(policy) if policy is not None else None}
    return lowered


def _trusted(low: _Lowering, server: str) -> bool:
    symbol = low.scope.lookup(server)
    decl = symbol.decl if symbol is not None else None
    return isinstance(decl, n.McpDecl) and n.flagged(decl.annotations, "trusted")


def lower_tool_in(
    graph: ModuleGraph, path: str, tool: n.ToolDecl
) -> tuple[m.Tool, dict[str, m.ObjectType]]:
    """One tool's IR and the named types it refers to, lowered in file ``path``'s scope: for
    comparing a declaration with something outside the project (``auwgent check --mcp``)."""
    low = _Lowering(graph, path)
    return lower_tool(low, tool), low.types


def named_mcp(low: _Lowering, name: str, span: Span) -> None:
    """Lower the ``mcp`` server ``name`` into the document's ``mcp`` table (once)."""
    symbol = low.scope.lookup(name)
    if symbol is None or not isinstance(symbol.decl, n.McpDecl):
        return
    if low.claim("mcp servers", name, symbol.key, span):
        low.mcp[name] = lower_mcp_server(symbol.decl)


def lower_mcp_server(decl: n.McpDecl) -> m.McpServer:
    """An IR ``McpServer``: ``{"url"}`` or ``{"command", "args", "env"}`` (checked literals)."""
    values = {e.name.text: e.value.terms[0] for e in decl.entries}
    url = values.get("url")
    if isinstance(url, n.PromptText):
        return {"url": url.string.value}
    command = values.get("command")
    args = values.get("args")
    env = values.get("env")
    return {
        "command": command.string.value if isinstance(command, n.PromptText) else "",
        "args": const_value(args) if isinstance(args, n.ArrayExpr) else [],
        "env": const_value(env) if isinstance(env, n.ObjectExpr) else {},
    }


def lower_workflow(
    low: _Lowering, workflow: n.WorkflowDecl, agent_tools: dict[str, n.ToolDecl]
) -> m.Workflow:
    """An IR ``Workflow``: calls bound by name, statements with locations.

    ``agent_tools`` are the tools of the enclosing agent by name, which the body may call
    too (its own scoped tools come first).
    """
    signatures = ChainMap({t.name.text: t for t in workflow.tools}, agent_tools)
    lowered: m.Workflow = {
        "name": workflow.name.text,
        "description": workflow.description.text.value if workflow.description else "",
        "params": [low_field(low, p) for p in workflow.params],
        "returns": lower_type(low, workflow.returns) if workflow.returns else {"kind": "string"},
        "tools": [lower_tool(low, t) for t in workflow.tools],
        "body": lower_block(low, workflow.body, signatures),
        "source": low.scope.path,
        "loc": low.loc(workflow.span),
        "examples": [example_args(e) for e in workflow.examples],
    }
    return with_approval(lowered, workflow.annotations)


def lower_intent(low: _Lowering, decl: n.IntentDecl) -> m.Intent:
    """An IR ``Intent``."""
    return {
        "name": decl.name.text,
        "description": decl.description.text.value if decl.description else None,
        "fields": [low_field(low, f) for f in decl.fields],
    }


def with_approval(lowered: _Approvable, annotations: tuple[n.Annotation, ...]) -> _Approvable:
    """``lowered`` plus ``"approval": {"timeout": seconds | None}`` when it has ``@approval``.

    The key is left out otherwise, so IR without approvals is unchanged.
    """
    approval = n.approval_of(annotations)
    if approval is not None:
        timeout = next(
            (const_value(a.value) for a in approval.args or () if a.name.text == "timeout"), None
        )
        lowered["approval"] = {"timeout": timeout}
    return lowered


def example_args(example: n.ExampleAnnotation) -> dict[str, Any]:
    """The argument object of one ``@example(...)``."""
    return {arg.name.text: const_value(arg.value) for arg in example.args}


def lower_example(candidate: ExampleCandidate) -> m.Example:
    """An IR ``Example``."""
    return {
        "kind": candidate.kind,
        "target": candidate.target,
        "args": example_args(candidate.example),
    }


# --------------------------------------------------------------------------------------------
# Statements and expressions

Signatures = Mapping[str, n.ToolDecl]


def lower_block(low: _Lowering, stmts: tuple[n.Stmt, ...], sigs: Signatures) -> m.Block:
    """A list of statements."""
    return [lower_stmt(low, stmt, sigs) for stmt in stmts]


def lower_stmt(low: _Lowering, stmt: n.Stmt, sigs: Signatures) -> m.Stmt:
    """One statement; ``return`` ends the workflow wherever it stands."""
    loc = low.loc(stmt.span)
    # Plain isinstance tests, most frequent kinds first, cost less than class patterns.
    if isinstance(stmt, n.LetStmt):
        return {
            "s": "let",
            "loc": loc,
            "name": stmt.name.text,
            "value": lower_expr(low, stmt.value, sigs),
        }
    if isinstance(stmt, n.ReturnStmt):
        value = stmt.value
        return {
            "s": "return",
            "loc": loc,
            "value": None if value is None else lower_expr(low, value, sigs),
        }
    if isinstance(stmt, n.IfStmt):
        else_body = stmt.else_body
        return {
            "s": "if",
            "loc": loc,
            "branches": [
                {"cond": lower_expr(low, b.cond, sigs), "body": lower_block(low, b.body, sigs)}
                for b in stmt.branches
            ],
            "else": None if else_body is None else lower_block(low, else_body, sigs),
        }
    if isinstance(stmt, n.AssignStmt):
        return {
            "s": "assign",
            "loc": loc,
            "name": stmt.name.text,
            "value": lower_expr(low, stmt.value, sigs),
        }
    if isinstance(stmt, n.ExprStmt):
        return {"s": "expr", "loc": loc, "value": lower_expr(low, stmt.expr, sigs)}
    raise AssertionError(f"unexpected statement {stmt!r}")  # pragma: no cover


def lower_expr(low: _Lowering, expr: n.Expr, sigs: Signatures | None = None) -> m.Expr:
    """An IR ``Expr``; calls need ``sigs`` to bind their arguments by name."""
    # Called for every expression node: plain isinstance tests, most frequent kinds first,
    # cost less than a `match` of class patterns tried in declaration order.
    if isinstance(expr, n.Literal):
        return {"e": "lit", "value": expr.value}
    if isinstance(expr, n.NameRef):
        return {"e": "name", "name": expr.name}
    if isinstance(expr, n.Binary):
        return {
            "e": "binary",
            "op": expr.op,
            "left": lower_expr(low, expr.left, sigs),
            "right": lower_expr(low, expr.right, sigs),
        }
    if isinstance(expr, n.Member):
        return {"e": "member", "object": lower_expr(low, expr.object, sigs), "name": expr.name.text}
    if isinstance(expr, n.CtxRef):
        return {"e": "ctx", "name": expr.name.text}
    if isinstance(expr, n.Call):
        return lower_call(low, expr, sigs or {})
    if isinstance(expr, n.Index):
        return {
            "e": "index",
            "object": lower_expr(low, expr.object, sigs),
            "index": lower_expr(low, expr.index, sigs),
        }
    if isinstance(expr, n.ArrayExpr):
        return {"e": "array", "items": [lower_expr(low, i, sigs) for i in expr.items]}
    if isinstance(expr, n.ObjectExpr):
        return {
            "e": "object",
            "fields": [
                {"name": e.key.text, "value": lower_expr(low, e.value, sigs)} for e in expr.entries
            ],
        }
    if isinstance(expr, n.Unary):
        return {"e": "unary", "op": expr.op, "operand": lower_expr(low, expr.operand, sigs)}
    raise AssertionError(f"unexpected expression {expr!r}")  # pragma: no cover


def lower_call(low: _Lowering, call: n.Call, sigs: Signatures) -> m.CallExpr:
    """A tool call with positional arguments bound to the tool's parameters in order."""
    tool = sigs.get(call.callee.text)
    names = [p.name.text for p in tool.params] if tool else []
    args: list[m.NamedExpr] = [
        {"name": names[i] if i < len(names) else f"arg{i}", "value": lower_expr(low, a, sigs)}
        for i, a in enumerate(call.args)
    ]
    return {"e": "call", "tool": call.callee.text, "args": args, "loc": low.loc(call.span)}


# --------------------------------------------------------------------------------------------
# Names only (name_clashes)


class _Names:
    """The lowering's walk reduced to its ``claim`` calls, in the same order.

    Each method mirrors the lowering function named in its docstring and visits the same
    children in the same order, skipping only subtrees that claim nothing (expressions,
    templates, prompt bodies, workflow bodies, examples, models). ``claim`` and ``within`` are
    the lowering's own, so names, keys, spans and messages are the same by construction;
    tests/compiler/check/test_check_name_clashes.py compares both on every test project.
    """

    def __init__(self, low: _Lowering) -> None:
        self.low = low

    def agent(self, decl: n.AgentDecl, symbol: Symbol) -> None:
        """``_Lowering.agent`` and ``_AgentLowering.build`` (its dict, key by key)."""
        low = self.low
        if not low.claim("agents", decl.name.text, symbol.key, decl.name.span):
            return
        with low.within(symbol.path):
            parts = agent_parts(decl)
            for config in parts.configs:  # configs(): every block is lowered
                prompt = config.entry("prompt")
                for term in prompt.value.terms if prompt else ():
                    self.prompt_part(term)
            for context in parts.contexts[:1]:
                self.fields(context.fields)
            self.io(decl, parts.inputs, "Input")
            self.io(decl, parts.outputs, "Output")
            self.tools(parts)
            for workflow in parts.workflows:
                self.fields(workflow.params)
                if workflow.returns:
                    self.type(workflow.returns)
                for tool in workflow.tools:
                    self.tool(tool)
            self.uses(parts)

    def uses(self, parts: AgentParts) -> None:
        """What the agent names in the order it is lowered: helpers, personas, intents."""
        low = self.low
        for block in parts.helpers[:1]:
            for use in block.uses:
                found = low.scope.lookup(use.name.text)
                if found is not None and isinstance(found.decl, n.AgentDecl):
                    self.agent(found.decl, found)
        for personas in parts.personas[:1]:
            for name in personas.names:
                found = low.scope.lookup(name.text)
                if found is not None and isinstance(found.decl, n.PersonaDecl):
                    low.claim("personas", name.text, found.key, name.span)
        for attach in parts.intents[:1]:
            for item in attach.items:
                if not isinstance(item, n.NameRef):
                    self.fields(item.fields)
                    continue
                found = low.scope.lookup(item.name)
                if found is not None and isinstance(found.decl, n.IntentDecl):
                    with low.within(found.path):
                        self.fields(found.decl.fields)

    def tools(self, parts: AgentParts) -> None:
        """The agent's own tools, then its groups' (``_AgentLowering.group_tools``)."""
        low = self.low
        for tool in parts.tools:
            self.tool(tool)
        for group in low.scope.groups(parts.groups):
            assert isinstance(group.decl, n.ToolGroupDecl)
            with low.within(group.path):
                for tool in group.decl.tools:
                    self.tool(tool)

    def io(
        self, decl: n.AgentDecl, decls: list[n.InputDecl] | list[n.OutputDecl], suffix: str
    ) -> None:
        """``_AgentLowering.io``."""
        if not decls:
            return
        texpr = decls[0].type
        base = f"{decl.name.text}{suffix}"
        if isinstance(texpr, n.ObjectType):
            self.object(base, texpr)
        elif isinstance(texpr, n.UnionType):
            count = 0
            for variant in texpr.variants:
                if isinstance(variant, n.ObjectType):
                    count += 1
                    self.object(f"{base}{count}", variant)
                else:
                    self.type(variant)
        else:
            self.type(texpr)

    def object(self, name: str, texpr: n.ObjectType) -> None:
        """``name_object``."""
        low = self.low
        if low.claim("types", name, f"{low.scope.path}::{name}#synth", texpr.span):
            self.fields(texpr.fields)

    def tool(self, tool: n.ToolDecl) -> None:
        """``lower_tool``."""
        self.fields(tool.params)
        if tool.returns:
            self.type(tool.returns)
        use = n.mcp_of(tool.annotations)
        if use is not None and use.server is not None:
            found = self.low.scope.lookup(use.server.text)
            if found is not None and isinstance(found.decl, n.McpDecl):
                self.low.claim("mcp servers", found.name, found.key, use.server.span)

    def fields(self, fields: Iterable[n.Field]) -> None:
        """``low_field`` for each field."""
        for item in fields:
            self.type(item.type)

    def type(self, texpr: n.TypeExpr) -> None:
        """``lower_type``."""
        if isinstance(texpr, n.PrimitiveType):
            return  # the most common kind, and it claims nothing
        if isinstance(texpr, n.NamedType):
            self.named_type(texpr.name, texpr.span)
        elif isinstance(texpr, n.ArrayType):
            self.type(texpr.element)
        elif isinstance(texpr, n.ObjectType):
            self.fields(texpr.fields)
        elif isinstance(texpr, n.UnionType):
            for variant in texpr.variants:
                self.type(variant)

    def named_type(self, name: str, span: Span) -> None:
        """``named_type``: the fields' types."""
        symbol = self.low.scope.lookup(name)
        if symbol is not None and isinstance(symbol.decl, n.TypeDecl):
            self.claim_then(symbol, "types", span, symbol.decl.fields)

    def prompt_part(self, term: n.ConfigTerm) -> None:
        """``lower_prompt_part``: only references to named prompts claim a name."""
        if isinstance(term, n.NameRef):
            self.named_prompt(term.name, term.span)
        elif isinstance(term, n.Call):
            self.named_prompt(term.callee.text, term.callee.span)

    def named_prompt(self, name: str, span: Span) -> None:
        """``named_prompt``: the parameters' types (the body claims nothing)."""
        symbol = self.low.scope.lookup(name)
        if symbol is not None and isinstance(symbol.decl, n.PromptDecl):
            self.claim_then(symbol, "prompts", span, symbol.decl.params or ())

    def claim_then(
        self, symbol: Symbol, table: str, span: Span, fields: tuple[n.Field, ...]
    ) -> None:
        """Claim ``symbol``'s name in ``table``; the first time, walk ``fields`` in its file."""
        low = self.low
        if low.claim(table, symbol.name, symbol.key, span):
            with low.within(symbol.path):
                self.fields(fields)

"""The syntax tree of the ``.agent`` language.

Every node is a frozen, slotted record (``records.record``: a dataclass that is cheap to define)
with a ``span`` (half-open character offsets into the file). Each category is a closed union
(``Decl``, ``AgentMember``, ``TypeExpr``, ``Expr``, ``Stmt``, ``PromptItem``, ``TNode``,
``ConfigTerm``, ``Annotation``, ``ToolGrant``) meant to be dispatched with ``match``.

The parser is permissive where the meaning is a semantic question: it records what was written
(an ``export`` on a tool, a ``@desc`` on a workflow, an unknown config field) and leaves the
verdict to the checker, which has the whole module graph.

Strings keep their processed value (escapes resolved, triple-quoted strings dedented) together
with ``offsets``, which maps each character of the value back to the file, so that template
nodes parsed from a prompt string carry spans that point inside the string in the file.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Literal as L
from typing import TypeAlias

from .._records import is_record, record, record_fields
from .source import SourceFile, Span

# --------------------------------------------------------------------------------------------
# Leaves


@record
class Name:
    """An identifier as written, e.g. the name of a declaration or a field."""

    text: str
    span: Span


class StringKind(enum.Enum):
    """How a string literal was quoted."""

    DOUBLE = '"'
    SINGLE = "'"
    TRIPLE = '"""'

    # Identity hash, in C (Enum's own hashes the name in Python); see lexer.TokenKind.
    __hash__ = object.__hash__


@record
class StringLit:
    """A string literal: its processed ``value`` and where each character came from.

    ``offsets`` has ``len(value) + 1`` entries: ``offsets[i]`` is the file offset where the source
    of ``value[i]`` starts, and the last entry is the offset just after the string's content.
    """

    value: str
    kind: StringKind
    span: Span
    offsets: tuple[int, ...]

    def span_of(self, start: int, end: int) -> Span:
        """The file span of ``value[start:end]``."""
        last = len(self.offsets) - 1
        start = max(0, min(start, last))
        end = max(start, min(end, last))
        if end == start:
            return Span(self.offsets[start], self.offsets[start])
        return Span(
            self.offsets[start], self.offsets[end - 1] + 1 if end < last else self.offsets[last]
        )


# --------------------------------------------------------------------------------------------
# Types


@record
class TextType:
    """The ``Text`` keyword (agent and helper input/output)."""

    span: Span


@record
class PrimitiveType:
    """``string``, ``number`` or ``boolean``."""

    name: L["string", "number", "boolean"]
    span: Span


@record
class NamedType:
    """A reference to a ``type`` block by name."""

    name: str
    span: Span


@record
class LiteralType:
    """One string literal used as a type, e.g. ``"low"`` in ``"low" | "high"``."""

    value: str
    span: Span


@record
class ArrayType:
    """``T[]``."""

    element: TypeExpr
    span: Span


@record
class ObjectType:
    """An inline object ``{ a: string, b?: number }``."""

    fields: tuple[Field, ...]
    span: Span


@record
class UnionType:
    """``A | B | ...`` (two or more variants, in source order)."""

    variants: tuple[TypeExpr, ...]
    span: Span


# --------------------------------------------------------------------------------------------
# Annotations and fields


@record
class DescAnnotation:
    """``@desc "..."``."""

    text: StringLit
    span: Span


@record
class ExampleArg:
    """``name = value`` inside ``@example(...)``."""

    name: Name
    value: Expr
    span: Span


@record
class ExampleAnnotation:
    """``@example(name = value, ...)``; ``@example()`` has no arguments."""

    args: tuple[ExampleArg, ...]
    span: Span


@record
class FlagAnnotation:
    """An annotation without arguments: ``@repeatable``, ``@untrusted`` (a tool whose results
    are untrusted), ``@trusted`` (an ``mcp`` server whose tools' results are trusted) or
    ``@quarantine`` (a helper that reads untrusted text and returns a typed value)."""

    name: L["repeatable", "untrusted", "trusted", "quarantine"]
    span: Span


@record
class SensitiveAnnotation:
    """``@sensitive`` or ``@sensitive(policy = "refuse")``: the tool is a sink of the taint
    policy (docs/security.md). ``args`` are as written (``None`` for a bare ``@sensitive``)."""

    args: tuple[ExampleArg, ...] | None
    span: Span

    @property
    def name(self) -> str:
        return "sensitive"


@record
class ApprovalAnnotation:
    """``@approval`` or ``@approval(timeout = 300)``: a call needs the application's approval.

    ``args`` are as written (``None`` for a bare ``@approval``); the checker knows the names.
    """

    args: tuple[ExampleArg, ...] | None
    span: Span


@record
class McpAnnotation:
    """``@mcp(Server)``: the tool's calls go to the MCP server declared as ``Server``.

    ``server`` is ``None`` when the parentheses were left empty (the checker reports it).
    ``remote`` is the tool's name on the server, when it is not the declared name
    (``@mcp(Files, "read-file")``: names that are not identifiers).
    """

    server: Name | None
    span: Span
    remote: StringLit | None = None


@record
class MaxOutputAnnotation:
    """``@maxOutput(4000)``, ``@maxOutput(tokens = 4000)`` or ``@maxOutput(chars = 16000)``:
    the most of a tool's result the model sees (docs/context.md). A bare number is tokens and
    is stored as a ``tokens`` argument; the checker knows the names."""

    args: tuple[ExampleArg, ...]
    span: Span

    @property
    def name(self) -> str:
        """The annotation's word, for messages that name misplaced annotations."""
        return "maxOutput"


def max_output_of(annotations: tuple[Annotation, ...]) -> MaxOutputAnnotation | None:
    """The first ``@maxOutput`` among ``annotations`` (the checker reports duplicates)."""
    for annotation in annotations:
        if isinstance(annotation, MaxOutputAnnotation):
            return annotation
    return None


def mcp_of(annotations: tuple[Annotation, ...]) -> McpAnnotation | None:
    """The first ``@mcp`` among ``annotations`` (the checker reports duplicates)."""
    for annotation in annotations:
        if isinstance(annotation, McpAnnotation):
            return annotation
    return None


def flagged(annotations: tuple[Annotation, ...], name: str) -> bool:
    """True when ``annotations`` hold the flag ``@name``."""
    return any(isinstance(a, FlagAnnotation) and a.name == name for a in annotations)


def sensitive_of(annotations: tuple[Annotation, ...]) -> SensitiveAnnotation | None:
    """The first ``@sensitive`` among ``annotations`` (the checker reports duplicates)."""
    for annotation in annotations:
        if isinstance(annotation, SensitiveAnnotation):
            return annotation
    return None


def approval_of(annotations: tuple[Annotation, ...]) -> ApprovalAnnotation | None:
    """The first ``@approval`` among ``annotations`` (the checker reports duplicates)."""
    for annotation in annotations:
        if isinstance(annotation, ApprovalAnnotation):
            return annotation
    return None


def desc_of(annotations: tuple[Annotation, ...]) -> StringLit | None:
    """The first ``@desc`` among ``annotations`` (the checker reports duplicates)."""
    for annotation in annotations:
        if isinstance(annotation, DescAnnotation):
            return annotation.text
    return None


def examples_of(annotations: tuple[Annotation, ...]) -> tuple[ExampleAnnotation, ...]:
    """Every ``@example`` among ``annotations``, in source order."""
    return tuple(a for a in annotations if isinstance(a, ExampleAnnotation))


@record
class Field:
    """``name?: Type @desc "..."`` in a type, object, context, intent, or parameter list."""

    name: Name
    type: TypeExpr
    optional: bool
    annotations: tuple[Annotation, ...]
    span: Span

    @property
    def desc(self) -> StringLit | None:
        """The field's ``@desc`` text, if any."""
        return desc_of(self.annotations)


# --------------------------------------------------------------------------------------------
# Expressions (workflows, prompt conditions, prompt arguments, option objects)

UnaryOp: TypeAlias = L["!", "-"]
BinaryOp: TypeAlias = L["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]


@record
class Literal:
    """A string, number, boolean or ``null`` literal (strings already processed)."""

    value: str | int | float | bool | None
    span: Span


@record
class NameRef:
    """A bare name: a workflow variable or parameter, a prompt parameter, a model or prompt."""

    name: str
    span: Span


@record
class CtxRef:
    """``ctx.name``."""

    name: Name
    span: Span


@record
class Member:
    """``object.name``."""

    object: Expr
    name: Name
    span: Span


@record
class Index:
    """``object[index]``."""

    object: Expr
    index: Expr
    span: Span


@record
class ArrayExpr:
    """``[a, b]``."""

    items: tuple[Expr, ...]
    span: Span


@record
class ObjectEntry:
    """``key: value`` in an object literal (the key may have been written as a string)."""

    key: Name
    value: Expr
    span: Span


@record
class ObjectExpr:
    """``{ a: 1, b: "x" }``; entries are separated by commas or line breaks."""

    entries: tuple[ObjectEntry, ...]
    span: Span


@record
class Unary:
    """``!x`` or ``-x``."""

    op: UnaryOp
    operand: Expr
    span: Span


@record
class Binary:
    """``left op right``; ``op_span`` covers the operator."""

    op: BinaryOp
    left: Expr
    right: Expr
    span: Span
    op_span: Span


@record
class Call:
    """``callee(arg, ...)``: a tool call, a param prompt, or a provider such as ``gemini``."""

    callee: Name
    args: tuple[Expr, ...]
    span: Span


# --------------------------------------------------------------------------------------------
# Prompt templates: the contents of one string, parsed, with spans inside the string


@record
class TText:
    """Literal text between template tags (processed characters)."""

    value: str
    span: Span


@record
class TExpr:
    """``{{expr}}``, e.g. ``{{name}}`` or ``{{ctx.name}}``."""

    expr: Expr
    span: Span


@record
class TIf:
    """``{{#if cond}} then {{else}} else {{/if}}``; ``else_`` is ``None`` without ``{{else}}``."""

    cond: Expr
    then: tuple[TNode, ...]
    else_: tuple[TNode, ...] | None
    span: Span


@record
class TSchema:
    """``{{@schema(target)}}``; the parser accepts only input, output and context."""

    target: L["input", "output", "context"]
    span: Span


# --------------------------------------------------------------------------------------------
# Prompt bodies


@record
class PromptText:
    """A string in a prompt position, with its template tree."""

    string: StringLit
    template: tuple[TNode, ...]
    span: Span


@record
class PromptExample:
    """``Example { user: "..." assistant: "..." }`` (``example`` also accepted)."""

    user: PromptText
    assistant: PromptText
    span: Span


@record
class PromptIf:
    """JS-style ``if (cond) { return "..." } else { ... }`` inside a prompt body.

    ``return "x"`` inside a branch becomes a ``PromptText``; ``else if`` nests a ``PromptIf`` as
    the only item of ``else_``. ``else_`` is ``None`` when there is no ``else``.
    """

    cond: Expr
    then: tuple[PromptItem, ...]
    else_: tuple[PromptItem, ...] | None
    span: Span


@record
class PromptBlock:
    """An inline ``{ ... }`` prompt body used in a ``prompt:`` composition."""

    items: tuple[PromptItem, ...]
    span: Span


# --------------------------------------------------------------------------------------------
# Config entries: ``name: value`` where value is terms joined by ``+``


@record
class ConfigValue:
    """The value of a config entry: one or more terms joined by ``+`` (source order)."""

    terms: tuple[ConfigTerm, ...]
    span: Span


@record
class ConfigEntry:
    """``name: value`` in a config or model block (model, prompt, embedding, provider, ...)."""

    name: Name
    value: ConfigValue
    span: Span


# --------------------------------------------------------------------------------------------
# Workflow statements


@record
class LetStmt:
    """``let name = value``."""

    name: Name
    value: Expr
    span: Span


@record
class AssignStmt:
    """``name = value``."""

    name: Name
    value: Expr
    span: Span


@record
class IfBranch:
    """``if (cond) { body }`` or one ``else if (cond) { body }``."""

    cond: Expr
    body: tuple[Stmt, ...]
    span: Span


@record
class IfStmt:
    """``if / else if / else``; ``else_body`` is ``None`` without a final ``else``."""

    branches: tuple[IfBranch, ...]
    else_body: tuple[Stmt, ...] | None
    span: Span


@record
class ReturnStmt:
    """``return`` with an optional value."""

    value: Expr | None
    span: Span


@record
class ExprStmt:
    """An expression used as a statement (usually a tool call)."""

    expr: Expr
    span: Span


# --------------------------------------------------------------------------------------------
# Members of agent and helper blocks (tools and workflows may also stand at the top level)


@record
class ToolDecl:
    """``tool name(params): Returns @desc ... @example(...)`` (``tool`` omitted in ``tools {}``).

    ``returns`` is ``None`` only when the parser already reported it missing.
    ``export_span`` is set when ``export`` was written (the checker rejects it).
    """

    name: Name
    params: tuple[Field, ...]
    returns: TypeExpr | None
    annotations: tuple[Annotation, ...]
    span: Span
    export_span: Span | None = None

    @property
    def desc(self) -> StringLit | None:
        """The tool's ``@desc`` text, if any."""
        return desc_of(self.annotations)

    @property
    def repeatable(self) -> bool:
        """True when the tool carries ``@repeatable`` (exempt from loop detection)."""
        return flagged(self.annotations, "repeatable")

    @property
    def examples(self) -> tuple[ExampleAnnotation, ...]:
        """The tool's ``@example`` annotations in source order."""
        return examples_of(self.annotations)


@record
class ToolsBlock:
    """``tools { a(...): T  b(...): U  Files }`` (in an agent, helper or workflow).

    ``groups`` are the names of tool groups written as bare lines (``Files``): their tools
    are the agent's too (see ``ToolGroupDecl``).
    """

    tools: tuple[ToolDecl, ...]
    span: Span
    groups: tuple[Name, ...] = ()


@record
class ToolGroupDecl:
    """``tools Name { a(...): T ... }`` at the top level: a named, exportable group of tool
    declarations that agents and helpers use by naming it in their ``tools { }`` block."""

    name: Name
    tools: tuple[ToolDecl, ...]
    span: Span
    export_span: Span | None = None


@record
class DescriptionEntry:
    """``description: "..."`` (helper top level, workflow body, intent block)."""

    text: StringLit
    span: Span


@record
class WorkflowDecl:
    """``workflow name(params): Returns { description: ...  tool ...  statements }``.

    ``tools`` are the scoped tools in source order (``tool x`` lines and ``tools {}`` blocks
    flattened). ``annotations`` are those written after the closing brace (``@example()``).
    ``groups`` are tool group names written in its ``tools {}`` blocks (the checker refuses
    them: a group is used by an agent or helper).
    """

    name: Name
    params: tuple[Field, ...]
    returns: TypeExpr | None
    description: DescriptionEntry | None
    tools: tuple[ToolDecl, ...]
    body: tuple[Stmt, ...]
    annotations: tuple[Annotation, ...]
    span: Span
    export_span: Span | None = None
    groups: tuple[Name, ...] = ()

    @property
    def examples(self) -> tuple[ExampleAnnotation, ...]:
        """The workflow's ``@example`` annotations in source order."""
        return examples_of(self.annotations)


@record
class ConfigBlock:
    """``default config { ... }`` (``name`` is ``None``) or ``config Name { ... }``."""

    name: Name | None
    entries: tuple[ConfigEntry, ...]
    span: Span

    @property
    def is_default(self) -> bool:
        """True for ``default config``."""
        return self.name is None

    def entry(self, key: str) -> ConfigEntry | None:
        """The first entry named ``key`` (the checker reports duplicates)."""
        for entry in self.entries:
            if entry.name.text == key:
                return entry
        return None


@record
class ContextBlock:
    """``context { name: string ... }``."""

    fields: tuple[Field, ...]
    span: Span


@record
class InputDecl:
    """``input: Type``."""

    type: TypeExpr
    span: Span


@record
class OutputDecl:
    """``output: Type``."""

    type: TypeExpr
    span: Span


@record
class ToolGrantNone:
    """A helper use with no ``with ... tools`` clause."""


@record
class ToolGrantAll:
    """``with all tools``."""

    span: Span


@record
class ToolGrantList:
    """``with tools { a, b }``."""

    names: tuple[Name, ...]
    span: Span


Handoff: TypeAlias = L["none", "user", "user_then_continue"]


@record
class HelperUse:
    """One line of ``helpers {}``: ``Name [with ...] [handoff user [then continue]] [@approval]``."""

    name: Name
    grant: ToolGrant
    handoff: Handoff
    span: Span
    annotations: tuple[Annotation, ...] = ()


@record
class HelpersBlock:
    """``helpers { ... }``."""

    uses: tuple[HelperUse, ...]
    span: Span


@record
class IntentDecl:
    """``intent Name { description: "..." fields { ... } }`` (top level or inline in ``intent:``)."""

    name: Name
    description: DescriptionEntry | None
    fields: tuple[Field, ...]
    span: Span
    export_span: Span | None = None


@record
class IntentAttach:
    """``intent: A + B`` (``NameRef`` items) or ``intent: { A { ... } }`` (``IntentDecl`` items)."""

    items: tuple[NameRef | IntentDecl, ...]
    span: Span


# --------------------------------------------------------------------------------------------
# Top-level declarations


@record
class ImportDecl:
    """``import { A, B } from "./path"``."""

    names: tuple[Name, ...]
    path: StringLit
    span: Span


@record
class ModelDecl:
    """``model Name { provider: gemini("...") }``."""

    name: Name
    entries: tuple[ConfigEntry, ...]
    span: Span
    export_span: Span | None = None


@record
class McpDecl:
    """``mcp Name { command: "...", args: [...], env: {...} }`` or ``mcp Name { url: "..." }``;
    ``annotations`` are those after the closing brace (``@trusted``)."""

    name: Name
    entries: tuple[ConfigEntry, ...]
    span: Span
    export_span: Span | None = None
    annotations: tuple[Annotation, ...] = ()

    def entry(self, key: str) -> ConfigEntry | None:
        """The first entry named ``key``."""
        return next((e for e in self.entries if e.name.text == key), None)


@record
class TypeDecl:
    """``type Name { field: T ... }``."""

    name: Name
    fields: tuple[Field, ...]
    span: Span
    export_span: Span | None = None


@record
class PromptDecl:
    """``prompt Name { ... }`` or ``prompt Name(params) { ... }`` (``params`` ``None`` if absent)."""

    name: Name
    params: tuple[Field, ...] | None
    items: tuple[PromptItem, ...]
    span: Span
    export_span: Span | None = None


@record
class PersonaDecl:
    """``persona Name { ... }``: a prompt body the agent may take on as an overlay."""

    name: Name
    items: tuple[PromptItem, ...]
    span: Span
    export_span: Span | None = None


@record
class PersonasBlock:
    """``personas { A, B }``: the personas an agent or helper may take on."""

    names: tuple[Name, ...]
    span: Span


@record
class AgentDecl:
    """``agent Name { ... }`` or ``helper Name { ... }`` (``kind`` says which); ``annotations``
    are those after the closing brace (``@quarantine``)."""

    kind: L["agent", "helper"]
    name: Name
    members: tuple[AgentMember, ...]
    span: Span
    export_span: Span | None = None
    annotations: tuple[Annotation, ...] = ()

    @property
    def is_helper(self) -> bool:
        """True for ``helper`` blocks."""
        return self.kind == "helper"


@record
class Module:
    """One parsed ``.agent`` file: its declarations in source order."""

    source: SourceFile
    decls: tuple[Decl, ...]
    span: Span

    @property
    def agents(self) -> tuple[AgentDecl, ...]:
        """The ``agent`` and ``helper`` blocks."""
        return tuple(d for d in self.decls if isinstance(d, AgentDecl))

    @property
    def imports(self) -> tuple[ImportDecl, ...]:
        """The ``import`` declarations."""
        return tuple(d for d in self.decls if isinstance(d, ImportDecl))


@record
class TestReply:
    """One model response in a test's ``model { }``: ``call f(a = 1)``, ``say "..."`` or
    ``output { ... }``."""

    kind: L["call", "say", "output"]
    name: Name | None  # call
    args: tuple[ExampleArg, ...]  # call
    value: Expr | None  # say (a string Literal), output
    span: Span


@record
class TestToolResult:
    """``name: value`` in a test's ``tools { }``: what the tool returns when called."""

    name: Name
    value: Expr
    span: Span


@record
class TestExpect:
    """One line of a test's ``expect { }``.

    ``called f(a = 1)`` / ``not called f``, ``text contains "..."``, ``output { ... }``,
    ``error`` / ``error contains "..."``, ``intent Name`` / ``intent Name { ... }``.
    """

    kind: L["called", "not_called", "text", "output", "error", "intent"]
    name: Name | None  # called, not_called, intent
    args: tuple[ExampleArg, ...] | None  # called: None when no argument list was written
    value: Expr | None  # text, error (string Literals), output, intent fields
    span: Span


@record
class TestDecl:
    """``test "name" { agent: Main  input: "..."  model { } tools { } expect { } }``."""

    name: StringLit
    entries: tuple[ConfigEntry, ...]  # agent, config, persona, context, input, cassette
    replies: tuple[TestReply, ...] | None  # None without a `model { }` block
    tools: tuple[TestToolResult, ...]
    expects: tuple[TestExpect, ...]
    span: Span

    def entry(self, key: str) -> ConfigEntry | None:
        """The first entry named ``key``."""
        return next((e for e in self.entries if e.name.text == key), None)


# --------------------------------------------------------------------------------------------
# The closed unions, one per category (real unions, usable with isinstance and match)

TypeExpr: TypeAlias = (
    TextType | PrimitiveType | NamedType | LiteralType | ArrayType | ObjectType | UnionType
)

Annotation: TypeAlias = (
    DescAnnotation
    | ExampleAnnotation
    | FlagAnnotation
    | ApprovalAnnotation
    | McpAnnotation
    | SensitiveAnnotation
    | MaxOutputAnnotation
)

Expr: TypeAlias = (
    Literal | NameRef | CtxRef | Member | Index | ArrayExpr | ObjectExpr | Unary | Binary | Call
)

TNode: TypeAlias = TText | TExpr | TIf | TSchema

PromptItem: TypeAlias = PromptText | PromptExample | PromptIf

ConfigTerm: TypeAlias = NameRef | Call | Literal | PromptText | PromptBlock | ObjectExpr | ArrayExpr
"""One ``+``-separated part of a config value.

Strings are always ``PromptText`` (even for ``description`` or ``protocol``: use
``.string.value``); numbers and booleans are ``Literal``; ``MyGemini`` is a ``NameRef``;
``gemini("m", {...})`` and ``Greeting(ctx.x)`` are ``Call``; ``{ "..." }`` is a ``PromptBlock``.
"""

Stmt: TypeAlias = LetStmt | AssignStmt | IfStmt | ReturnStmt | ExprStmt

ToolGrant: TypeAlias = ToolGrantNone | ToolGrantAll | ToolGrantList

AgentMember: TypeAlias = (
    ConfigBlock
    | ContextBlock
    | InputDecl
    | OutputDecl
    | ToolDecl
    | ToolsBlock
    | WorkflowDecl
    | HelpersBlock
    | PersonasBlock
    | IntentAttach
    | DescriptionEntry
)
"""One member of an ``agent`` or ``helper`` block."""

Decl: TypeAlias = (
    ImportDecl
    | ModelDecl
    | McpDecl
    | TypeDecl
    | PromptDecl
    | PersonaDecl
    | IntentDecl
    | AgentDecl
    | ToolGroupDecl
    | ToolDecl
    | ToolsBlock
    | WorkflowDecl
    | TestDecl
)


def walk(node: object) -> Iterator[object]:
    """Every node under ``node`` (itself included), depth first in field order.

    Yields nodes of any category (and ``Name`` / ``StringLit`` leaves), which suits tools that
    look at every span, such as tests and editors.
    """
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, tuple):
            stack.extend(reversed(current))
            continue
        if not is_record(current) or current.__class__ is Span:  # a span is no node
            continue
        yield current
        # Every field goes on the stack: the tests above skip the ones that hold no node.
        stack.extend(reversed([getattr(current, name) for name in record_fields(current)]))

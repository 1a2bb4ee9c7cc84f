"""The IR document as types: one ``TypedDict`` per object of ``schema.json``.

The IR is JSON (docs/ir.md): the compiler's lowering produces it, the code generators and
the runtime read it, and another language's runtime must be able to execute it unchanged.
These types say its shape once, for the type checker: a producer that forgets a key or a
consumer that reads one that does not exist is a ``mypy --strict`` error. A test
(``tests/compiler/test_ir_model.py``) holds them equal to the schema: every object of the
schema has its type here, with the same keys, the same required keys and the same literal
values for its tags.

They are types only: a document loaded from disk is plain ``dict`` and ``list`` values, and
nothing here checks it at run time (the runtime checks the version and the hash; the schema
is for tools and tests). Keys that are Python keywords (``else``) use the functional form.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "Agent",
    "Approval",
    "ArrayExpr",
    "ArrayType",
    "BinaryExpr",
    "BindStmt",
    "Block",
    "CallExpr",
    "Config",
    "Document",
    "Example",
    "Expr",
    "ExprStmt",
    "Field",
    "HelperUse",
    "History",
    "IfBranch",
    "IfStmt",
    "IndexExpr",
    "Intent",
    "LitExpr",
    "LiteralType",
    "Loc",
    "McpHttpServer",
    "McpServer",
    "McpStdioServer",
    "MemberExpr",
    "Model",
    "NameExpr",
    "NamedExpr",
    "NamedPrompt",
    "ObjectExpr",
    "ObjectType",
    "OutputCap",
    "Persona",
    "PrimitiveType",
    "PromptBody",
    "PromptExample",
    "PromptIf",
    "PromptInline",
    "PromptItem",
    "PromptPart",
    "PromptRef",
    "PromptText",
    "RefType",
    "ReturnStmt",
    "Sensitive",
    "Stmt",
    "TExpr",
    "TIf",
    "TNode",
    "TSchema",
    "TText",
    "TaintPolicy",
    "Template",
    "Tool",
    "Type",
    "UnaryExpr",
    "UnionType",
    "Workflow",
]

#: ``[line, column]``, both from 1, of the construct in its ``.agent`` file.
Loc = list[int]

# -- types ---------------------------------------------------------------------------------


class PrimitiveType(TypedDict):
    kind: Literal["text", "string", "number", "boolean"]


class LiteralType(TypedDict):
    kind: Literal["literal"]
    value: str


class ArrayType(TypedDict):
    kind: Literal["array"]
    items: Type


class ObjectType(TypedDict):
    kind: Literal["object"]
    fields: list[Field]


class RefType(TypedDict):
    kind: Literal["ref"]
    name: str


class UnionType(TypedDict):
    kind: Literal["union"]
    variants: list[Type]


Type = PrimitiveType | LiteralType | ArrayType | ObjectType | RefType | UnionType


class Field(TypedDict):
    name: str
    type: Type
    optional: bool
    description: str | None


# -- expressions (workflows, prompt templates, prompt arguments) ---------------------------------


class LitExpr(TypedDict):
    e: Literal["lit"]
    value: str | int | float | bool | None


class NameExpr(TypedDict):
    e: Literal["name", "ctx"]
    name: str


class MemberExpr(TypedDict):
    e: Literal["member"]
    object: Expr
    name: str


class IndexExpr(TypedDict):
    e: Literal["index"]
    object: Expr
    index: Expr


class ArrayExpr(TypedDict):
    e: Literal["array"]
    items: list[Expr]


class NamedExpr(TypedDict):
    name: str
    value: Expr


class ObjectExpr(TypedDict):
    e: Literal["object"]
    fields: list[NamedExpr]


class UnaryExpr(TypedDict):
    e: Literal["unary"]
    op: Literal["!", "-"]
    operand: Expr


class BinaryExpr(TypedDict):
    e: Literal["binary"]
    op: Literal["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]
    left: Expr
    right: Expr


class CallExpr(TypedDict):
    e: Literal["call"]
    tool: str
    args: list[NamedExpr]
    loc: Loc


Expr = (
    LitExpr
    | NameExpr
    | MemberExpr
    | IndexExpr
    | ArrayExpr
    | ObjectExpr
    | UnaryExpr
    | BinaryExpr
    | CallExpr
)

# -- workflow bodies -----------------------------------------------------------------------------


class BindStmt(TypedDict):
    s: Literal["let", "assign"]
    loc: Loc
    name: str
    value: Expr


class IfBranch(TypedDict):
    cond: Expr
    body: Block


IfStmt = TypedDict(
    "IfStmt",
    {"s": Literal["if"], "loc": Loc, "branches": list[IfBranch], "else": "Block | None"},
)


class ReturnStmt(TypedDict):
    s: Literal["return"]
    loc: Loc
    value: Expr | None


class ExprStmt(TypedDict):
    s: Literal["expr"]
    loc: Loc
    value: Expr


Stmt = BindStmt | IfStmt | ReturnStmt | ExprStmt
Block = list[Stmt]

# -- prompts -------------------------------------------------------------------------------------


class TText(TypedDict):
    t: Literal["text"]
    value: str


class TExpr(TypedDict):
    t: Literal["expr"]
    expr: Expr


TIf = TypedDict("TIf", {"t": Literal["if"], "cond": Expr, "then": "Template", "else": "Template"})


class TSchema(TypedDict):
    t: Literal["schema"]
    target: Literal["input", "output", "context"]


TNode = TText | TExpr | TIf | TSchema
Template = list[TNode]


class PromptText(TypedDict):
    kind: Literal["text"]
    template: Template


class PromptExample(TypedDict):
    kind: Literal["example"]
    user: Template
    assistant: Template


PromptIf = TypedDict(
    "PromptIf",
    {"kind": Literal["if"], "cond": Expr, "then": "PromptBody", "else": "PromptBody"},
)

PromptItem = PromptText | PromptExample | PromptIf
PromptBody = list[PromptItem]


class PromptRef(TypedDict):
    kind: Literal["ref"]
    name: str
    args: list[Expr]
    loc: Loc


class PromptInline(TypedDict):
    kind: Literal["inline"]
    body: PromptBody
    loc: Loc


PromptPart = PromptRef | PromptInline


class NamedPrompt(TypedDict):
    name: str
    params: list[Field]
    body: PromptBody


class Persona(TypedDict):
    name: str
    body: PromptBody


# -- agents --------------------------------------------------------------------------------------


class _Model(TypedDict):
    provider: Literal["gemini", "openai", "anthropic", "custom"]
    model: str
    options: dict[str, Any]
    id: str | None
    base_url: str | None
    name: str | None


class Model(_Model, total=False):
    #: A model block's ``contextWindow`` / ``maxOutputTokens`` (tokens; docs/context.md).
    contextWindow: int
    maxOutputTokens: int


class OutputCap(TypedDict, total=False):
    """``@maxOutput`` / ``maxToolOutput``: one of the two, tokens or characters."""

    tokens: int
    chars: int


class History(TypedDict, total=False):
    """A config's ``history { ... }`` (docs/context.md)."""

    keepLast: int
    compact: Literal["drop", "summarize", "clearToolResults"]
    summarizeWith: Model
    trigger: float


class _Config(TypedDict):
    model: Model
    prompt: list[PromptPart]
    embedding: Model | None
    max_tool_loops: int | None
    protocol: Literal["blocks", "native"] | None


class TaintPolicy(TypedDict, total=False):
    """``taint: { sensitive: ... }``: what a tainted call to a sink does (docs/security.md)."""

    sensitive: Literal["approve", "refuse", "allow"]


class Config(_Config, total=False):
    fallback: list[Model]
    codeMode: bool
    taint: TaintPolicy
    #: ``maxToolOutput``: ``{"tokens": N}`` or ``{"chars": N}``.
    maxToolOutput: OutputCap
    history: History


class Approval(TypedDict):
    #: Seconds; ``None``: the runtime's default.
    timeout: float | None


class _Tool(TypedDict):
    name: str
    description: str | None
    params: list[Field]
    returns: Type
    examples: list[dict[str, Any]]


class Sensitive(TypedDict):
    """``@sensitive``: the tool is a sink; ``policy`` overrides the config's (``None``: it)."""

    policy: Literal["approve", "refuse", "allow"] | None


class Tool(_Tool, total=False):
    repeatable: Literal[True]
    #: ``@maxOutput``: ``{"tokens": N}`` or ``{"chars": N}``.
    maxOutput: OutputCap
    approval: Approval
    #: ``@untrusted``, or a tool of an ``mcp`` server without ``@trusted``: results untrusted.
    untrusted: Literal[True]
    sensitive: Sensitive
    #: ``@mcp(Name)``: the server (a key of the document's ``mcp``) that runs this tool.
    mcp: str
    #: ``@mcp(Name, "tool-name")``: the tool's name on that server, when it is not ``name``.
    mcpTool: str


class McpStdioServer(TypedDict):
    """``mcp Name { command, args, env }``: a server launched over stdio."""

    command: str
    args: list[str]
    env: dict[str, str]


class McpHttpServer(TypedDict):
    """``mcp Name { url }``: a server reached over streamable HTTP."""

    url: str


McpServer = McpStdioServer | McpHttpServer


class _Workflow(TypedDict):
    name: str
    description: str
    params: list[Field]
    returns: Type
    tools: list[Tool]
    body: Block
    source: str
    loc: Loc
    examples: list[dict[str, Any]]


class Workflow(_Workflow, total=False):
    approval: Approval


class _HelperUse(TypedDict):
    name: str
    tools: Literal["none", "all"] | list[str]
    handoff: Literal["none", "user", "user_then_continue"]


class HelperUse(_HelperUse, total=False):
    approval: Approval


class Intent(TypedDict):
    name: str
    description: str | None
    fields: list[Field]


class Example(TypedDict):
    kind: Literal["tool", "workflow"]
    target: str
    args: dict[str, Any]


class _Agent(TypedDict):
    name: str
    kind: Literal["agent", "helper"]
    description: str | None
    configs: dict[str, Config]
    context: list[Field]
    input: Type
    output: Type
    tools: list[Tool]
    workflows: list[Workflow]
    helpers: list[HelperUse]
    personas: list[str]
    intents: list[Intent]
    examples: list[Example]
    dropped_examples: list[Example]


class Agent(_Agent, total=False):
    #: ``helper Name { ... } @quarantine``: reads untrusted text, no tools, typed output.
    quarantine: Literal[True]


class _Document(TypedDict):
    """One agent file's IR: the agent, its helpers and everything they use."""

    ir_version: Literal[1]
    compiler_version: str
    hash: str
    source: str
    root: str
    agents: dict[str, Agent]
    types: dict[str, ObjectType]
    prompts: dict[str, NamedPrompt]
    personas: dict[str, Persona]


class Document(_Document, total=False):
    #: The MCP servers of the document's ``@mcp`` tools (present only when there are some).
    mcp: dict[str, McpServer]

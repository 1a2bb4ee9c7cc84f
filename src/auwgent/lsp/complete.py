"""Completion: what may be written at a position, from the syntax tree and the index.

Where the cursor stands is read from the enclosing declaration and member (the parser
recovers from a half-written line, so the tree of the buffer being typed is good enough) and
from the text before the cursor on its line. Each place offers its own words: declaration
keywords at the top level, member keywords in an agent, config fields and the models or
prompts in scope in a config, type names where a type goes, tools, workflows, parameters and
variables in a workflow, helpers in ``helpers { }``, intents after ``intent:``, the context's
fields after ``ctx.``, parameters inside a template ``{{ }}``, and after ``@`` the
annotations that apply to what it annotates (``ANNOTATIONS``) and are not written on it yet
(``@example`` may repeat).
"""

from __future__ import annotations

import re

from auwgent._records import record
from auwgent.compiler import (
    CONFIG_KEYS,
    DECL_WORDS,
    MEMBER_SYNTAX,
    PROVIDERS,
    STATEMENT_WORDS,
    FileScope,
    ModuleGraph,
    SourceFile,
    Span,
    Symbol,
    is_exported,
    parse,
)
from auwgent.compiler import nodes as n

from .index import Definition, FileIndex
from .workspace import ProjectState

__all__ = ["Candidate", "complete"]


@record
class Candidate:
    """One completion: what is shown, what kind of thing it is, and what is inserted."""

    label: str
    kind: str
    detail: str | None = None
    doc: str | None = None
    insert: str | None = None


# The parser's own lists, so that completion offers what the parser reads.
TOP_KEYWORDS = (*DECL_WORDS, "tools", "test")
EXPORTABLE = ("model", "mcp", "type", "prompt", "persona", "intent", "helper", "tools")
STATEMENT_KEYWORDS = tuple(sorted(STATEMENT_WORDS))
PROMPT_KEYWORDS = ("Example", "if", "else", "return")
VALUE_WORDS = ("true", "false", "null", "ctx")
PRIMITIVES = ("string", "number", "boolean")
TEMPLATE_WORDS = ("#if", "else", "/if", "@schema(input)", "@schema(output)", "@schema(context)")

#: The annotations the checker accepts on each kind of thing (``checker/agents.py``,
#: ``checker/context.py``): a field or parameter takes ``@desc``, a workflow ``@example`` and
#: ``@approval`` after its body, a helper's line in ``helpers { }`` ``@approval``.
ANNOTATIONS: dict[type, tuple[str, ...]] = {
    n.Field: ("desc",),
    n.ToolDecl: ("desc", "example", "repeatable", "approval", "untrusted", "sensitive", "mcp"),
    n.WorkflowDecl: ("example", "approval"),
    n.HelperUse: ("approval",),
    n.McpDecl: ("trusted",),
    n.AgentDecl: ("quarantine",),
}
#: Where what the ``@`` annotates cannot be told: every annotation the parser reads.
ANY_ANNOTATION = (*ANNOTATIONS[n.ToolDecl], "trusted", "quarantine")

_TYPE_AFTER_COLON = re.compile(r"^\s*\w+\??\s*:\s*[\w\[\]|\"' ]*$")
_IO_TYPE = re.compile(r"^\s*(input|output)\s*:\s*[\w\[\]|\"' ]*$")
_SIGNATURE_TYPE = re.compile(r"(\([^)]*\w\??\s*:|\)\s*:)\s*[\w\[\]|\"' ]*$")
_WORD_END = re.compile(r"\w*$")
_WORD_START = re.compile(r"\w*")
_ENTRY_VALUE = re.compile(r"^\s*(\w+)\s*:(.*)$")


def complete(project: ProjectState, rel: str, offset: int) -> list[Candidate]:
    """The completions at ``offset`` in file ``rel`` of ``project``."""
    text = project.texts.get(rel, "")
    offset = max(0, min(offset, len(text)))
    before = text[text.rfind("\n", 0, offset) + 1 : offset]
    head = _WORD_END.sub("", before)  # the line before the word being typed
    module = project.module(rel)
    graph = project.graph
    scope = graph.scopes.get(rel) if graph is not None else None
    index = project.index(rel)
    if module is None or graph is None or scope is None or index is None:
        return _words(TOP_KEYWORDS, "keyword")
    if head.endswith("@"):
        return _words(annotations_at(rel, text, offset), "keyword")
    finder = _Completer(graph, scope, index, module, offset, head)
    return finder.run()


def annotations_at(rel: str, text: str, offset: int) -> tuple[str, ...]:
    """The annotations that apply where the ``@`` before ``offset`` stands.

    The half-written annotation is completed as ``@repeatable`` (one the parser reads after
    anything annotatable) and the text parsed again: the node that then carries it is what
    the ``@`` annotates.
    """
    at = text.rfind("@", 0, offset)
    word = _WORD_START.match(text, offset)
    end = word.end() if word else offset
    module, _ = parse(SourceFile(rel, text[:at] + "@repeatable" + text[end:]))
    for node in n.walk(module):
        annotations = getattr(node, "annotations", ())
        if any(isinstance(a, n.FlagAnnotation) and a.span.start == at for a in annotations):
            # Only `@example` may be written twice.
            written = {_annotation_word(a) for a in annotations if a.span.start != at}
            allowed = ANNOTATIONS.get(type(node), ANY_ANNOTATION)
            return tuple(a for a in allowed if a == "example" or a not in written)
    return ANY_ANNOTATION


def _annotation_word(annotation: n.Annotation) -> str:
    if isinstance(annotation, n.FlagAnnotation):
        return annotation.name
    return _ANNOTATION_WORDS[type(annotation)]


_ANNOTATION_WORDS: dict[type, str] = {
    n.DescAnnotation: "desc",
    n.ExampleAnnotation: "example",
    n.ApprovalAnnotation: "approval",
    n.McpAnnotation: "mcp",
    n.SensitiveAnnotation: "sensitive",
}


def _words(words: tuple[str, ...], kind: str) -> list[Candidate]:
    return [Candidate(word, kind) for word in words]


def _contains(span: Span, offset: int) -> bool:
    return span.start < offset <= span.end


class _Completer:
    def __init__(
        self,
        graph: ModuleGraph,
        scope: FileScope,
        index: FileIndex,
        module: n.Module,
        offset: int,
        head: str,
    ) -> None:
        self.graph = graph
        self.scope = scope
        self.index = index
        self.module = module
        self.offset = offset
        self.head = head

    def run(self) -> list[Candidate]:
        head = self.head
        decl = next((d for d in self.module.decls if _contains(d.span, self.offset)), None)
        agent = decl if isinstance(decl, n.AgentDecl) else None
        if head.endswith("ctx."):
            return self.context(agent)
        if self.in_template():
            params = self.params_of(decl)
            return [*params, Candidate("ctx", "keyword"), *_words(TEMPLATE_WORDS, "keyword")]
        if decl is None:
            if head.strip() == "export":
                return _words(EXPORTABLE, "keyword")
            if "import" in head and "from" not in head:
                return self.exported_elsewhere()
            return _words(TOP_KEYWORDS, "keyword")
        if self.is_type_position(decl):
            return self.types(allow_text=agent is not None and bool(_IO_TYPE.match(head)))
        if isinstance(decl, n.PromptDecl):
            if not head.strip():
                return _words(PROMPT_KEYWORDS, "keyword")
            return [*self.params_of(decl), *_words(VALUE_WORDS, "keyword")]
        if agent is not None:
            return self.in_agent(agent)
        return self.top_names(None)

    # -- places ------------------------------------------------------------------------------

    def in_template(self) -> bool:
        """Whether the cursor is inside a ``{{ ... }}`` tag being written."""
        opened = self.head.rfind("{{")
        return opened != -1 and self.head.rfind("}}") < opened

    def is_type_position(self, decl: n.Decl) -> bool:
        head = self.head
        if _SIGNATURE_TYPE.search(head) or _IO_TYPE.match(head):
            return True
        if not _TYPE_AFTER_COLON.match(head):
            return False
        if isinstance(decl, n.TypeDecl | n.IntentDecl):
            return True
        if isinstance(decl, n.AgentDecl):
            member = self.member(decl)
            return isinstance(
                member, n.ContextBlock | n.IntentAttach
            ) and not head.lstrip().startswith("intent")
        return False

    def member(self, agent: n.AgentDecl) -> n.AgentMember | None:
        return next((m for m in agent.members if _contains(m.span, self.offset)), None)

    def in_agent(self, agent: n.AgentDecl) -> list[Candidate]:
        head = self.head
        member = self.member(agent)
        key = f"{self.index.path}::{agent.name.text}"
        if re.match(r"^\s*intent\s*:", head):
            return self.top_names("intent")
        if isinstance(member, n.ConfigBlock):
            entry = _ENTRY_VALUE.match(head)
            if entry is None:
                return _words(CONFIG_KEYS, "field")
            field = entry.group(1)
            if field in ("model", "embedding", "fallback"):
                return [*self.top_names("model"), *self.providers()]
            if field == "prompt":
                return [*self.top_names("prompt"), Candidate("ctx", "keyword")]
            return self.top_names(None)
        if isinstance(member, n.PersonasBlock):
            return self.top_names("persona")
        if isinstance(member, n.ToolsBlock) and not head.strip():
            return self.top_names("tools")  # a tool group used here, or a new signature
        if isinstance(member, n.HelpersBlock):
            if re.search(r"with\s+tools\s*\{[^}]*$", head):
                return self.members(key, ("tool",))
            if re.search(r"\bwith\s*$", head):
                return [Candidate("all tools", "keyword"), Candidate("tools", "keyword")]
            if not head.strip():
                return self.top_names("helper")
            return _words(("with", "handoff user", "then continue"), "keyword")
        if isinstance(member, n.WorkflowDecl):
            flow = f"{key}.{member.name.text}"
            names = [
                *self.members(key, ("tool", "workflow")),
                *self.members(flow, ("tool", "parameter", "variable")),
                *_words(VALUE_WORDS, "keyword"),
            ]
            if not head.strip():
                names = [*_words(STATEMENT_KEYWORDS, "keyword"), *names]
            return names
        if member is None or not head.strip():
            return _words(MEMBER_SYNTAX, "keyword")
        return self.top_names(None)

    # -- names -------------------------------------------------------------------------------

    def top_names(self, kind: str | None) -> list[Candidate]:
        """The top-level names visible in this file (of one declaring ``kind``, or all)."""
        found = []
        for name in self.scope.visible_names():
            symbol = self.scope.lookup(name)
            if symbol is None or (kind is not None and symbol.kind != kind):
                continue
            found.append(Candidate(name, symbol.kind, symbol.kind, None))
        return found

    def types(self, *, allow_text: bool) -> list[Candidate]:
        words = (*PRIMITIVES, "Text") if allow_text else PRIMITIVES
        return [*_words(words, "type"), *self.top_names("type")]

    def providers(self) -> list[Candidate]:
        return [Candidate(name, "provider", "provider", None, f"{name}(") for name in PROVIDERS]

    def members(self, prefix: str, kinds: tuple[str, ...]) -> list[Candidate]:
        """Definitions directly inside ``prefix`` (``path::Agent``) of the given kinds."""
        found = []
        for definition in self.index.definitions:
            rest = definition.key[len(prefix) :]
            if not definition.key.startswith(prefix) or definition.kind not in kinds:
                continue
            if rest[:1] in (".", "(") and "." not in rest[1:] and "(" not in rest[1:]:
                found.append(_candidate(definition))
        return found

    def context(self, agent: n.AgentDecl | None) -> list[Candidate]:
        if agent is not None:
            fields = self.index.context.get(agent.name.text, [])
        else:  # a prompt: the context of any agent of this file may reach it
            fields = [f for group in self.index.context.values() for f in group]
        unique = {f.name: f for f in fields}
        return [_candidate(f) for f in unique.values()]

    def params_of(self, decl: n.Decl | None) -> list[Candidate]:
        if not isinstance(decl, n.PromptDecl):
            return []
        return self.members(f"{self.index.path}::{decl.name.text}", ("parameter",))

    def exported_elsewhere(self) -> list[Candidate]:
        """Names other files of the project export (for ``import { ... }``)."""
        return [
            Candidate(s.name, s.kind, f"{s.kind} from {s.path}")
            for s in self.exports()
            if s.path != self.scope.path
        ]

    def exports(self) -> list[Symbol]:
        return [
            symbol
            for scope in self.graph.scopes.values()
            for symbol in scope.local.values()
            if is_exported(symbol.decl)
        ]


def _candidate(definition: Definition) -> Candidate:
    return Candidate(definition.name, definition.kind, definition.signature, definition.doc)

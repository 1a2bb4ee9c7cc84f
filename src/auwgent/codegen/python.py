"""The Python target: one IR document in, the source of ``<stem>_types.py`` out.

The generated module is what an application imports, and it only declares: the name aliases
(``AgentName``, ``ToolName``...), a ``TypedDict`` for every named type of the IR and for every
inline object, the payloads of the intents whose shape depends on the agent (built-in and
custom), ``AuwgentContext`` / ``AuwgentApiKeys`` / ``AuwgentConfig``, the ``AuwgentTools``,
intent handler and middleware base classes with the agent's signatures, the typed agent class,
the embedded IR (its canonical JSON, the text its hash covers) and, last, the
``auwgent(config)`` factory. What behaves, and what is the same for every agent, lives in
:mod:`auwgent.runtime.bindings`; the module imports it under its public names, so that a
runtime fix needs no regeneration.

It targets Python 3.10: optional keys are written as a ``total=False`` subclass of the
required ones (``NotRequired`` is 3.11), and keys that are not identifiers use the functional
``TypedDict`` syntax. The output is deterministic: the same IR always gives the same text.
"""

from __future__ import annotations

import json
import keyword
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from auwgent._records import record
from auwgent._typing import unhandled
from auwgent.codegen.writer import CodeWriter
from auwgent.errors import CompileError
from auwgent.ir import canonical_json
from auwgent.ir import model as ir
from auwgent.ir.vocabulary import INTENTS, STREAMED_INTENTS, api_key_env, api_key_field

__all__ = ["module_name", "render_python"]

IR = Mapping[str, Any]

#: Built-in intents: (intent name, payload class, what fires it), from the vocabulary.
BUILTIN_INTENTS: tuple[tuple[str, str, str], ...] = tuple(
    (intent.name, intent.class_name, intent.when) for intent in INTENTS
)

#: What the module imports from the runtime's bindings under its own public names: the
#: declarations that are the same for every agent.
_SHARED = (
    "ApprovalAnswer", "ApprovalDecision", "ApprovalResultIntent", "AuwgentCodeLimits",
    "AuwgentLimits", "AuwgentRetry", "AuwgentSession", "AuwgentTimeouts",
    "ContextCompactedIntent", "ErrorIntent",
    "HandoffCompleteIntent", "IntentControl", "MaybeAwaitable", "MiddlewareContext",
    "PartialIntent", "ResponseTextIntent", "ResponseTextPartialIntent", "ToolErrorIntent",
)  # fmt: skip
#: ... and what it imports under a private name: the base classes and the functions it calls.
_RUNTIME = (
    "IntentHandler",
    "Middleware",
    "PartialIntentHandler",
    "RuntimeConfig",
    "Tools",
    "TypedAgent",
    "create",
    "placeholders",
)
_TYPING_IMPORTS = ("Any", "ClassVar", "Literal", "TypedDict", "Union")
_ABC_IMPORTS = ("Callable", "Mapping")
#: Names the module itself defines or imports; a user type may not take them.
_FIXED_NAMES = frozenset(
    {
        *_TYPING_IMPORTS,
        *_ABC_IMPORTS,
        *_SHARED,
        *("_" + name for name in _RUNTIME),
        *(cls for _, cls, _ in BUILTIN_INTENTS),
        "AgentName",
        "ToolName",
        "WorkflowName",
        "HelperName",
        "ConfigName",
        "PersonaName",
        "IntentName",
        "OutputTypeName",
        "Approver",
        "IR_JSON",
        "IR_HASH",
        "IR_VERSION",
        "COMPILER_VERSION",
        "ROOT_AGENT",
        "auwgent",
    }
)

#: Characters of the canonical IR text per line of the embedded ``IR_JSON``.
_IR_PIECE = 88

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_WORD = re.compile(r"[A-Za-z0-9]+")


# --------------------------------------------------------------------------- naming helpers


def is_identifier(name: str) -> bool:
    """Whether ``name`` can be written as a Python name (an identifier, not a keyword)."""
    return bool(_IDENT.match(name)) and not keyword.iskeyword(name)


def _method_name_ok(name: str) -> bool:
    """Whether ``name`` can be written as is inside a class body (a method, a parameter, a
    TypedDict key): "__x" would be name-mangled there, and dunders belong to Python."""
    return is_identifier(name) and not name.startswith("__")


def module_name(stem: str) -> str:
    """A valid Python module name for a file stem (``my-agent`` → ``my_agent``)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", stem) or "_"
    if name[0].isdigit():
        name = "_" + name
    if keyword.iskeyword(name):
        name += "_"
    return name


def _sanitised(name: str) -> str:
    """The runtime's fallback method name for an intent (``needs-review`` → ``needs_review``)."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", name).strip("_").lower()


def _pascal(name: str) -> str:
    joined = "".join(word[:1].upper() + word[1:] for word in _WORD.findall(name))
    # A class name cannot start with a digit (an intent named "_2fa" gives "_2faIntent").
    return "_" + joined if joined[:1].isdigit() else joined


def _literal(values: Iterable[str], empty: str = "str") -> str:
    items = list(dict.fromkeys(values))
    if not items:
        return empty
    return "Literal[" + ", ".join(_string(v) for v in items) + "]"


def _string(value: str) -> str:
    """A double-quoted Python string literal (the style of the rest of the module)."""
    # JSON string escapes are valid Python escapes; non-ASCII text stays readable.
    return json.dumps(value, ensure_ascii=False)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def _visible(text: str) -> str:
    """``text`` with control characters written as escapes: source may not hold them."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _docstring(text: str) -> list[str]:
    """The lines of a triple-quoted docstring holding ``text`` safely."""
    safe = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    safe = _visible(safe)
    if safe.endswith('"'):
        safe = safe[:-1] + '\\"'
    # Long lines (descriptions written in the .agent file) are wrapped to keep the module
    # readable; the words are unchanged.
    lines = [
        part
        for line in (safe.splitlines() or [""])
        for part in (textwrap.wrap(line, 88, break_long_words=False) or [""])
    ]
    if len(lines) == 1:
        return ['"""' + lines[0] + '"""']
    return ['"""' + lines[0], *lines[1:], '"""']


# --------------------------------------------------------------------------- the model of the IR


@record
class _Field:
    key: str
    annotation: str
    optional: bool
    description: str | None = None


class Program:
    """Read-only views over one IR document that several sections need."""

    def __init__(self, doc: ir.Document) -> None:
        self.doc = doc
        self.root: str = doc["root"]
        self.agents: list[ir.Agent] = list(self._agents_in_order())

    def _agents_in_order(self) -> Iterator[ir.Agent]:
        # Root first, then helpers breadth-first as they are used: the order a reader expects.
        table: Mapping[str, ir.Agent] = self.doc["agents"]
        seen: set[str] = set()
        queue = [self.root]
        while queue:
            name = queue.pop(0)
            if name in seen or name not in table:
                continue
            seen.add(name)
            yield table[name]
            queue.extend(use["name"] for use in table[name].get("helpers", []))
        for name in sorted(set(table) - seen):
            yield table[name]

    def tools(self) -> Iterator[tuple[ir.Tool, str]]:
        """Every declared tool with where it is declared (for its docstring)."""
        for agent in self.agents:
            for tool in agent.get("tools", []):
                yield tool, agent["name"]
            for workflow in agent.get("workflows", []):
                for tool in workflow.get("tools", []):
                    yield tool, f"{agent['name']}, scoped to workflow {workflow['name']}"

    def workflows(self) -> list[str]:
        return [w["name"] for a in self.agents for w in a.get("workflows", [])]

    def helpers(self) -> list[str]:
        return [a["name"] for a in self.agents if a.get("kind") == "helper"]

    def custom_intents(self) -> list[ir.Intent]:
        found: dict[str, ir.Intent] = {}
        for agent in self.agents:
            for intent in agent.get("intents", []):
                found.setdefault(intent["name"], intent)
        return list(found.values())

    def models(self) -> Iterator[ir.Model]:
        for agent in self.agents:
            for config in agent["configs"].values():
                yield config["model"]
                embedding = config["embedding"]
                if embedding:
                    yield embedding
                yield from config.get("fallback", ())

    def providers(self) -> list[ir.Model]:
        """One model per distinct API key field: gemini, openai, anthropic, then custom ids."""
        by_field: dict[str, ir.Model] = {}
        for model in self.models():
            by_field.setdefault(api_key_field(model), model)
        order = {"gemini": 0, "openai": 1, "anthropic": 2, "custom": 3}
        return sorted(by_field.values(), key=lambda m: order.get(str(m["provider"]), 3))

    def outputs(self) -> list[ir.Type]:
        return [a["output"] for a in self.agents if a["output"].get("kind") != "text"]


# --------------------------------------------------------------------------- types


class _Types:
    """Turns IR types into annotations, inventing names for inline objects as it goes."""

    def __init__(self, named: Iterable[str]) -> None:
        self.taken: set[str] = set(_FIXED_NAMES) | set(named)
        self.pending: list[tuple[str, ir.ObjectType]] = []
        self.created: list[str] = []

    def fresh(self, hint: str) -> str:
        base = _pascal(hint) or "Inline"
        name, n = base, 2
        while name in self.taken:
            name, n = f"{base}{n}", n + 1
        self.taken.add(name)
        self.created.append(name)
        return name

    def annotation(self, t: ir.Type, hint: str) -> str:
        # Each test reads t["kind"] itself, so that mypy narrows the IR type's variant.
        if t["kind"] == "text" or t["kind"] == "string":
            return "str"
        if t["kind"] == "number":
            return "float"
        if t["kind"] == "boolean":
            return "bool"
        if t["kind"] == "literal":
            return f"Literal[{_string(t['value'])}]"
        if t["kind"] == "array":
            return f"list[{self.annotation(t['items'], hint + 'Item')}]"
        if t["kind"] == "ref":
            return t["name"]
        if t["kind"] == "object":
            name = self.fresh(hint)
            self.pending.append((name, t))
            return name
        if t["kind"] == "union":
            return self._union(t["variants"], hint)
        raise CompileError(f"cannot generate Python for IR type kind {unhandled(t)['kind']!r}")

    def _union(self, variants: Sequence[ir.Type], hint: str) -> str:
        values = [v["value"] for v in variants if v["kind"] == "literal"]
        if len(values) == len(variants):
            return _literal(values)
        parts = [self.annotation(v, f"{hint}{i + 1}") for i, v in enumerate(variants)]
        return " | ".join(dict.fromkeys(parts))

    def fields(self, fields: Sequence[ir.Field], owner: str) -> list[_Field]:
        return [
            _Field(
                f["name"],
                self.annotation(f["type"], owner + _pascal(f["name"])),
                bool(f.get("optional")),
                f.get("description"),
            )
            for f in fields
        ]


def _typed_dict(w: CodeWriter, name: str, fields: Sequence[_Field], doc: str | None) -> None:
    """Emit one TypedDict; optional keys go into a ``total=False`` subclass of the required."""
    required = [f for f in fields if not f.optional]
    optional = [f for f in fields if f.optional]
    w.blank(2)
    if required and optional:
        _typed_dict_part(w, f"_{name}Required", required, total=True, doc=None)
        w.blank(2)
        if all(_method_name_ok(f.key) for f in optional):
            _typed_dict_class(w, name, f"_{name}Required, total=False", optional, doc)
        else:
            _typed_dict_part(w, f"_{name}Optional", optional, total=False, doc=None)
            w.blank(2)
            _typed_dict_class(w, name, f"_{name}Required, _{name}Optional", [], doc)
        return
    _typed_dict_part(w, name, fields, total=not optional, doc=doc)


def _typed_dict_part(
    w: CodeWriter, name: str, fields: Sequence[_Field], *, total: bool, doc: str | None
) -> None:
    bases = "TypedDict" if total else "TypedDict, total=False"
    if all(_method_name_ok(f.key) for f in fields):
        _typed_dict_class(w, name, bases, fields, doc)
        return
    # Keys that are not Python names need the functional syntax; its values are evaluated at
    # import time, so annotations are quoted to allow forward references.
    if doc:
        for line in _visible(doc).splitlines():
            w.fill(f"# {line}".rstrip())
    w.fill(f"{name} = TypedDict(")
    with w.indent():
        w.fill(_string(name) + ",")
        w.fill("{")
        with w.indent():
            for f in fields:
                _field_comment(w, f)
                w.fill(f"{_string(f.key)}: {f.annotation!r},")
        w.fill("},")
        if not total:
            w.fill("total=False,")
    w.fill(")")


def _typed_dict_class(
    w: CodeWriter, name: str, bases: str, fields: Sequence[_Field], doc: str | None
) -> None:
    w.fill(f"class {name}({bases}):")
    with w.indent():
        if doc:
            w.lines("\n".join(_docstring(doc)))
            if fields:
                w.blank()
        for f in fields:
            _field_comment(w, f)
            w.fill(f"{f.key}: {f.annotation}")
        if not fields and not doc:
            w.fill("pass")


def _field_comment(w: CodeWriter, f: _Field) -> None:
    if f.description:
        for line in _visible(f.description).splitlines():
            w.fill(f"#: {line}".rstrip())


# --------------------------------------------------------------------------- the module


class _Emitter:
    """Writes the sections of one module; ``render`` assembles them in reading order."""

    def __init__(self, doc: ir.Document, ir_text: str) -> None:
        self.doc = doc
        self.ir_text = ir_text
        self.p = Program(doc)
        type_names: list[str] = sorted(doc.get("types", {}))
        for name in type_names:
            if name in _FIXED_NAMES or name.startswith("Auwgent") or not is_identifier(name):
                raise CompileError(
                    f"type {name!r} cannot be used in Python bindings: the name is taken by "
                    "the generated module or is not a valid Python name; rename the type"
                )
        self.types = _Types(type_names)
        self.intent_classes = self._intent_classes()

    def _intent_classes(self) -> dict[str, str]:
        classes: dict[str, str] = {}
        for intent in self.p.custom_intents():
            cls = _pascal(intent["name"]) + "Intent"
            if cls in self.types.taken:
                raise CompileError(
                    f"custom intent {intent['name']!r}: its payload class {cls} would clash "
                    "with another name of the generated module; rename the intent"
                )
            self.types.taken.add(cls)
            classes[intent["name"]] = cls
        return classes

    # ----- assembly

    def render(self) -> str:
        named = CodeWriter()
        self.emit_named_types(named)
        sections = [
            self.emit_intents,
            self.emit_context,
            self.emit_api_keys,
            self.emit_config,
            self.emit_tools,
            self.emit_handlers,
            self.emit_middleware,
            self.emit_agent,
        ]
        rendered: list[str] = []
        for section in sections:
            w = CodeWriter()
            section(w)
            rendered.append(w.getvalue())
        inline = CodeWriter()
        self.drain_inline(inline)
        head = CodeWriter()
        self.emit_header(head)
        self.emit_aliases(head)
        tail = CodeWriter()
        self.emit_ir(tail)
        self.emit_factory(tail)
        parts = [head.getvalue(), named.getvalue(), inline.getvalue(), *rendered, tail.getvalue()]
        return "\n\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"

    # ----- header and names

    def emit_header(self, w: CodeWriter) -> None:
        version = self.doc.get("compiler_version", "?")
        source = self.doc.get("source", "?")
        w.fill(f"# Generated by auwgent {version} from {source}. Do not edit this file:")
        w.fill("# change the .agent sources and run `auwgent generate` again.")
        root = self.p.root
        w.lines(
            "\n".join(
                _docstring(
                    f"Typed bindings for the agent {root}.\n\n"
                    "Create the agent with ``auwgent(config)``; implement tools by subclassing\n"
                    "``AuwgentTools``; handle intents by subclassing ``AuwgentBaseIntentHandler``.\n"
                    "This module only declares; what behaves is in ``auwgent.runtime.bindings``."
                )
            )
        )
        w.blank()
        w.fill("from __future__ import annotations")
        w.blank()
        w.fill("from collections.abc import " + ", ".join(_ABC_IMPORTS))
        w.fill("from typing import " + ", ".join(_TYPING_IMPORTS))
        w.blank()
        w.fill_packed("from auwgent.runtime.bindings import (", list(_SHARED), ")")
        w.fill_packed(
            "from auwgent.runtime.bindings import (",
            [f"{name} as _{name}" for name in _RUNTIME],
            ")",
        )
        w.blank(2)
        w.fill_packed("__all__ = [", [_string(name) for name in self.public_names()], "]")

    def public_names(self) -> list[str]:
        names = {
            "AgentName", "ToolName", "WorkflowName", "HelperName", "ConfigName", "IntentName",
            "PersonaName", "OutputTypeName", "Approver", "AuwgentContext", "AuwgentApiKeys",
            "AuwgentBaseUrls", "AuwgentConfig", "AuwgentTools", "AuwgentBaseIntentHandler",
            "AuwgentBasePartialIntentHandler", "AuwgentMiddleware", "AuwgentAgent",
            "IR_JSON", "IR_HASH", "IR_VERSION", "COMPILER_VERSION", "ROOT_AGENT", "auwgent",
        }  # fmt: skip
        names.update(_SHARED)
        names.update(cls for _, cls, _ in BUILTIN_INTENTS)
        names.update(self.doc.get("types", {}))
        names.update(self.intent_classes.values())
        names.update(self.types.created)
        return sorted(names)

    def emit_aliases(self, w: CodeWriter) -> None:
        p = self.p
        configs = list(self.doc["agents"][p.root]["configs"])
        variants = self.output_type_names()
        w.blank(2)
        w.fill("#: The agent and its helpers: the ``agent_name`` every intent carries.")
        names = [n for n, _, _ in BUILTIN_INTENTS] + list(self.intent_classes)
        aliases: list[tuple[str, list[str] | None]] = [
            ("AgentName", [a["name"] for a in p.agents]),
            ("ToolName", [t["name"] for t, _ in p.tools()]),
            ("WorkflowName", p.workflows()),
            ("HelperName", p.helpers()),
            ("ConfigName", sorted(configs, key=lambda c: c != "default")),
            ("PersonaName", list(self.doc.get("personas", {}))),
            ("IntentName", names),
            ("OutputTypeName", variants),
        ]
        for alias, values in aliases:
            items = list(dict.fromkeys(values or []))
            if items:
                w.fill_wrapped(f"{alias} = Literal[", [_string(v) for v in items], "]")
            else:
                w.fill(f"{alias} = str")

    def output_type_names(self) -> list[str] | None:
        """Names a ``response_schema`` may carry, or None when one is not a named type."""
        names: list[str] = []
        for output in self.p.outputs():
            variants = output["variants"] if output["kind"] == "union" else [output]
            for v in variants:
                if v["kind"] != "ref":
                    return None
                names.append(v["name"])
        return names

    # ----- types

    def emit_named_types(self, w: CodeWriter) -> None:
        for name, t in sorted(self.doc.get("types", {}).items()):
            _typed_dict(w, name, self.types.fields(t["fields"], name), None)
            self.drain_inline(w)

    def drain_inline(self, w: CodeWriter) -> None:
        while self.types.pending:
            name, t = self.types.pending.pop(0)
            _typed_dict(w, name, self.types.fields(t["fields"], name), None)

    def emit_intents(self, w: CodeWriter) -> None:
        outputs = [self.types.annotation(o, "Output") for o in self.p.outputs()]
        response = " | ".join(dict.fromkeys(outputs)) if outputs else "dict[str, Any]"
        args = "dict[str, Any]"

        def fields(*spec: tuple[str, str]) -> list[_Field]:
            return [_Field(k.rstrip("?"), a, k.endswith("?")) for k, a in spec]

        shapes: dict[str, list[_Field]] = {
            "ResponseSchemaIntent": fields(("type", "OutputTypeName"), ("response", response)),
            "ToolCallIntent": fields(("type", "ToolName"), ("args", args)),
            "ToolResultIntent": fields(
                ("name", "ToolName"), ("args", args), ("result", "Any"), ("overridden?", "bool")
            ),
            "ToolSkippedIntent": fields(("type", "ToolName"), ("args", args)),
            "WorkflowCallIntent": fields(("type", "WorkflowName"), ("args", args)),
            "WorkflowResultIntent": fields(
                ("name", "WorkflowName"), ("args", args), ("result", "Any")
            ),
            "HelperCallIntent": fields(("type", "HelperName"), ("args", args)),
            "HelperResultIntent": fields(("name", "HelperName"), ("args", args), ("result", "Any")),
            "ApprovalRequestIntent": fields(
                ("id", "str"),
                ("kind", 'Literal["tool", "workflow", "helper"]'),
                ("name", "str"),
                ("args", args),
                ("agent", "AgentName"),
                ("taint?", "dict[str, Any]"),
            ),
            "TaintedCallIntent": fields(
                ("kind", 'Literal["tool", "workflow", "helper"]'),
                ("name", "str"),
                ("agent", "AgentName"),
                ("args", args),
                ("policy", 'Literal["approve", "refuse", "allow"]'),
                ("action", 'Literal["approve", "refuse", "allow"]'),
                ("reason", "str"),
                ("findings", "list[dict[str, Any]]"),
            ),
        }
        for name, cls, when in BUILTIN_INTENTS:
            if cls in _SHARED:
                continue
            doc = f"Payload of ``{name}``: {when[0].lower()}{when[1:]}"
            variants = self.output_type_names()
            if cls == "ResponseSchemaIntent" and variants and len(set(variants)) > 1:
                self.emit_schema_variants(w, list(dict.fromkeys(variants)), doc)
            else:
                _typed_dict(w, cls, shapes[cls], doc)
        w.blank(2)
        w.fill("#: ``agent.on_approval(fn)`` / config ``approver``: called with each request.")
        w.fill("Approver = Callable[[ApprovalRequestIntent], MaybeAwaitable[ApprovalDecision]]")
        for intent in self.p.custom_intents():
            cls = self.intent_classes[intent["name"]]
            doc = f"Payload of the custom intent ``{intent['name']}``"
            if intent.get("description"):
                doc += f": {intent['description']}"
            _typed_dict(w, cls, self.types.fields(intent.get("fields", []), cls), doc)

    def emit_schema_variants(self, w: CodeWriter, variants: list[str], doc: str) -> None:
        """One payload class per output type, so that checking ``intent["type"]`` narrows
        ``intent["response"]`` to that type."""
        classes = []
        for variant in variants:
            cls = self.types.fresh(f"ResponseSchema{variant}Intent")
            classes.append(cls)
            _typed_dict(
                w,
                cls,
                [
                    _Field("type", f"Literal[{_string(variant)}]", False),
                    _Field("response", variant, False),
                ],
                f"``response_schema`` when the output is a ``{variant}``.",
            )
        w.blank(2)
        w.fill(f"#: {doc}")
        w.fill(f"ResponseSchemaIntent = Union[{', '.join(classes)}]")

    # ----- configuration

    def emit_context(self, w: CodeWriter) -> None:
        fields = self.types.fields(self.doc["agents"][self.p.root].get("context", []), "Context")
        seen = {f.key for f in fields}
        for agent in self.p.agents[1:]:
            # A helper's context keys may be supplied later (set_context), so they are optional.
            for f in self.types.fields(agent.get("context", []), "Context"):
                if f.key not in seen:
                    seen.add(f.key)
                    fields.append(_Field(f.key, f.annotation, True, f.description))
        _typed_dict(
            w,
            "AuwgentContext",
            fields,
            f"The context of {self.p.root}, as its ``context`` block declares.",
        )

    def emit_api_keys(self, w: CodeWriter) -> None:
        keys = [
            _Field(
                api_key_field(m), "str", True, f"Or set the {self._env(m)} environment variable."
            )
            for m in self.p.providers()
        ]
        _typed_dict(
            w, "AuwgentApiKeys", keys, "API keys of the providers the agent and its helpers use."
        )
        urls = [
            _Field(str(m["id"]) if m["provider"] == "custom" else str(m["provider"]), "str", True)
            for m in self.p.providers()
        ]
        _typed_dict(w, "AuwgentBaseUrls", urls, "Base URLs overriding the providers' own.")

    @staticmethod
    def _env(model: ir.Model) -> str:
        first, *others = api_key_env(model)
        return first + "".join(f" (or {var})" for var in others)

    def emit_config(self, w: CodeWriter) -> None:
        # Only the keys typed by this agent: the others are the runtime's RuntimeConfig.
        fields = [
            _Field("apiKeys", "AuwgentApiKeys", True),
            _Field("context", "AuwgentContext", True),
            _Field(
                "tools",
                "type[AuwgentTools] | AuwgentTools | Mapping[str, Callable[..., Any]]",
                True,
                "A subclass of AuwgentTools, an instance of one, or a dict of functions.",
            ),
            _Field("config", "ConfigName", True, "The named config to run with."),
            _Field("persona", "PersonaName", True, "The persona runs take on."),
            _Field("baseUrls", "AuwgentBaseUrls", True),
            _Field("approver", "Approver", True, "Decides on calls marked @approval."),
        ]
        w.blank(2)
        _typed_dict_class(
            w,
            "AuwgentConfig",
            "_RuntimeConfig, total=False",
            fields,
            f"Everything ``auwgent()`` accepts for {self.p.root}: these keys and those of\n"
            "every agent (``auwgent.runtime.bindings.RuntimeConfig``, docs/runtime.md).",
        )

    # ----- tools

    def emit_tools(self, w: CodeWriter) -> None:
        tools: dict[str, list[tuple[ir.Tool, str]]] = {}
        for tool, where in self.p.tools():
            if "mcp" not in tool:  # an @mcp tool runs on its server: nothing to implement
                tools.setdefault(tool["name"], []).append((tool, where))
        w.blank(2)
        w.fill("@_placeholders")
        w.fill("class AuwgentTools(_Tools):")
        with w.indent():
            w.lines(
                "\n".join(
                    _docstring(
                        "The tools of the agent and its helpers (workflow-scoped tools included).\n\n"
                        "Subclass it and override the tools you implement, as plain or async\n"
                        "methods taking keyword arguments. A tool left out reaches the model as\n"
                        "[NOT CONFIGURED] and a call to it yields a tool_error."
                    )
                )
            )
            w.blank()
            w.fill_wrapped(
                "_TOOL_NAMES: ClassVar[frozenset[str]] = frozenset({",
                [_string(n) for n in tools],
                "})",
            )
            for name, uses in tools.items():
                w.blank()
                self.emit_tool(w, name, uses)

    def emit_tool(self, w: CodeWriter, name: str, uses: list[tuple[ir.Tool, str]]) -> None:
        tool = uses[0][0]
        signature = self.tool_signature(tool)
        differs = any(self.tool_signature(t) != signature for t, _ in uses[1:])
        if not _method_name_ok(name) or name == "_TOOL_NAMES":
            w.fill(f"# Tool {name!r} cannot be a method here: implement it in a dict of functions.")
            return
        if differs:
            # Two agents declare the tool differently; one registry serves both, so accept both.
            signature = (("**kwargs: Any",), "MaybeAwaitable[Any]")
        params, returns = signature
        w.fill_wrapped(f"def {name}(", ["self", *params], f") -> {returns}:", hug=True)
        with w.indent():
            doc = tool.get("description") or f"The tool {name}."
            wheres = ", ".join(dict.fromkeys(where for _, where in uses))
            w.lines("\n".join(_docstring(f"{doc}\n\nDeclared in {wheres}.")))
            w.fill("raise NotImplementedError")

    def tool_signature(self, tool: ir.Tool) -> tuple[tuple[str, ...], str]:
        owner = _pascal(tool["name"])
        fields = self.types.fields(tool.get("params", []), owner)
        returns = self.types.annotation(tool["returns"], owner + "Result")
        if returns != "str":
            returns += " | str"  # a JSON string is always accepted as a result
        if any(not _method_name_ok(f.key) or f.key == "self" for f in fields):
            return ("**kwargs: Any",), f"MaybeAwaitable[{returns}]"
        params = [
            f"{f.key}: {f.annotation} | None = None" if f.optional else f"{f.key}: {f.annotation}"
            for f in fields
        ]
        return (("*", *params) if params else ()), f"MaybeAwaitable[{returns}]"

    # ----- handlers and middleware

    def emit_handlers(self, w: CodeWriter) -> None:
        intents: list[tuple[str, str, str]] = list(BUILTIN_INTENTS)
        for intent in self.p.custom_intents():
            when = intent.get("description") or "The model emitted this custom intent."
            intents.append((intent["name"], self.intent_classes[intent["name"]], when))
        w.blank(2)
        w.fill("@_placeholders")
        w.fill("class AuwgentBaseIntentHandler(_IntentHandler):")
        with w.indent():
            w.lines(
                "\n".join(
                    _docstring(
                        "Final intents: subclass it, override the intents you handle and pass the\n"
                        "class to ``agent.on_intent``. A handler of tool_call, workflow_call or\n"
                        'helper_call may return {"skip": True} or {"result": ...}.'
                    )
                )
            )
            for name, cls, when in intents:
                self.emit_handler_method(w, name, cls, "IntentControl | None", when)
        streamed = [i for i in intents if i[0] in STREAMED_INTENTS or i[0] in self.intent_classes]
        w.blank(2)
        w.fill("@_placeholders")
        w.fill("class AuwgentBasePartialIntentHandler(_PartialIntentHandler):")
        with w.indent():
            w.lines(
                "\n".join(
                    _docstring(
                        "Streaming partials: subclass it, override what you want to follow and\n"
                        "pass the class to ``agent.on_intent_partial``."
                    )
                )
            )
            for name, _, _ in streamed:
                cls = "ResponseTextPartialIntent" if name == "response_text" else "PartialIntent"
                self.emit_handler_method(w, name, cls, "None", f"Streaming ``{name}``.")

    def emit_handler_method(self, w: CodeWriter, name: str, cls: str, ret: str, doc: str) -> None:
        w.blank()
        method = name if is_identifier(name) else _sanitised(name)
        if not _method_name_ok(method):
            w.fill(f"# Intent {name!r} is not a Python name: handle it with a function handler.")
            return
        if method != name:
            # The runtime looks a method up by the exact name, then by this sanitised form.
            w.fill(f"# The intent {name!r}, under its sanitised name.")
        w.fill_wrapped(
            f"async def {method}(",
            ["self", f"intent: {cls}", "agent_name: AgentName"],
            f") -> {ret}:",
            hug=True,
        )
        with w.indent():
            w.lines("\n".join(_docstring(doc)))

    def emit_middleware(self, w: CodeWriter) -> None:
        w.blank(2)
        w.fill("class AuwgentMiddleware(_Middleware[IntentName]):")
        with w.indent():
            w.lines(
                "\n".join(
                    _docstring(
                        "Middleware: subclass it, set ``name`` (and ``target`` to limit it to\n"
                        "one agent or helper) and override the hooks you need."
                    )
                )
            )
            w.blank()
            w.fill("target: ClassVar[AgentName | list[AgentName] | None] = None")

    # ----- the agent, the IR, the factory

    def emit_agent(self, w: CodeWriter) -> None:
        w.blank(2)
        # The type parameters narrow the function handlers and the approver on_intent,
        # on_intent_partial and on_approval accept to this agent's names and approval request.
        w.fill_wrapped(
            "class AuwgentAgent(_TypedAgent[",
            [
                "IntentName",
                "AgentName",
                "ApprovalRequestIntent",
            ],
            "]):",
            hug=True,
        )
        with w.indent():
            w.lines("\n".join(_docstring(f"The agent {self.p.root}, created by ``auwgent()``.")))

    def emit_ir(self, w: CodeWriter) -> None:
        w.blank(2)
        w.fill(f"ROOT_AGENT = {_string(self.p.root)}")
        w.fill(f"IR_VERSION = {int(self.doc['ir_version'])}")
        w.fill(f"IR_HASH = {_string(str(self.doc['hash']))}")
        w.fill(f"COMPILER_VERSION = {_string(str(self.doc['compiler_version']))}")
        w.fill("#: The compiled agent (the IR) as the canonical JSON that IR_HASH covers: the")
        w.fill("#: .agent.json file beside this one without its hash field, compact, keys sorted.")
        w.fill("IR_JSON = (")
        with w.indent():
            # Cut into pieces of the text (each written with repr(), which escapes what it must),
            # so the lines stay short; together they are the canonical text byte for byte.
            for start in range(0, len(self.ir_text), _IR_PIECE):
                w.fill(repr(self.ir_text[start : start + _IR_PIECE]))
        w.fill(")")

    def emit_factory(self, w: CodeWriter) -> None:
        w.blank(2)
        # Not Optional: with a plain TypedDict parameter, mypy reports a wrong key or value
        # precisely ('TypedDict item "is_vip" has type "bool"') instead of the whole dict.
        w.fill("_NO_CONFIG: AuwgentConfig = {}")
        w.blank(2)
        w.fill("def auwgent(config: AuwgentConfig = _NO_CONFIG) -> AuwgentAgent:")
        with w.indent():
            w.lines(
                "\n".join(
                    _docstring(
                        f"Create the agent {self.p.root}.\n\n"
                        "Raises ConfigError (ContextError for context values) when the config\n"
                        "cannot be used: a missing API key, a context value of the wrong type,\n"
                        "an unknown config name, or bindings from an incompatible compiler."
                    )
                )
            )
            w.fill("return _create(")
            with w.indent():
                w.fill("AuwgentAgent,")
                w.fill("config,")
                w.fill("IR_JSON,")
                w.fill("ir_hash=IR_HASH,")
                w.fill("compiler_version=COMPILER_VERSION,")
                w.fill("ir_version=IR_VERSION,")
            w.fill(")")


def render_python(doc: ir.Document) -> str:
    """Return the source of the ``<stem>_types.py`` module for the IR document ``doc``.

    The IR is embedded as its canonical JSON without the ``hash`` field, the exact text the
    hash covers. Raises ``CompileError`` when a name in the IR cannot be used in Python.
    """
    body = {key: value for key, value in doc.items() if key != "hash"}
    return _Emitter(doc, canonical_json(body)).render()

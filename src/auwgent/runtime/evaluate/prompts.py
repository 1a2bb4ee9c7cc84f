"""Prompt evaluation: a config's prompt parts and the context in, the system prompt text out.

Pure functions over the IR (``docs/ir.md``, "Prompts"); the rendering rules are written up for
users in ``docs/prompts.md``. Templates are evaluated leniently: a missing value renders as
empty instead of failing a run.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from auwgent._typing import unhandled
from auwgent.runtime.evaluate.expr import IRExpr, evaluate, render_value, sub_expressions, truthy
from auwgent.runtime.evaluate.schema import describe, describe_fields

# The IR's types (auwgent.ir.model) for the type checker; at run time the IR is plain dicts and
# these names only stay importable (building the TypedDicts would cost ~10 ms of import time).
if TYPE_CHECKING:
    from auwgent.ir.model import Agent as IRAgent
    from auwgent.ir.model import Config as IRConfig
    from auwgent.ir.model import Document as IRDocument
    from auwgent.ir.model import NamedPrompt, PromptItem, TIf, TNode
else:
    IRDocument = IRAgent = IRConfig = TNode = TIf = PromptItem = NamedPrompt = Mapping[str, Any]
SchemaText = Callable[[str], str]

__all__ = [
    "referenced_context_keys",
    "render_body",
    "render_example",
    "render_prompt",
    "render_template",
    "schema_text_for",
]

_SEPARATOR = "\n\n"
_TRAILING_BLANK_LINE = re.compile(r"\r?\n[ \t]*\Z")
_LINE_END_BEFORE = re.compile(r"(?:\A|\n)[ \t]*\Z")
_INDENT_BEFORE = re.compile(r"(?:\A|\n)([ \t]*)\Z")
_LINE_START_AFTER = re.compile(r"\A[ \t]*(?:\r?\n|\Z)")


def render_template(
    nodes: Sequence[TNode],
    scope: Mapping[str, Any],
    ctx: Mapping[str, Any],
    *,
    schema_text: SchemaText,
) -> str:
    """Render template nodes: literal text, ``{{x}}``, ``{{#if}}`` blocks and ``{{@schema(...)}}``."""
    out: list[str] = []
    drop_line_break = False
    for i, node in enumerate(nodes):
        if node["t"] == "text":
            text = node["value"]
            if drop_line_break:
                text = _LINE_START_AFTER.sub("", text, count=1)
            out.append(text)
        elif node["t"] == "expr":
            out.append(render_value(evaluate(node["expr"], scope, ctx, strict=False)))
        elif node["t"] == "if":
            out.append(_render_if(node, scope, ctx, schema_text, out))
            if out[-1] == "" and _alone_on_lines(nodes, i):
                # An {{#if}} that rendered nothing leaves no empty line: drop its indentation
                # here and the line break that ended its {{/if}} line below.
                if len(out) >= 2:
                    out[-2] = out[-2].rstrip(" \t")
                drop_line_break = True
                continue
        elif node["t"] == "schema":
            out.append(schema_text(node["target"]))
        else:
            raise ValueError(f"unknown template node {unhandled(node)['t']!r}")
        drop_line_break = False
    return "".join(out)


def _render_if(
    node: TIf,
    scope: Mapping[str, Any],
    ctx: Mapping[str, Any],
    schema_text: SchemaText,
    out: Sequence[str],
) -> str:
    chosen = (
        node["then"] if truthy(evaluate(node["cond"], scope, ctx, strict=False)) else node["else"]
    )
    rendered = render_template(chosen, scope, ctx, schema_text=schema_text)
    return _trim_branch(rendered, _indent_before("".join(out[-1:])))


def _trim_branch(text: str, indent: str) -> str:
    """Strip a block branch's leading line break and trailing whitespace-only line.

    ``{{#if c}}`` and ``{{/if}}`` usually sit on lines of their own; without this each would
    leave an empty line in the prompt. Such a branch is also re-indented to the column of its
    ``{{#if}}``, so content indented under the tag for readability lines up with the tag.
    """
    if not text.startswith(("\n", "\r\n")):
        return text  # an inline branch, {{#if c}}like this{{/if}}, stays exactly as written
    text = text[2:] if text.startswith("\r\n") else text[1:]
    lines = textwrap.dedent(_TRAILING_BLANK_LINE.sub("", text, count=1)).split("\n")
    return "\n".join([lines[0], *(indent + line if line.strip() else line for line in lines[1:])])


def _indent_before(text: str) -> str:
    """The indentation in front of a tag that starts its own line (else ``""``)."""
    match = _INDENT_BEFORE.search(text)
    return match.group(1) if match else ""


def _alone_on_lines(nodes: Sequence[TNode], i: int) -> bool:
    """Whether the ``if`` node ``i`` starts a line and its ``{{/if}}`` ends one."""
    before = nodes[i - 1] if i > 0 else {"t": "text", "value": ""}
    after = nodes[i + 1] if i + 1 < len(nodes) else {"t": "text", "value": ""}
    if before["t"] != "text" or after["t"] != "text":
        return False
    return bool(
        _LINE_END_BEFORE.search(before["value"]) and _LINE_START_AFTER.match(after["value"])
    )


def render_example(user: str, assistant: str) -> str:
    """The fixed format of an ``Example { user, assistant }`` block in the system prompt."""
    return f"Example:\nUser: {user}\nAssistant: {assistant}"


def render_body(
    items: Sequence[PromptItem],
    scope: Mapping[str, Any],
    ctx: Mapping[str, Any],
    *,
    schema_text: SchemaText,
) -> str:
    """Render a prompt body's items (text, Example, JS-style if), joined by a blank line.

    Items that render empty (an ``if`` with no ``else`` whose condition is false) are skipped,
    so they leave no stray blank lines.
    """
    parts: list[str] = []
    for item in items:
        if item["kind"] == "text":
            text = render_template(item["template"], scope, ctx, schema_text=schema_text)
        elif item["kind"] == "example":
            user = render_template(item["user"], scope, ctx, schema_text=schema_text)
            assistant = render_template(item["assistant"], scope, ctx, schema_text=schema_text)
            text = render_example(user, assistant)
        elif item["kind"] == "if":
            chosen = (
                item["then"]
                if truthy(evaluate(item["cond"], scope, ctx, strict=False))
                else item["else"]
            )
            text = render_body(chosen, scope, ctx, schema_text=schema_text)
        else:
            raise ValueError(f"unknown prompt item {unhandled(item)['kind']!r}")
        if text.strip():
            parts.append(text)
    return _SEPARATOR.join(parts)


def schema_text_for(doc: IRDocument, agent: IRAgent) -> SchemaText:
    """The ``{{@schema(input|output|context)}}`` renderer for one agent.

    Named types are written out as their structure, since the model cannot look them up, and
    each field's ``@desc`` follows it as a ``/* comment */``.
    """
    types = doc.get("types", {})

    def schema_text(target: str) -> str:
        if target == "context":
            body = describe_fields(agent.get("context", []), types, expand=True, notes=True)
            return f"{{ {body} }}" if body else "{}"
        if target in ("input", "output"):
            shape = agent.get("input") if target == "input" else agent.get("output")
            return describe(shape or {"kind": "text"}, types, expand=True, notes=True)
        raise ValueError(f"unknown schema target {target!r}")

    return schema_text


def render_prompt(doc: IRDocument, agent: IRAgent, config: IRConfig, ctx: Mapping[str, Any]) -> str:
    """Evaluate a config's prompt: every part in ``+`` order, joined by a blank line.

    A named prompt's arguments are evaluated in the config's scope (where only ``ctx`` and
    literals exist) and bound to its parameters in order. Empty parts are skipped.
    """
    schema_text = schema_text_for(doc, agent)
    parts: list[str] = []
    for part in config.get("prompt", []):
        if part["kind"] == "ref":
            prompt = doc["prompts"][part["name"]]
            scope = _bind_args(prompt, part.get("args", []), ctx)
            text = render_body(prompt["body"], scope, ctx, schema_text=schema_text)
        elif part["kind"] == "inline":
            text = render_body(part["body"], {}, ctx, schema_text=schema_text)
        else:
            raise ValueError(f"unknown prompt part {unhandled(part)['kind']!r}")
        if text.strip():
            parts.append(text)
    return _SEPARATOR.join(parts)


def _bind_args(
    prompt: NamedPrompt, args: Sequence[IRExpr], ctx: Mapping[str, Any]
) -> dict[str, Any]:
    values = [evaluate(arg, {}, ctx, strict=False) for arg in args]
    params = prompt.get("params", [])
    # A parameter without an argument (an optional one left out) reads as null.
    return {p["name"]: values[i] if i < len(values) else None for i, p in enumerate(params)}


def referenced_context_keys(doc: IRDocument, agent: IRAgent, config: IRConfig) -> set[str]:
    """Every ``ctx`` key that the config's prompt mentions (in text, conditions or arguments).

    The engine shows the context keys that no prompt mentions in a context section of its own.
    """
    keys: set[str] = set()
    for part in config.get("prompt", []):
        if part["kind"] == "ref":
            for arg in part.get("args", []):
                keys.update(_ctx_in_expr(arg))
            keys.update(_ctx_in_items(doc["prompts"][part["name"]]["body"]))
        else:
            keys.update(_ctx_in_items(part["body"]))
    return keys


def _ctx_in_items(items: Sequence[PromptItem]) -> Iterator[str]:
    for item in items:
        if item["kind"] == "text":
            yield from _ctx_in_nodes(item["template"])
        elif item["kind"] == "example":
            yield from _ctx_in_nodes(item["user"])
            yield from _ctx_in_nodes(item["assistant"])
        elif item["kind"] == "if":
            yield from _ctx_in_expr(item["cond"])
            yield from _ctx_in_items(item["then"])
            yield from _ctx_in_items(item["else"])
        else:
            unhandled(item)


def _ctx_in_nodes(nodes: Sequence[TNode]) -> Iterator[str]:
    for node in nodes:
        if node["t"] == "expr":
            yield from _ctx_in_expr(node["expr"])
        elif node["t"] == "if":
            yield from _ctx_in_expr(node["cond"])
            yield from _ctx_in_nodes(node["then"])
            yield from _ctx_in_nodes(node["else"])
        elif node["t"] != "text" and node["t"] != "schema":
            unhandled(node)  # (no context read in text or a schema)


def _ctx_in_expr(expr: IRExpr) -> Iterator[str]:
    if expr["e"] == "ctx":
        yield expr["name"]
    for sub in sub_expressions(expr):
        yield from _ctx_in_expr(sub)

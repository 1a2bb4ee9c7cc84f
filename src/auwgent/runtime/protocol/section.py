"""Rendering shared by both codecs: signature lines, argument lines, example blocks, results.

Everything here is deterministic (no dates, no ids, stable order) so that the system prompt
is byte-identical from call to call and provider prompt caches keep working.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from auwgent.runtime.protocol.contract import (
    CallableSpec,
    CallKind,
    CallOutcome,
    Contract,
    IntentKind,
)
from auwgent.runtime.schema import IRField, IRType, Types, describe, referenced_types, resolve

__all__ = [
    "BLOCK_KIND",
    "NOT_CONFIGURED",
    "blocks_section",
    "callable_description",
    "example_block",
    "field_line",
    "grouped",
    "output_variants",
    "param_types",
    "render_args",
    "render_outcome",
    "render_result",
    "render_value",
    "signature",
    "type_line",
]

NOT_CONFIGURED = "[NOT CONFIGURED]"

BLOCK_KIND: Mapping[CallKind, IntentKind] = {
    "tool": "tool_call",
    "workflow": "workflow_call",
    "helper": "helper_call",
}


def callable_description(spec: CallableSpec) -> str:
    """The description the model sees, marked when nothing implements the callable."""
    text = spec.description.strip()
    if not spec.configured and NOT_CONFIGURED not in text:
        text = f"{text} {NOT_CONFIGURED}".strip()
    return text


def field_line(field: IRField, types: Types) -> str:
    """``name?: type /* description */`` for one field."""
    mark = "?" if field["optional"] else ""
    text = f"{field['name']}{mark}: {describe(field['type'], types)}"
    if field.get("description"):
        text += f" /* {field['description']} */"
    return text


def signature(spec: CallableSpec, types: Types) -> str:
    """``get_weather(location: string /* city name */): WeatherResult // Gets the weather``."""
    params = ", ".join(field_line(f, types) for f in spec.params)
    text = f"{spec.name}({params}): {describe(spec.returns, types)}"
    description = callable_description(spec)
    return f"{text} // {description}" if description else text


def output_variants(contract: Contract) -> list[tuple[str, IRType]]:
    """The structured output shapes by name: one for a single type, one per union variant.

    Empty for ``Text`` output. A variant that is not a named type is shown by its text.
    """
    output = contract.output
    if output["kind"] == "text":
        return []
    variants = output["variants"] if output["kind"] == "union" else [output]
    named: list[tuple[str, IRType]] = []
    for variant in variants:
        name = variant["name"] if variant["kind"] == "ref" else describe(variant, contract.types)
        named.append((name, variant))
    return named


def param_types(contract: Contract) -> list[str]:
    """Named types the model must know to write arguments and output, in first-use order."""
    found: list[str] = []
    shapes: list[IRType] = [f["type"] for spec in contract.callables for f in spec.params]
    shapes += [f["type"] for intent in contract.intents for f in intent["fields"]]
    shapes += [t for _, t in output_variants(contract)]
    for shape in shapes:
        for name in referenced_types(shape, contract.types):
            if name not in found:
                found.append(name)
    return found


def type_line(name: str, types: Types) -> str:
    """``Person = { name: string /* full name */, age: number }``."""
    resolved = resolve({"kind": "ref", "name": name}, types)
    if resolved["kind"] != "object":
        return f"{name} = {describe(resolved, types)}"
    body = ", ".join(field_line(f, types) for f in resolved["fields"])
    return f"{name} = {{ {body} }}"


def render_value(value: Any) -> str:
    """A value on an argument line: plain one-line strings as is, the rest as compact JSON."""
    if isinstance(value, str) and value and "\n" not in value and value == value.strip():
        # `|` and `>` alone open an indented block (values.py), so they go quoted like words
        # that would read as JSON.
        if value[0] not in "[{\"'" and value not in ("null", "true", "false", "|", ">"):
            return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def render_args(args: Mapping[str, Any]) -> str:
    """Arguments as ``name: value`` lines, the form the protocol section teaches."""
    return "\n".join(f"{key}: {render_value(value)}" for key, value in args.items())


def render_result(value: Any) -> str:
    """A result as the model sees it: strings as is, anything else compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def render_outcome(outcome: CallOutcome) -> str:
    """One outcome as a result block (blocks codec)."""
    stem = outcome.kind  # tool, workflow or helper: the result block is named after it
    label = {"ok": "result", "error": "error", "skipped": "skipped"}[outcome.status]
    args = json.dumps(dict(outcome.args), ensure_ascii=False, separators=(",", ":"), default=str)
    lines = [f"[{stem}_{label}: {outcome.name}]", f"args: {args}"]
    if outcome.status == "ok":
        lines.append(f"result: {render_result(outcome.result)}")
    elif outcome.status == "error":
        lines.append(f"error: {outcome.error or 'failed'}")
    else:
        lines.append("note: the application skipped this call")
    lines.append(f"[/{stem}_{label}]")
    return "\n".join(lines)


def example_block(example: Mapping[str, Any]) -> str:
    """An IR ``@example`` as the call block the model would write."""
    kind = BLOCK_KIND["workflow" if example["kind"] == "workflow" else "tool"]
    body = render_args(example.get("args") or {})
    inner = f"{body}\n" if body else ""
    return f"[{kind}: {example['target']}]\n{inner}[/{kind}]"


def grouped(callables: Sequence[CallableSpec], kind: CallKind) -> list[CallableSpec]:
    """Callables of one kind in contract order."""
    return [spec for spec in callables if spec.kind == kind]


# ---------------------------------------------------------------------------------------------
# The blocks protocol section

_INTRO = (
    "## Answer protocol\n"
    "Answer only in blocks: a header line `[kind: name]`, the body, then `[/kind]` on its own"
    " line. In a body write one `name: value` per line (text unquoted; lists and objects as"
    " JSON)."
)
_CALLS = (
    "Call with `[tool_call: name]`, `[workflow_call: name]` or `[helper_call: name]` blocks."
    " Several calls may share one answer; they run together and their results come back in the"
    " next message as `[tool_result: name]` or `[tool_error: name]` blocks (`workflow_`,"
    " `helper_` likewise). Then go on."
)


def blocks_section(contract: Contract) -> str:
    """The compact protocol section for the block codec (deterministic for a contract)."""
    types = contract.types
    parts = [_INTRO]
    if contract.callables:
        parts.append(_calls_text(contract))
    if contract.intents:
        lines = ["Intents: emit one as `[custom: Name]` with its fields as lines."]
        for intent in contract.intents:
            fields = ", ".join(field_line(f, types) for f in intent["fields"])
            note = f" // {intent['description']}" if intent.get("description") else ""
            lines.append(f"- {intent['name']} {{ {fields} }}{note}")
        parts.append("\n".join(lines))
    parts.append(_output_text(contract))
    named = param_types(contract)
    if named:
        parts.append("\n".join(["Types:", *(f"- {type_line(n, types)}" for n in named)]))
    if contract.examples:
        parts.append("\n".join(["Examples:", *(example_block(e) for e in contract.examples)]))
    return "\n\n".join(parts)


_TITLES: tuple[tuple[CallKind, str], ...] = (
    ("tool", "Tools"),
    ("workflow", "Workflows"),
    ("helper", "Helpers"),
)


def _calls_text(contract: Contract) -> str:
    lines = [_CALLS]
    for kind, title in _TITLES:
        specs = grouped(contract.callables, kind)
        if specs:
            lines.append(f"{title}:")
            lines += [f"- {signature(spec, contract.types)}" for spec in specs]
    if any(not spec.configured for spec in contract.callables):
        lines.append(f"A call marked {NOT_CONFIGURED} fails: avoid it.")
    return "\n".join(lines)


def _output_text(contract: Contract) -> str:
    variants = output_variants(contract)
    if not variants:
        return (
            "Your final answer (it ends your turn):\n[response_text]\nyour reply\n[/response_text]"
        )
    if len(variants) == 1:
        name, type_ = variants[0]
        fields = _fields_or_value(type_, contract.types)
        return (
            f"Your final answer (it ends your turn) is one `[schema: {name}]` block, then"
            f" `[/schema]`; its body gives {fields}."
        )
    names = " or ".join(name for name, _ in variants)
    return (
        "Your final answer (it ends your turn) is one `[schema: Name]` block, then `[/schema]`,"
        f" where Name is the shape you answer with: {names}; its body gives that shape's fields."
    )


def _fields_or_value(type_: IRType, types: Types) -> str:
    resolved = resolve(type_, types)
    if resolved["kind"] == "object":
        return "the fields " + ", ".join(field_line(f, types) for f in resolved["fields"])
    return f"one value of type {describe(type_, types)}"

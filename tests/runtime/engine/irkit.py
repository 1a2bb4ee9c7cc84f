"""Small builders for IR documents (docs/ir.md), so engine tests state exactly what they need."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auwgent import __version__
from auwgent.ir import with_hash
from auwgent.runtime.agent import Agent, create_agent

STR: dict[str, Any] = {"kind": "string"}
NUM: dict[str, Any] = {"kind": "number"}
BOOL: dict[str, Any] = {"kind": "boolean"}
TEXT: dict[str, Any] = {"kind": "text"}


def ref(name: str) -> dict[str, Any]:
    return {"kind": "ref", "name": name}


def arr(items: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "array", "items": items}


def union(*variants: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "union", "variants": list(variants)}


def field(name: str, type_: dict[str, Any] = STR, optional: bool = False) -> dict[str, Any]:
    return {"name": name, "type": type_, "optional": optional, "description": None}


def obj(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "object", "fields": list(fields)}


def tool(
    name: str, *params: dict[str, Any], returns: dict[str, Any] = STR, description: str = ""
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description or f"the {name} tool",
        "params": list(params),
        "returns": returns,
        "examples": [],
    }


def text_part(text: str) -> dict[str, Any]:
    body = [{"kind": "text", "template": [{"t": "text", "value": text}]}]
    return {"kind": "inline", "body": body, "loc": [1, 1]}


def model(name: str = "gpt-4o", provider: str = "openai", **extra: Any) -> dict[str, Any]:
    return {
        "provider": provider,
        "model": name,
        "options": {},
        "id": None,
        "base_url": None,
        "name": None,
        **extra,
    }


def config(prompt: str = "You are a helpful assistant.", **extra: Any) -> dict[str, Any]:
    cfg = {
        "model": model(),
        "prompt": [text_part(prompt)],
        "embedding": None,
        "max_tool_loops": None,
        "protocol": None,
    }
    cfg.update(extra)
    return cfg


def agent(
    name: str = "Main",
    *,
    kind: str = "agent",
    prompt: str = "You are a helpful assistant.",
    configs: dict[str, Any] | None = None,
    context: Sequence[dict[str, Any]] = (),
    input: dict[str, Any] = TEXT,
    output: dict[str, Any] = TEXT,
    tools: Sequence[dict[str, Any]] = (),
    workflows: Sequence[dict[str, Any]] = (),
    helpers: Sequence[dict[str, Any]] = (),
    intents: Sequence[dict[str, Any]] = (),
    description: str | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "description": description if kind == "agent" else (description or f"the {name} helper"),
        "configs": configs or {"default": config(prompt)},
        "context": list(context),
        "input": input,
        "output": output,
        "tools": list(tools),
        "workflows": list(workflows),
        "helpers": list(helpers),
        "intents": list(intents),
        "examples": [],
        "dropped_examples": [],
    }


def helper_use(name: str, tools: Any = "none", handoff: str = "none") -> dict[str, Any]:
    return {"name": name, "tools": tools, "handoff": handoff}


def intent(name: str, *fields: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": f"emit {name}", "fields": list(fields)}


def document(
    root: dict[str, Any],
    *others: dict[str, Any],
    types: dict[str, Any] | None = None,
    prompts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    agents = {root["name"]: root}
    for other in others:
        agents[other["name"]] = other
    return with_hash(
        {
            "ir_version": 1,
            "compiler_version": __version__,
            "source": "main.agent",
            "root": root["name"],
            "agents": agents,
            "types": types or {},
            "prompts": prompts or {},
        }
    )


def make_agent(doc: dict[str, Any], provider: Any, **config: Any) -> Agent:
    return create_agent(
        doc,
        {"provider": provider, **config},
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=1,
    )


class Recorder:
    """A function handler that records every intent as (name, value, agent_name)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, str]] = []

    def __call__(self, name: str, value: Any, agent_name: str) -> None:
        self.events.append((name, value, agent_name))

    def names(self) -> list[str]:
        return [e[0] for e in self.events]

    def of(self, name: str) -> list[Any]:
        return [e[1] for e in self.events if e[0] == name]


def block(kind: str, name: str | None, body: str) -> str:
    head = f"[{kind}: {name}]" if name else f"[{kind}]"
    return f"{head}\n{body}\n[/{kind}]"


def text(body: str) -> str:
    return block("response_text", None, body)

"""The members of an agent or helper block, grouped by kind.

The parser keeps members in source order, mixed; the checker and the lowering both want them
by kind (every tool, ``tools {}`` blocks flattened; every config; ...). One function does that
grouping for both.
"""

from __future__ import annotations

from . import nodes as n


class AgentParts:
    """The members of one agent or helper block, grouped by kind (source order kept)."""

    # A plain class: `auwgent check` never imports dataclasses (see records.py).
    __slots__ = (
        "configs",
        "contexts",
        "inputs",
        "outputs",
        "tools",
        "workflows",
        "helpers",
        "intents",
        "descriptions",
    )

    def __init__(self) -> None:
        self.configs: list[n.ConfigBlock] = []
        self.contexts: list[n.ContextBlock] = []
        self.inputs: list[n.InputDecl] = []
        self.outputs: list[n.OutputDecl] = []
        self.tools: list[n.ToolDecl] = []
        self.workflows: list[n.WorkflowDecl] = []
        self.helpers: list[n.HelpersBlock] = []
        self.intents: list[n.IntentAttach] = []
        self.descriptions: list[n.DescriptionEntry] = []


def agent_parts(decl: n.AgentDecl) -> AgentParts:
    """Group the members of ``decl`` (tools of ``tools {}`` blocks flattened)."""
    parts = AgentParts()
    for member in decl.members:
        match member:
            case n.ConfigBlock():
                parts.configs.append(member)
            case n.ContextBlock():
                parts.contexts.append(member)
            case n.InputDecl():
                parts.inputs.append(member)
            case n.OutputDecl():
                parts.outputs.append(member)
            case n.ToolDecl():
                parts.tools.append(member)
            case n.ToolsBlock(tools=tools):
                parts.tools.extend(tools)
            case n.WorkflowDecl():
                parts.workflows.append(member)
            case n.HelpersBlock():
                parts.helpers.append(member)
            case n.IntentAttach():
                parts.intents.append(member)
            case n.DescriptionEntry():
                parts.descriptions.append(member)
    return parts

"""The members of an agent or helper block, grouped by kind.

The parser keeps members in source order, mixed; the checker and the lowering both want them
by kind (every tool, ``tools {}`` blocks flattened; every config; ...). One function does that
grouping for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import nodes as n


@dataclass(slots=True)
class AgentParts:
    """The members of one agent or helper block, grouped by kind (source order kept)."""

    configs: list[n.ConfigBlock] = field(default_factory=list)
    contexts: list[n.ContextBlock] = field(default_factory=list)
    inputs: list[n.InputDecl] = field(default_factory=list)
    outputs: list[n.OutputDecl] = field(default_factory=list)
    tools: list[n.ToolDecl] = field(default_factory=list)
    workflows: list[n.WorkflowDecl] = field(default_factory=list)
    helpers: list[n.HelpersBlock] = field(default_factory=list)
    intents: list[n.IntentAttach] = field(default_factory=list)
    descriptions: list[n.DescriptionEntry] = field(default_factory=list)


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

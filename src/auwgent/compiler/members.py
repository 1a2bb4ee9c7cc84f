"""The members of an agent or helper block, grouped by kind.

The parser keeps members in source order, mixed; the checker and the lowering both want them
by kind (every tool, ``tools {}`` blocks flattened; every config; ...). One function does that
grouping for both.
"""

from __future__ import annotations

from . import nodes as n


class AgentParts:
    """The members of one agent or helper block, grouped by kind (source order kept)."""

    # A plain class: `auwgent check` never imports dataclasses (see auwgent/_records.py).
    __slots__ = (
        "configs",
        "contexts",
        "inputs",
        "outputs",
        "tools",
        "groups",
        "workflows",
        "helpers",
        "personas",
        "intents",
        "descriptions",
    )

    def __init__(self) -> None:
        self.configs: list[n.ConfigBlock] = []
        self.contexts: list[n.ContextBlock] = []
        self.inputs: list[n.InputDecl] = []
        self.outputs: list[n.OutputDecl] = []
        self.tools: list[n.ToolDecl] = []
        self.groups: list[n.Name] = []  # tool groups named in `tools {}` blocks
        self.workflows: list[n.WorkflowDecl] = []
        self.helpers: list[n.HelpersBlock] = []
        self.personas: list[n.PersonasBlock] = []
        self.intents: list[n.IntentAttach] = []
        self.descriptions: list[n.DescriptionEntry] = []


def agent_parts(decl: n.AgentDecl) -> AgentParts:
    """Group the members of ``decl`` (tools of ``tools {}`` blocks flattened)."""
    parts = AgentParts()
    for member in decl.members:
        # One dictionary lookup by exact class (node classes have no subclasses) instead of
        # a `match` trying up to ten class patterns per member.
        group = _GROUPS.get(type(member))
        if group is not None:
            getattr(parts, group).append(member)
        elif isinstance(member, n.ToolsBlock):
            parts.tools.extend(member.tools)
            parts.groups.extend(member.groups)
    return parts


#: The ``AgentParts`` list each kind of member goes to (``tools {}`` blocks are flattened).
_GROUPS: dict[type, str] = {
    n.ConfigBlock: "configs",
    n.ContextBlock: "contexts",
    n.InputDecl: "inputs",
    n.OutputDecl: "outputs",
    n.ToolDecl: "tools",
    n.WorkflowDecl: "workflows",
    n.HelpersBlock: "helpers",
    n.PersonasBlock: "personas",
    n.IntentAttach: "intents",
    n.DescriptionEntry: "descriptions",
}

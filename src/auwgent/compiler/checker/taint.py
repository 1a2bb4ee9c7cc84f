"""Taint annotations and policy (docs/security.md): ``@untrusted`` and ``@sensitive`` on
tools, ``@trusted`` on ``mcp`` servers, ``@quarantine`` on helpers, ``taint: { ... }`` in a
config.

- ``E2130``: a taint annotation where it does not apply;
- ``E2131``: a quarantine helper that could act (tools, workflows, helpers, code mode, or a
  parent's grant of tools);
- ``E2132``: conflicting or repeated annotations (the same one twice, a quarantine helper
  without a typed output or handed the conversation);
- ``E2133``: a policy value or argument that is not known.
"""

from __future__ import annotations

from .. import nodes as n
from ..diagnostics import Note, did_you_mean
from ..members import AgentParts
from ..source import Span
from .context import TAINT_PLACES, Context

__all__ = [
    "POLICIES",
    "check_agent_annotations",
    "check_helper_use",
    "check_mcp_annotations",
    "check_taint_config",
    "check_tool_annotations",
    "misplaced",
]

POLICIES = ("approve", "refuse", "allow")
_PLACES = TAINT_PLACES
TAINT_FLAGS = frozenset(_PLACES)


def misplaced(cx: Context, annotation: n.Annotation, what: str) -> None:
    """``@untrusted``, ``@sensitive``, ``@trusted`` or ``@quarantine`` on ``what``."""
    word = str(getattr(annotation, "name", ""))
    cx.report(
        "E2130",
        f"`@{word}` does not apply to {what}",
        annotation.span,
        help=f"`@{word}` goes on {_PLACES[word]} (docs/security.md)",
    )


def _repeated(cx: Context, annotations: tuple[n.Annotation, ...], what: str) -> None:
    first: dict[str, Span] = {}
    for annotation in annotations:
        word = str(getattr(annotation, "name", ""))
        if word not in TAINT_FLAGS:
            continue
        if word in first:
            cx.report(
                "E2132",
                f"{what} has more than one `@{word}`",
                annotation.span,
                notes=[Note(f"first `@{word}` here", first[word])],
                help=f"keep one `@{word}`",
            )
        else:
            first[word] = annotation.span


def check_tool_annotations(cx: Context, tool: n.ToolDecl) -> None:
    """A tool: ``@untrusted`` and ``@sensitive(policy = ...)`` once each; not ``@trusted`` or
    ``@quarantine``."""
    what = f"tool `{tool.name.text}`"
    for annotation in tool.annotations:
        if isinstance(annotation, n.FlagAnnotation) and annotation.name in (
            "trusted",
            "quarantine",
        ):
            misplaced(cx, annotation, "a tool")
    _repeated(cx, tool.annotations, what)
    sensitive = n.sensitive_of(tool.annotations)
    if sensitive is not None:
        _sensitive_args(cx, sensitive)


def _sensitive_args(cx: Context, annotation: n.SensitiveAnnotation) -> None:
    seen: dict[str, Span] = {}
    for arg in annotation.args or ():
        if arg.name.text != "policy":
            cx.report(
                "E2133",
                f"`@sensitive` has no argument `{arg.name.text}`",
                arg.name.span,
                help=did_you_mean(arg.name.text, ("policy",))
                or 'its only argument is `policy`: `@sensitive(policy = "refuse")`',
            )
        elif not cx.duplicate(arg.name, seen, "`@sensitive` argument"):
            _policy_value(cx, arg.value, "`@sensitive` policy")


def _policy_value(cx: Context, value: n.Expr, what: str) -> None:
    text = value.value if isinstance(value, n.Literal) else None
    if text not in POLICIES:
        shown = text if isinstance(text, str) else None
        cx.report(
            "E2133",
            f"{what} must be one of " + ", ".join(f'"{p}"' for p in POLICIES),
            value.span,
            help=(did_you_mean(shown, POLICIES) if shown else None)
            or '"approve" asks the approver, "refuse" refuses the call, "allow" runs it',
        )


def check_mcp_annotations(cx: Context, decl: n.McpDecl) -> None:
    """An ``mcp`` server: only ``@trusted``, once."""
    for annotation in decl.annotations:
        if not (isinstance(annotation, n.FlagAnnotation) and annotation.name == "trusted"):
            _only(cx, annotation, "an `mcp` server", "@trusted")
    _repeated(cx, decl.annotations, f"mcp `{decl.name.text}`")


def _only(cx: Context, annotation: n.Annotation, what: str, allowed: str) -> None:
    word = str(getattr(annotation, "name", "")) or {
        n.DescAnnotation: "desc",
        n.ExampleAnnotation: "example",
        n.ApprovalAnnotation: "approval",
        n.McpAnnotation: "mcp",
    }.get(type(annotation), "")
    if word in TAINT_FLAGS:
        misplaced(cx, annotation, what)
        return
    cx.report(
        "E2130",
        f"`@{word}` does not apply to {what}",
        annotation.span,
        help=f"only `{allowed}` may follow the closing brace of {what}",
    )


def check_agent_annotations(cx: Context, decl: n.AgentDecl, parts: AgentParts) -> None:
    """``@quarantine`` only on a helper, once; a quarantine helper has a typed output and
    nothing it could act with: no tools, workflows, helpers or code mode."""
    what = f"{decl.kind} `{decl.name.text}`"
    for annotation in decl.annotations:
        if not (isinstance(annotation, n.FlagAnnotation) and annotation.name == "quarantine"):
            _only(cx, annotation, "a helper", "@quarantine")
        elif not decl.is_helper:
            cx.report(
                "E2130",
                f"`@quarantine` does not apply to agent `{decl.name.text}`",
                annotation.span,
                help="only a helper is quarantined: the agent is the one that acts",
            )
    _repeated(cx, decl.annotations, what)
    if not (decl.is_helper and n.flagged(decl.annotations, "quarantine")):
        return
    blockers = [t.name.span for t in parts.tools] + [w.name.span for w in parts.workflows]
    blockers += [g.span for g in parts.groups] + [b.span for b in parts.helpers]
    for config in parts.configs:
        entry = config.entry("codeMode")
        if entry is not None and _is_true(entry.value):
            blockers.append(entry.name.span)
    for span in blockers:
        cx.report(
            "E2131",
            f"quarantine helper `{decl.name.text}` cannot have tools, workflows, helpers or "
            "code mode",
            span,
            help="a quarantine helper reads untrusted text and returns a typed value; let the "
            "parent act on that value",
        )
    output = parts.outputs[0] if parts.outputs else None
    if output is None or isinstance(output.type, n.TextType):
        cx.report(
            "E2132",
            f"quarantine helper `{decl.name.text}` needs a typed `output:`",
            output.span if output is not None else decl.name.span,
            help="declare the fields the parent acts on, e.g. `output: { urgent: boolean, "
            'kind: "bill" | "spam" }`: its non-string fields are trusted',
        )


def _is_true(value: n.ConfigValue) -> bool:
    term = value.terms[0] if len(value.terms) == 1 else None
    return isinstance(term, n.Literal) and term.value is True


def check_helper_use(cx: Context, use: n.HelperUse, helper: n.AgentDecl) -> None:
    """A quarantine helper's line: no tools granted, no handoff."""
    if not n.flagged(helper.annotations, "quarantine"):
        return
    if isinstance(use.grant, n.ToolGrantAll | n.ToolGrantList):
        cx.report(
            "E2131",
            f"quarantine helper `{use.name.text}` cannot be granted tools",
            use.grant.span,
            help="remove the `with ...` part: a quarantine helper has no tools",
        )
    if use.handoff != "none":
        cx.report(
            "E2132",
            f"quarantine helper `{use.name.text}` cannot be handed the conversation",
            use.span,
            help="remove `handoff user`: a quarantine helper's typed output goes back to its "
            "parent",
        )


def check_taint_config(cx: Context, entry: n.ConfigEntry) -> None:
    """``taint: { sensitive: "approve" | "refuse" | "allow" }``."""
    terms = entry.value.terms
    term = terms[0] if len(terms) == 1 else None
    if not isinstance(term, n.ObjectExpr):
        cx.report(
            "E2133",
            "`taint` must be an object",
            entry.value.span,
            help='e.g. `taint: { sensitive: "refuse" }`',
        )
        return
    for item in term.entries:
        key = item.key.text
        if key != "sensitive":
            cx.report(
                "E2133",
                f"unknown `taint` field `{key}`",
                item.key.span,
                help=did_you_mean(key, ("sensitive",)) or "its one field is `sensitive`",
            )
        else:
            _policy_value(cx, item.value, "`taint.sensitive`")

"""Checks of files, agents and helpers: configs, context, tools, workflows, helpers, intents.

One ``check_<construct>`` function per construct, each over the checker's
:class:`~.context.Context` (which is in one file at a time, ``in_file``); models and prompts
are checked by ``prompts``.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Collection

from ..._records import record
from ..._typing import assert_never
from ...ir import vocabulary
from ...ir.vocabulary import CONFIG_BLOCK_KEYS
from .. import nodes as n
from ..diagnostics import Note, did_you_mean, listing, suggestion_budget
from ..lower import example_candidates, select_examples
from ..members import AgentParts, agent_parts
from ..modules import is_exported, kind_word
from ..source import Span
from . import budget, mcp, prompts, taint
from .context import Context
from .exprs import Env, ToolSig, WorkflowChecker
from .types import UNKNOWN, FieldTy, Named, Obj, Ty, assignable, display, resolve

CONFIG_KEYS = CONFIG_BLOCK_KEYS
BUILTIN_INTENTS = frozenset(vocabulary.BUILTIN_INTENTS)
MAX_EXAMPLES = 5

#: Names the model can call in one agent: name -> (kind, where first declared).
Callables = dict[str, tuple[str, Span]]


@record
class AgentScope:
    """What every workflow of one agent sees: its tools, context and non-callable names.

    ``scoped`` collects the scoped tools of all its workflows, to compare their signatures.
    """

    tools: dict[str, ToolSig]
    ctx: dict[str, Ty]
    owner: str
    not_callable: dict[str, str]
    scoped: dict[str, tuple[ToolSig, Span]]


# -- project-wide passes -------------------------------------------------------------


def build_type_table(cx: Context) -> None:
    """Resolve every ``type`` block once, so named types can be opened anywhere."""
    for path in sorted(cx.state.graph.scopes):
        with cx.in_file(path), suggestion_budget(cx.source):
            seen: dict[str, Span] = {}
            for decl in cx.scope.module.decls:
                if isinstance(decl, n.TypeDecl):
                    fields = cx.fields_of(decl.fields)
                    if decl.name.text not in seen:
                        seen[decl.name.text] = decl.name.span
                        key = f"{path}::{decl.name.text}"
                        cx.state.types[key] = Obj(fields)


def unused_warnings(cx: Context, skip: Collection[str] = ()) -> None:
    """W2001 for imports never used, W2002 for private declarations never used."""
    for path, scope in sorted(cx.state.graph.scopes.items()):
        if path in skip:
            continue
        with cx.in_file(path):
            for name, imported in scope.imported.items():
                if (path, name) not in cx.state.used_imports and name not in scope.local:
                    cx.warn(
                        "W2001",
                        f"`{name}` is imported but never used",
                        imported.name.span,
                        help="remove it from the import",
                    )
            for symbol in scope.local.values():
                decl = symbol.decl
                if isinstance(decl, n.AgentDecl) and not decl.is_helper:
                    continue
                if is_exported(decl) or symbol.key in cx.state.used_keys:
                    continue
                cx.warn(
                    "W2002",
                    f"{_noun(symbol.kind)} `{symbol.name}` is declared but never used",
                    decl.name.span,
                    help="use it, export it, or remove it",
                )


# -- one file ------------------------------------------------------------------------


def check_file(cx: Context) -> None:
    """Check the declarations of the current file."""
    seen: dict[str, Span] = {}
    agents: list[n.AgentDecl] = []
    for decl in cx.scope.module.decls:
        if _outside_declaration(cx, decl):
            continue
        _top_level_name(cx, decl, seen)
        if isinstance(decl, n.AgentDecl) and not decl.is_helper:
            agents.append(decl)
        _check_declaration(cx, decl)
    for extra in agents[1:]:
        cx.report(
            "E2002",
            f"a file can declare only one agent; `{extra.name.text}` is the second",
            extra.name.span,
            notes=[Note(f"`{agents[0].name.text}` is declared here", agents[0].name.span)],
            help="move it to its own file (helpers may share a file with the agent)",
        )


def _outside_declaration(cx: Context, decl: n.Decl) -> bool:
    """Check what is not a top-level name of its own (imports, tests, tools outside an
    agent); ``True`` when ``decl`` is one of these."""
    match decl:
        case n.ImportDecl() | n.TestDecl():
            return True  # tests are checked once every file is (checker.tests)
        case n.ToolDecl() | n.WorkflowDecl():
            _outside_agent(cx, decl)
            return True
        case n.ToolsBlock(tools=tools, groups=groups):
            for tool in tools:
                _outside_agent(cx, tool)
            for name in groups:
                cx.report(
                    "E2003",
                    f"tool group `{name.text}` is named outside an agent or helper",
                    name.span,
                    help="name it in the `tools { }` block of the agent or helper that uses it",
                )
            return True
    return False


def _check_declaration(cx: Context, decl: n.Decl) -> None:
    match decl:
        case n.ModelDecl():
            prompts.check_model_decl(cx, decl)
        case n.McpDecl():
            mcp.check_mcp_decl(cx, decl)
            taint.check_mcp_annotations(cx, decl)
        case n.PromptDecl():
            prompts.check_prompt_decl(cx, decl)
        case n.PersonaDecl():
            prompts.check_persona_decl(cx, decl)
        case n.IntentDecl():
            check_intent_decl(cx, decl)
        case n.ToolGroupDecl():
            check_tool_group(cx, decl)
        case n.AgentDecl():
            check_agent(cx, decl)
        case n.TypeDecl():
            pass  # build_type_table has read its fields
        case n.ImportDecl() | n.TestDecl() | n.ToolDecl() | n.WorkflowDecl() | n.ToolsBlock():
            pass  # not top-level names: _outside_declaration has them
        case _:
            assert_never(decl)


def _top_level_name(cx: Context, decl: n.Decl, seen: dict[str, Span]) -> None:
    assert not isinstance(
        decl, n.ImportDecl | n.ToolDecl | n.ToolsBlock | n.WorkflowDecl | n.TestDecl
    )
    name = decl.name
    imported = cx.scope.imported.get(name.text)
    if imported is not None and name.text not in seen:
        seen[name.text] = name.span
        cx.report(
            "E2001",
            f"`{name.text}` is declared here and also imported",
            name.span,
            notes=[Note("imported here", imported.name.span)],
            help="rename the declaration or drop the import",
        )
        return
    cx.duplicate(name, seen, _noun(kind_word(decl)))


def _noun(kind: str) -> str:
    """What a declaration of ``kind`` is called in messages (``tools`` is a tool group)."""
    return "tool group" if kind == "tools" else kind


def _outside_agent(cx: Context, decl: n.ToolDecl | n.WorkflowDecl) -> None:
    if decl.export_span is not None:
        return  # E1005 already explains where it belongs
    word = "tool" if isinstance(decl, n.ToolDecl) else "workflow"
    cx.report(
        "E2003",
        f"{word} `{decl.name.text}` is declared outside an agent or helper",
        decl.name.span,
        help="move it inside the `agent` or `helper` block whose model may call it"
        + (
            ", or into a tool group (`tools Name { ... }`) the agent names"
            if word == "tool"
            else ""
        ),
    )


# -- intents -------------------------------------------------------------------------


def check_intent_decl(cx: Context, decl: n.IntentDecl) -> None:
    """``intent Name { description: "..." fields { ... } }``."""
    if decl.name.text in BUILTIN_INTENTS:
        cx.report(
            "E2074",
            f"`{decl.name.text}` is a built-in intent name",
            decl.name.span,
            help="pick another name for the custom intent",
        )
    cx.fields_of(decl.fields)
    if not decl.fields:
        cx.warn(
            "W2006",
            f"intent `{decl.name.text}` has no fields",
            decl.name.span,
            help="add `fields { name: type }` so the model knows what to emit",
        )


# -- agents and helpers --------------------------------------------------------------


def check_agent(cx: Context, decl: n.AgentDecl) -> None:
    """Every rule for one ``agent`` or ``helper`` block."""
    parts = agent_parts(decl)
    owner = f"{decl.kind} `{decl.name.text}`"
    ctx = check_context(cx, parts)
    check_io(cx, decl, parts)
    check_description(cx, decl, parts)
    env_ctx = Env([{}], ctx, tools=None, strict=False, ctx_owner=owner)
    check_configs(cx, decl, parts, env_ctx)
    names: dict[str, tuple[str, Span]] = {}
    tools = check_tools(cx, parts.tools, names)
    check_group_uses(cx, parts, tools, names)
    check_workflows(cx, parts, tools, names, ctx, owner)
    check_helpers(cx, parts, tools, names)
    check_personas(cx, parts, env_ctx)
    check_intents(cx, parts)
    check_example_count(cx, decl, parts)
    taint.check_agent_annotations(cx, decl, parts)


def check_context(cx: Context, parts: AgentParts) -> dict[str, Ty]:
    """``context { ... }``: at most one block; returns the declared fields."""
    for extra in parts.contexts[1:]:
        _twice(cx, extra.span, "context", parts.contexts[0].span)
    if not parts.contexts:
        return {}
    return {f.name: f.ty for f in cx.fields_of(parts.contexts[0].fields, "context field")}


def _twice(cx: Context, span: Span, what: str, first: Span) -> None:
    cx.report(
        "E2001",
        f"`{what}` is declared more than once",
        span,
        notes=[Note("first declared here", first)],
        help="merge them into one",
    )


def check_io(cx: Context, decl: n.AgentDecl, parts: AgentParts) -> None:
    """``input:`` and ``output:``: at most one each; agents take Text input."""
    for extra_in in parts.inputs[1:]:
        _twice(cx, extra_in.span, "input", parts.inputs[0].span)
    for extra_out in parts.outputs[1:]:
        _twice(cx, extra_out.span, "output", parts.outputs[0].span)
    if parts.inputs:
        texpr = parts.inputs[0].type
        ty = cx.type_of(texpr, allow_text=True)
        if not decl.is_helper and not isinstance(texpr, n.TextType):
            cx.report(
                "E2028",
                "an agent's input is always `Text`",
                texpr.span,
                help="structured input is for helpers, which a parent calls like a tool",
            )
        elif decl.is_helper and not isinstance(texpr, n.TextType | n.ObjectType):
            _helper_input(cx, texpr, ty)
    if parts.outputs:
        cx.type_of(parts.outputs[0].type, allow_text=True)


def _helper_input(cx: Context, texpr: n.TypeExpr, ty: Ty) -> None:
    if isinstance(ty, Named) and isinstance(resolve(ty, cx.state.types), Obj):
        return
    if ty == UNKNOWN:
        return
    cx.report(
        "E2028",
        f"a helper's input must be `Text` or an object, not `{display(ty)}`",
        texpr.span,
        help="the parent calls the helper like a tool with named arguments",
    )


def check_description(cx: Context, decl: n.AgentDecl, parts: AgentParts) -> None:
    """A helper has exactly one ``description``; an agent has none."""
    places = [d.span for d in parts.descriptions]
    default = next((c for c in parts.configs if c.is_default), None)
    entry = default.entry("description") if default else None
    if entry is not None:
        places.append(entry.name.span)
    if not decl.is_helper:
        for span in places:
            cx.report(
                "E2024",
                "an agent has no `description`",
                span,
                help="only helpers (and workflows) are described, because a model "
                "chooses to call them",
            )
        return
    if not places:
        cx.report(
            "E2022",
            f"helper `{decl.name.text}` needs a `description`",
            decl.name.span,
            help='add `description: "..."`: the parent model reads it to decide '
            "when to call the helper",
        )
    for extra in places[1:]:
        cx.report(
            "E2023",
            f"helper `{decl.name.text}` is described more than once",
            extra,
            notes=[Note("first description here", places[0])],
            help="keep one `description` (top of the helper or in `default config`)",
        )


def check_configs(cx: Context, decl: n.AgentDecl, parts: AgentParts, env: Env) -> None:
    """``default config`` (exactly one) and named configs, each with model and prompt."""
    defaults = [c for c in parts.configs if c.is_default]
    if not defaults:
        cx.report(
            "E2020",
            f"{decl.kind} `{decl.name.text}` has no `default config`",
            decl.name.span,
            help="add `default config { model: ... prompt: ... }`",
        )
    for extra in defaults[1:]:
        _twice(cx, extra.span, "default config", defaults[0].span)
    seen: dict[str, Span] = {}
    for config in parts.configs:
        if config.name is not None:
            cx.duplicate(config.name, seen, "config")
        check_config(cx, config, env)


def check_config(cx: Context, config: n.ConfigBlock, env: Env) -> None:
    """One config block's entries."""
    seen: dict[str, Span] = {}
    for entry in config.entries:
        if cx.duplicate(entry.name, seen, "config field"):
            continue
        key = entry.name.text
        if key not in CONFIG_KEYS:
            cx.report(
                "E2026",
                f"unknown config field `{key}`",
                entry.name.span,
                help=did_you_mean(key, CONFIG_KEYS) or "config fields: " + ", ".join(CONFIG_KEYS),
            )
        elif key in ("model", "embedding"):
            prompts.check_model_value(cx, entry)
        elif key == "fallback":
            prompts.check_fallback(cx, entry)
        elif key == "prompt":
            prompts.check_prompt_value(cx, entry.value, env)
        elif key == "maxToolLoops":
            prompts.check_max_tool_loops(cx, entry)
        elif key == "protocol":
            prompts.check_protocol(cx, entry)
        elif key == "codeMode":
            prompts.check_code_mode(cx, entry)
        elif key == "taint":
            taint.check_taint_config(cx, entry)
        elif key == "history":
            budget.check_history(cx, entry)
        elif key == "maxToolOutput":
            budget.check_max_tool_output(cx, entry)
        elif key == "description" and not config.is_default:
            cx.report(
                "E2024",
                "`description` belongs in `default config`",
                entry.name.span,
                help="move it to `default config` or the top of the helper",
            )
    missing = [k for k in ("model", "prompt") if k not in seen]
    if missing:
        label = "default config" if config.is_default else f"config `{config.name.text}`"  # type: ignore[union-attr]
        cx.report(
            "E2021",
            f"{label} has no `{'` or `'.join(missing)}`",
            config.name.span if config.name else config.span,
            help="every config needs `model: ...` and `prompt: ...`",
        )


# -- tools and workflows -------------------------------------------------------------


def check_tools(cx: Context, tools: list[n.ToolDecl], names: Callables) -> dict[str, ToolSig]:
    """The agent's model-visible tools; returns their signatures by name."""
    sigs: dict[str, ToolSig] = {}
    for tool in tools:
        sig = tool_sig(cx, tool)
        if callable_name(cx, tool.name, "tool", names):
            sigs[sig.name] = sig
    return sigs


def check_tool_group(cx: Context, decl: n.ToolGroupDecl) -> None:
    """``tools Name { ... }``: each tool checked in this file, each name once."""
    seen: dict[str, Span] = {}
    for tool in decl.tools:
        tool_sig(cx, tool)
        cx.duplicate(tool.name, seen, "tool")


def check_group_uses(
    cx: Context, parts: AgentParts, sigs: dict[str, ToolSig], names: Callables
) -> None:
    """Tool groups named in ``tools { }``: each a known group, whose tools (checked in the
    group's own file) join the agent's under names of their own. A group in a workflow's
    scoped tools is refused."""
    for name in parts.groups:
        symbol = cx.lookup_kind(name.text, name.span, "tools")
        if symbol is None:
            continue
        assert isinstance(symbol.decl, n.ToolGroupDecl)
        group = f"tool group `{name.text}`"
        for tool in symbol.decl.tools:
            with cx.in_file(symbol.path):
                sig = tool_sig(cx, tool)
            first = names.get(tool.name.text)
            if first is None:
                names[tool.name.text] = (f"tool of {group}", name.span)
                sigs[sig.name] = sig
                continue
            cx.report(
                "E2121",
                f"{group} brings tool `{tool.name.text}`, already the name of a {first[0]} of "
                "this agent",
                name.span,
                notes=[Note(f"the {first[0]} is declared here", first[1])],
                help="the model calls tools by name: rename or remove one of them",
            )
    for workflow in parts.workflows:
        for name in workflow.groups:
            cx.report(
                "E2122",
                f"a tool group (`{name.text}`) cannot be a workflow's scoped tools",
                name.span,
                help="name the group in the agent's or helper's `tools { }`, or declare the "
                "scoped tools in the workflow",
            )


def callable_name(cx: Context, name: n.Name, kind: str, names: Callables) -> bool:
    """Tools, workflows and helpers share one namespace: the model calls them by name."""
    first = names.get(name.text)
    if first is None:
        names[name.text] = (kind, name.span)
        return True
    first_kind, first_span = first
    cx.report(
        "E2001",
        f"`{name.text}` is already the name of a {first_kind} of this agent",
        name.span,
        notes=[Note(f"the {first_kind} is declared here", first_span)],
        help="tools, workflows and helpers need distinct names: the model calls them by name",
    )
    return False


def tool_sig(cx: Context, tool: n.ToolDecl) -> ToolSig:
    """Check one tool declaration and return its signature."""
    params = cx.fields_of(tool.params, "parameter")
    returns = cx.type_of(tool.returns) if tool.returns is not None else UNKNOWN
    # Both checks need annotations (two for a repeated `@desc`): most tools have none
    # or one, and then the label is not even built.
    if len(tool.annotations) > 1:
        cx.single_desc(tool.annotations, f"tool `{tool.name.text}`")
    if tool.annotations:
        check_examples(cx, tool.examples, params, f"tool `{tool.name.text}`")
        cx.check_approval(tool.annotations, f"tool `{tool.name.text}`")
        mcp.check_mcp_use(cx, tool.annotations, f"tool `{tool.name.text}`")
        taint.check_tool_annotations(cx, tool)
        budget.check_max_output(cx, tool.annotations, f"tool `{tool.name.text}`")
    return ToolSig(tool.name.text, params, returns)


def check_examples(
    cx: Context, examples: tuple[n.ExampleAnnotation, ...], params: tuple[FieldTy, ...], target: str
) -> None:
    """``@example(p = v, ...)``: known names, once each, literal values of the right type."""
    by_name = {p.name: p for p in params}
    for example in examples:
        seen: dict[str, Span] = {}
        for arg in example.args:
            if cx.duplicate(arg.name, seen, "example argument"):
                continue
            param = by_name.get(arg.name.text)
            if param is None:
                cx.report(
                    "E2030",
                    f"{target} has no parameter `{arg.name.text}`",
                    arg.name.span,
                    help=did_you_mean(arg.name.text, by_name) or _params_help(params),
                )
                continue
            _example_value(cx, arg, param)
        unknown = [a for a in example.args if a.name.text not in by_name]
        missing = [p.name for p in params if not p.optional and p.name not in seen]
        if missing and example.args and not unknown:
            cx.report(
                "E2032",
                f"this example of {target} leaves out " + listing(missing, "`{}`".format),
                example.span,
                help="an example should show a complete call",
            )


def _example_value(cx: Context, arg: n.ExampleArg, param: FieldTy) -> None:
    before = len(cx.state.diagnostics)
    cx.constant(arg.value, "an example value")
    if len(cx.state.diagnostics) > before:
        return
    got = cx.exprs.type_of(arg.value, Env([{}], None, strict=False))
    if assignable(got, param.ty, cx.state.types):
        return  # (tested here so that the message is built only when reported)
    cx.exprs.mismatch(
        got, param.ty, arg.value.span, code="E2031", what=f"example argument `{param.name}`"
    )


def check_workflows(
    cx: Context,
    parts: AgentParts,
    tools: dict[str, ToolSig],
    names: Callables,
    ctx: dict[str, Ty],
    owner: str,
) -> None:
    """Every workflow: description, signature, scoped tools and a type-checked body."""
    not_callable = {
        w.name.text: "workflows cannot call other workflows; share the steps through tools"
        for w in parts.workflows
    }
    for block in parts.helpers:
        for use in block.uses:
            not_callable[use.name.text] = "helpers are called by the model, not by workflows"
    for other in parts.workflows:
        for scoped in other.tools:
            not_callable.setdefault(
                scoped.name.text,
                f"it is scoped to workflow `{other.name.text}`; declare it in this workflow "
                "too, or in the agent",
            )
    shared = AgentScope(tools, ctx, owner, not_callable, {})
    for workflow in parts.workflows:
        callable_name(cx, workflow.name, "workflow", names)
        check_workflow(cx, workflow, shared)


def check_workflow(cx: Context, workflow: n.WorkflowDecl, agent: AgentScope) -> None:
    """One workflow."""
    label = f"workflow `{workflow.name.text}`"
    if workflow.description is None:
        cx.report(
            "E2025",
            f"{label} needs a `description`",
            workflow.name.span,
            help='add `description: "..."` as the first line of its body: the '
            "model reads it to decide when to call the workflow",
        )
    for annotation in workflow.annotations:
        if isinstance(annotation, n.DescAnnotation):
            cx.report(
                "E2033",
                "a workflow is described with `description:` in its body, not `@desc`",
                annotation.span,
            )
        elif isinstance(annotation, n.FlagAnnotation | n.SensitiveAnnotation):
            cx.misplaced_flag(annotation, "workflow")
        elif isinstance(annotation, n.McpAnnotation):
            cx.misplaced_mcp(annotation, "a workflow")
        elif isinstance(annotation, n.MaxOutputAnnotation):
            cx.report("E2140", "`@maxOutput` applies to a tool, not a workflow", annotation.span)
    params = cx.fields_of(workflow.params, "parameter")
    returns = cx.type_of(workflow.returns) if workflow.returns is not None else UNKNOWN
    if workflow.returns is None:
        cx.report(
            "E2029",
            f"{label} needs a return type",
            workflow.name.span,
            help="write it after the parameters, e.g. `workflow "
            f"{workflow.name.text}(...): string`; the model receives the returned value",
        )
    check_examples(cx, workflow.examples, params, label)
    cx.check_approval(workflow.annotations, label)
    scoped = _scoped_tools(cx, workflow, agent.tools, agent.scoped)
    env = Env(
        [{p.name: p.ty for p in params}],
        agent.ctx,
        tools=ChainMap(scoped, agent.tools),  # (a copy per workflow was quadratic)
        strict=True,
        not_callable=agent.not_callable,
        ctx_owner=agent.owner,
    )
    body = WorkflowChecker(workflow.name.text, cx.exprs, returns, cx.warn)
    if not body.body(workflow.body, env) and workflow.returns is not None:
        cx.report(
            "E2061",
            f"{label} does not return a value on every path",
            workflow.name.span,
            help=f"end the body with `return` a `{display(returns)}`",
        )


def _scoped_tools(
    cx: Context,
    workflow: n.WorkflowDecl,
    tools: dict[str, ToolSig],
    others: dict[str, tuple[ToolSig, Span]],
) -> dict[str, ToolSig]:
    scoped: dict[str, ToolSig] = {}
    seen: dict[str, Span] = {}
    for tool in workflow.tools:
        sig = tool_sig(cx, tool)
        if cx.duplicate(tool.name, seen, "scoped tool"):
            continue
        if tool.name.text in tools:
            cx.report(
                "E2001",
                f"scoped tool `{tool.name.text}` has the same name as a tool of the agent",
                tool.name.span,
                help="rename it; a scoped tool must be distinct to stay hidden",
            )
            continue
        for example in tool.examples:
            cx.warn(
                "W2007",
                f"`@example` on scoped tool `{tool.name.text}` never reaches the model",
                example.span,
                help="the model cannot see scoped tools; put examples on the workflow",
            )
        _same_signature(cx, tool, sig, others)
        scoped[sig.name] = sig
    return scoped


def _same_signature(
    cx: Context, tool: n.ToolDecl, sig: ToolSig, others: dict[str, tuple[ToolSig, Span]]
) -> None:
    """Scoped tools of one name share one implementation, so they need one signature."""
    first = others.setdefault(sig.name, (sig, tool.name.span))
    if first[0] == sig or first[1] == tool.name.span:
        return
    cx.report(
        "E2075",
        f"scoped tool `{sig.name}` is declared with a different signature in another workflow",
        tool.name.span,
        notes=[Note("the other declaration", first[1])],
        help="tools are implemented once by name; give both the same parameters and "
        "return type, or different names",
    )


# -- helpers and intents -------------------------------------------------------------


def check_helpers(
    cx: Context, parts: AgentParts, tools: dict[str, ToolSig], names: Callables
) -> None:
    """``helpers { Name [with ...] [handoff ...] }``."""
    for extra in parts.helpers[1:]:
        _twice(cx, extra.span, "helpers", parts.helpers[0].span)
    workflows = {w.name.text for w in parts.workflows}
    for block in parts.helpers[:1]:
        for use in block.uses:
            if not callable_name(cx, use.name, "helper", names):
                continue
            symbol = cx.lookup_kind(use.name.text, use.name.span, "helper")
            if isinstance(use.grant, n.ToolGrantList):
                _grants(cx, use.grant, tools, workflows)
            if symbol is not None and isinstance(symbol.decl, n.AgentDecl):
                _helper_tool_names(cx, use, agent_parts(symbol.decl), parts, tools)
                taint.check_helper_use(cx, use, symbol.decl)
            _helper_annotations(cx, use)


def _helper_annotations(cx: Context, use: n.HelperUse) -> None:
    for annotation in use.annotations:
        if isinstance(annotation, n.McpAnnotation):
            cx.misplaced_mcp(annotation, "a helper")
        elif isinstance(annotation, n.FlagAnnotation | n.SensitiveAnnotation) and (
            annotation.name != "repeatable"
        ):
            cx.misplaced_flag(annotation, "helper's line in `helpers { }`")
        elif not isinstance(annotation, n.ApprovalAnnotation):
            word = {n.DescAnnotation: "@desc", n.ExampleAnnotation: "@example"}.get(
                type(annotation), f"@{getattr(annotation, 'name', '')}"
            )
            cx.report(
                "E2033",
                f"`{word}` does not apply to a helper's line in `helpers {{ }}`",
                annotation.span,
                help="a helper is described by its `description:`; only `@approval` goes here",
            )
    cx.check_approval(use.annotations, f"helper `{use.name.text}`")


def _helper_tool_names(
    cx: Context, use: n.HelperUse, helper: AgentParts, parts: AgentParts, tools: dict[str, ToolSig]
) -> None:
    """A helper's own tool may not share its name with a scoped tool of this agent, or
    with one of this agent's tools that it was not granted: the application implements
    tools by name, so one implementation would serve both."""
    scoped = {t.name.text: w.name.text for w in parts.workflows for t in w.tools}
    if isinstance(use.grant, n.ToolGrantAll):
        granted: set[str] = set(tools)
    elif isinstance(use.grant, n.ToolGrantList):
        granted = {name.text for name in use.grant.names}
    else:
        granted = set()
    for tool in helper.tools:
        name = tool.name.text
        if name in scoped:
            clash = f"a scoped tool of workflow `{scoped[name]}`"
        elif name in tools and name not in granted:
            clash = f"a tool of this agent that `{use.name.text}` is not granted"
        else:
            continue
        cx.report(
            "E2078",
            f"helper `{use.name.text}` declares tool `{name}`, the name of {clash}",
            use.name.span,
            help=f"tools are implemented by name, so one implementation would serve both; "
            f"rename `{name}` in `{use.name.text}`",
        )


def _grants(
    cx: Context, grant: n.ToolGrantList, tools: dict[str, ToolSig], workflows: set[str]
) -> None:
    seen: dict[str, Span] = {}
    for name in grant.names:
        if cx.duplicate(name, seen, "granted tool"):
            continue
        if name.text in tools:
            continue
        if name.text in workflows:
            cx.report(
                "E2015",
                f"`{name.text}` is a workflow; only tools can be granted",
                name.span,
                help="a helper can be given the parent's tools, not its workflows",
            )
            continue
        cx.report(
            "E2015",
            f"unknown tool `{name.text}` in `with tools {{ }}`",
            name.span,
            help=did_you_mean(name.text, tools) or "list tools declared in this agent",
        )


def check_personas(cx: Context, parts: AgentParts, env: Env) -> None:
    """``personas { A, B }``: declared personas, each once; their ``ctx`` reads checked."""
    for extra in parts.personas[1:]:
        _twice(cx, extra.span, "personas", parts.personas[0].span)
    seen: dict[str, Span] = {}
    for block in parts.personas[:1]:
        for name in block.names:
            if cx.duplicate(name, seen, "persona"):
                continue
            symbol = cx.lookup_kind(name.text, name.span, "persona")
            if symbol is not None:
                assert isinstance(symbol.decl, n.PersonaDecl)
                prompts.check_prompt_use(cx, symbol.path, symbol.decl, env)


def check_intents(cx: Context, parts: AgentParts) -> None:
    """``intent: A + B`` or inline ``intent: { A { ... } }``."""
    for extra in parts.intents[1:]:
        _twice(cx, extra.span, "intent", parts.intents[0].span)
    seen: dict[str, Span] = {}
    for attach in parts.intents[:1]:
        for item in attach.items:
            if isinstance(item, n.NameRef):
                cx.lookup_kind(item.name, item.span, "intent")
                cx.duplicate(n.Name(item.name, item.span), seen, "intent")
            else:
                check_intent_decl(cx, item)
                cx.duplicate(item.name, seen, "intent")


def check_example_count(cx: Context, decl: n.AgentDecl, parts: AgentParts) -> None:
    """W2003 when more than five ``@example``s compete for the model's context."""
    candidates = example_candidates(parts.tools, parts.workflows)
    if len(candidates) <= MAX_EXAMPLES:
        return  # all of them reach the model
    chosen, dropped = select_examples(candidates)
    names = ", ".join(f"`{c.target}` #{c.position + 1}" for c in dropped)
    kept = ", ".join(f"`{c.target}` #{c.position + 1}" for c in chosen)
    total = len(chosen) + len(dropped)
    cx.warn(
        "W2003",
        f"{decl.kind} `{decl.name.text}` has {total} `@example`s; only "
        f"{MAX_EXAMPLES} reach the model",
        decl.name.span,
        notes=[Note(f"kept: {kept}"), Note(f"dropped: {names}")],
        help="keep the examples that teach the most (the notes say which ones are kept)",
    )


def _params_help(params: tuple[FieldTy, ...]) -> str:
    if not params:
        return "it takes no parameters: write `@example()`"
    return "parameters: " + listing(params, lambda p: f"`{p.name}`")

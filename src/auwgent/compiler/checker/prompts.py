"""Checks of models, configs' values and prompts (named, inline, and their uses).

One ``check_<construct>`` function per construct, over the checker's context. A named
prompt is checked once on its own, in the scope of its parameters; every use then checks its
arguments and, for the agent that uses it, the ``ctx`` fields and schema targets it reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from auwgent.ir import anthropic_options
from auwgent.ir.gemini_options import alias_of, camel, option_problem

from ..._typing import assert_never
from .. import nodes as n
from ..diagnostics import Note, did_you_mean
from ..source import Span
from . import budget
from .context import PROVIDERS, Context, env_for_prompt
from .exprs import Env
from .types import FieldTy

# -- models --------------------------------------------------------------------------


def check_model_decl(cx: Context, decl: n.ModelDecl) -> None:
    """``model X { provider: gemini("...") }``: a provider entry, and optionally the
    ``contextWindow`` / ``maxOutputTokens`` that override the table (docs/context.md)."""
    seen: dict[str, Span] = {}
    provider: n.ConfigEntry | None = None
    limits: dict[str, n.ConfigEntry] = {}
    for entry in decl.entries:
        if cx.duplicate(entry.name, seen, "field"):
            continue
        if entry.name.text in budget.MODEL_LIMITS:
            limits[entry.name.text] = entry
            continue
        if entry.name.text != "provider":
            fields = ["provider", *budget.MODEL_LIMITS]
            cx.report(
                "E2026",
                f"unknown field `{entry.name.text}` in a model block",
                entry.name.span,
                help=did_you_mean(entry.name.text, fields)
                or "a model block's fields: " + ", ".join(fields),
            )
            continue
        provider = entry
    budget.check_model_limits(cx, limits)
    if provider is None:
        cx.report(
            "E2021",
            f"model `{decl.name.text}` has no `provider`",
            decl.name.span,
            help='add `provider: gemini("gemini-2.5-flash")`',
        )
        return
    term = _single_term(cx, provider.value, "provider")
    if term is None:
        return
    if isinstance(term, n.Call):
        check_provider_call(cx, term)
    else:
        cx.report(
            "E2027",
            "`provider` must be a provider call",
            term.span,
            help='e.g. `gemini("gemini-2.5-flash")`, `openai("gpt-4o")` or '
            '`custom("id", "https://...", "model")`',
        )


def _single_term(cx: Context, value: n.ConfigValue, what: str) -> n.ConfigTerm | None:
    if len(value.terms) == 1:
        return value.terms[0]
    cx.report(
        "E2027", f"`{what}` takes a single value", value.span, help="`+` only composes prompts"
    )
    return None


def check_model_value(cx: Context, entry: n.ConfigEntry) -> None:
    """``model:`` / ``embedding:``: a model name or an inline provider call."""
    term = _single_term(cx, entry.value, entry.name.text)
    check_model_term(cx, term, f"`{entry.name.text}` must be a model", use=entry.name.text)


def _is_anthropic(decl: object) -> bool:
    """Whether a ``model`` block's provider is ``anthropic(...)``."""
    if not isinstance(decl, n.ModelDecl):
        return False
    for entry in decl.entries:
        terms = entry.value.terms if entry.name.text == "provider" else ()
        if len(terms) == 1 and isinstance(terms[0], n.Call):
            return terms[0].callee.text == "anthropic"
    return False


def check_fallback(cx: Context, entry: n.ConfigEntry) -> None:
    """``fallback: [ModelA, openai("gpt-4o-mini")]``: models tried in order after ``model``."""
    term = _single_term(cx, entry.value, "fallback")
    if term is None:
        return
    if not isinstance(term, n.ArrayExpr) or not term.items:
        cx.report(
            "E2027",
            "`fallback` must be a non-empty list of models",
            term.span,
            help='e.g. `fallback: [Backup, openai("gpt-4o-mini")]`',
        )
        return
    for element in term.items:
        check_model_term(cx, element, "every `fallback` entry must be a model", use="model")


def check_model_term(
    cx: Context, term: n.ConfigTerm | n.Expr | None, message: str, *, use: str
) -> None:
    """One model: the name of a `model` block or an inline provider call.

    ``use`` is ``"model"`` or ``"embedding"``: which options an inline call may take.
    """
    match term:
        case None:
            return
        case n.NameRef(name=name, span=span):
            symbol = cx.lookup_kind(name, span, "model")
            if use == "embedding" and symbol is not None and _is_anthropic(symbol.decl):
                _no_anthropic_embeddings(cx, span)
        case n.Call() if term.callee.text in PROVIDERS or cx.scope.lookup(term.callee.text) is None:
            check_provider_call(cx, term, use=use)
        case _:
            cx.report(
                "E2027",
                message,
                term.span,
                help='name a `model` block, or write `gemini("...")`',
            )


def check_provider_call(cx: Context, call: n.Call, *, use: str | None = None) -> None:
    """``gemini(model, {options})``, ``openai(...)``, ``anthropic(...)``, ``custom(id, url,
    model, {options})``."""
    name = call.callee.text
    arity = PROVIDERS.get(name)
    if arity is None:
        cx.report(
            "E2027",
            f"unknown provider `{name}`",
            call.callee.span,
            help=did_you_mean(name, PROVIDERS) or "providers: gemini, openai, anthropic, custom",
        )
        return
    low, high = arity
    if not low <= len(call.args) <= high:
        shape = "(model, { options })" if low == 1 else "(id, base_url, model, { options })"
        cx.report(
            "E2027",
            f"`{name}` takes {low} or {high} arguments, {len(call.args)} given",
            call.span,
            help=f"`{name}{shape}`",
        )
        return
    strings = [arg for arg in call.args[:low] if _string_value(arg)]
    for arg in call.args[:low]:
        if not _string_value(arg):
            cx.report("E2027", f"the arguments of `{name}` must be non-empty strings", arg.span)
    if name == "custom" and len(strings) == low:
        _custom_provider(cx, call.args[0], call.args[1])
    if name == "anthropic" and use == "embedding":
        _no_anthropic_embeddings(cx, call.callee.span)
    if len(call.args) == high:
        options = call.args[-1]
        if isinstance(options, n.ObjectExpr):
            cx.constant(options, "a provider option")
            if name == "gemini":
                _gemini_options(cx, options, nested=False, use=use)
            elif name == "anthropic":
                _anthropic_options(cx, options)
        else:
            cx.report(
                "E2027",
                "provider options must be an object literal",
                options.span,
                help="e.g. `{ temperature: 0.7 }`",
            )


def _gemini_options(cx: Context, options: n.ObjectExpr, *, nested: bool, use: str | None) -> None:
    """Every key of a ``gemini(...)`` option object is one the Gemini API accepts."""
    for entry in options.entries:
        key = entry.key.text
        problem = option_problem(key, nested=nested, use=use)
        if problem is not None:
            message, valid = problem
            alias = alias_of(key, valid)
            hint = f"did you mean `{alias}`?" if alias else did_you_mean(key, valid)
            listing = "valid options: " + ", ".join(valid)
            cx.report(
                "E2077", message, entry.key.span, help=f"{hint} {listing}" if hint else listing
            )
        elif camel(key) == "generationConfig" and isinstance(entry.value, n.ObjectExpr):
            _gemini_options(cx, entry.value, nested=True, use=use)


def _anthropic_options(cx: Context, options: n.ObjectExpr) -> None:
    """Every key of an ``anthropic(...)`` option object is a Messages API field (or ``cache``)."""
    for entry in options.entries:
        key = entry.key.text
        problem = anthropic_options.option_problem(key)
        if problem is not None:
            message, valid = problem
            hint = did_you_mean(key, valid)
            listing = "valid options: " + ", ".join(valid)
            cx.report(
                "E2079", message, entry.key.span, help=f"{hint} {listing}" if hint else listing
            )
        elif key == "cache":
            why = anthropic_options.cache_problem(_literal(entry.value))
            if why is not None:
                cx.report("E2079", why, entry.value.span, help="e.g. `cache: true`")


def _literal(expr: n.Expr) -> object:
    return expr.value if isinstance(expr, n.Literal) else expr


def _no_anthropic_embeddings(cx: Context, span: Span) -> None:
    cx.report(
        "E2079",
        "Anthropic has no embeddings API: an `embedding:` model cannot be `anthropic(...)`",
        span,
        help='embed with `gemini("gemini-embedding-001")` or `openai("text-embedding-3-small")`',
    )


def _custom_provider(cx: Context, id_arg: n.Expr, url_arg: n.Expr) -> None:
    """A custom id names API-key fields and variables, and maps to one base URL."""
    ident, url = _string_value(id_arg), _string_value(url_arg)
    if not _CUSTOM_ID.fullmatch(ident):
        cx.report(
            "E2027",
            f'custom provider id "{ident}" must be letters, digits, `-` or `_`, starting '
            "with a letter",
            id_arg.span,
            help="it becomes the API key field (`myGroqApiApiKey`) and variable "
            "(`MY_GROQ_API_API_KEY`)",
        )
    if not url.startswith(("http://", "https://")):
        cx.report(
            "E2027",
            f'base URL "{url}" must start with http:// or https://',
            url_arg.span,
            help='e.g. "https://api.groq.com/openai/v1"',
        )
    line, _ = cx.source.line_col(url_arg.span.start)
    first = cx.state.custom_urls.setdefault(ident, (url, f"{cx.scope.path}:{line}"))
    if first[0] != url:
        cx.report(
            "E2076",
            f'custom provider "{ident}" is given two base URLs',
            url_arg.span,
            notes=[Note(f'"{first[0]}" at {first[1]}')],
            help="one id is one endpoint (and one API key); give the other a new id",
        )


# -- prompts -------------------------------------------------------------------------


def check_prompt_decl(cx: Context, decl: n.PromptDecl) -> None:
    """A named prompt's body, in the scope of its own parameters (ctx checked at uses)."""
    params = cx.fields_of(decl.params or (), "parameter")
    env = env_for_prompt(params, None)
    prompt_items(cx, decl.items, env)


def check_persona_decl(cx: Context, decl: n.PersonaDecl) -> None:
    """A persona's body (no parameters; ``ctx`` checked for each agent that lists it)."""
    prompt_items(cx, decl.items, env_for_prompt((), None))


def prompt_items(cx: Context, items: tuple[n.PromptItem, ...], env: Env) -> None:
    """Type the expressions of prompt items (template truthiness, no calls)."""
    for item in items:
        match item:
            case n.PromptText(template=body):
                check_template(cx, body, env)
            case n.PromptExample(user=user, assistant=assistant):
                check_template(cx, user.template, env)
                check_template(cx, assistant.template, env)
            case n.PromptIf(cond=cond, then=then, else_=else_):
                cx.exprs.condition(cond, env)
                prompt_items(cx, then, env)
                prompt_items(cx, else_ or (), env)
            case _:
                assert_never(item)


def check_template(cx: Context, nodes: tuple[n.TNode, ...], env: Env) -> None:
    """Type the expressions of a template tree."""
    for node in nodes:
        match node:
            case n.TExpr(expr=expr):
                cx.exprs.type_of(expr, env)
            case n.TIf(cond=cond, then=then, else_=else_):
                cx.exprs.condition(cond, env)
                check_template(cx, then, env)
                check_template(cx, else_ or (), env)
            case n.TSchema(target="context", span=span) if env.ctx is not None and not (env.ctx):
                cx.report(
                    "E2044",
                    f"`{{{{@schema(context)}}}}` in a prompt of "
                    f"{env.ctx_owner}, which declares no context",
                    span,
                    help="add a `context { ... }` block or remove the schema",
                )
            case n.TText() | n.TSchema():
                pass
            case _:
                assert_never(node)


def check_prompt_use(
    cx: Context, symbol_path: str, decl: n.PromptDecl | n.PersonaDecl, env: Env
) -> None:
    """Check a named prompt's or persona's ``ctx.x`` reads and schemas for one agent."""
    key = (f"{symbol_path}::{decl.name.text}", env.ctx_owner)
    if key in cx.state.prompt_uses:
        return
    cx.state.prompt_uses.add(key)
    with cx.in_file(symbol_path):
        for node in _ctx_nodes(decl.items):
            if isinstance(node, n.CtxRef):
                cx.exprs.type_of(node, env)
            else:
                check_template(cx, (node,), env)


# -- config values -------------------------------------------------------------


def check_max_tool_loops(cx: Context, entry: n.ConfigEntry) -> None:
    term = _single_term(cx, entry.value, "maxToolLoops")
    if term is None:
        return
    value = term.value if isinstance(term, n.Literal) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        cx.report(
            "E2027",
            "`maxToolLoops` must be a whole number of at least 1",
            term.span,
            help="e.g. `maxToolLoops: 10`",
        )


def check_code_mode(cx: Context, entry: n.ConfigEntry) -> None:
    term = _single_term(cx, entry.value, "codeMode")
    if term is None:
        return
    if not (isinstance(term, n.Literal) and isinstance(term.value, bool)):
        cx.report(
            "E2027",
            "`codeMode` must be true or false",
            term.span,
            help="`codeMode: true` offers the model one `execute_code` tool instead of the "
            "agent's tools (it needs the auwgent[code] extra)",
        )


def check_protocol(cx: Context, entry: n.ConfigEntry) -> None:
    term = _single_term(cx, entry.value, "protocol")
    if term is None:
        return
    value = term.string.value if isinstance(term, n.PromptText) else None
    if value not in ("blocks", "native"):
        cx.report("E2027", '`protocol` must be "blocks" or "native"', term.span)


def check_prompt_value(cx: Context, value: n.ConfigValue, env: Env) -> None:
    """``prompt: A + B(ctx.x) + "..." + { ... }``."""
    for term in value.terms:
        match term:
            case n.NameRef(name=name, span=span):
                _prompt_ref(cx, name, span, None, env)
            case n.Call(callee=callee):
                _prompt_ref(cx, callee.text, callee.span, term, env)
            case n.PromptText(template=body):
                check_template(cx, body, env)
            case n.PromptBlock(items=items):
                prompt_items(cx, items, env)
            case _:
                cx.report(
                    "E2027",
                    "a prompt part must be a prompt, a string or a `{ ... }` block",
                    term.span,
                )


def _prompt_ref(cx: Context, name: str, span: Span, call: n.Call | None, env: Env) -> None:
    symbol = cx.lookup_kind(name, span, "prompt")
    if symbol is None:
        for arg in call.args if call else ():
            cx.exprs.type_of(arg, env)
        return
    decl = symbol.decl
    assert isinstance(decl, n.PromptDecl)
    with cx.in_file(symbol.path):
        params = _quiet_params(cx, decl)
    if call is None:
        if decl.params:
            shown = ", ".join(p.name for p in params)
            cx.report(
                "E2040",
                f"prompt `{name}` takes {len(params)} argument"
                f"{'' if len(params) == 1 else 's'}, 0 given",
                span,
                help=f"pass them: `{name}({shown})`",
            )
    elif decl.params is None:
        cx.report(
            "E2040",
            f"prompt `{name}` takes no arguments",
            call.span,
            help=f"write `{name}` without parentheses",
        )
    else:
        arg_types = [cx.exprs.type_of(arg, env) for arg in call.args]
        cx.exprs.check_args(name, "prompt", params, call, arg_types)
    check_prompt_use(cx, symbol.path, decl, env)


def _quiet_params(cx: Context, decl: n.PromptDecl) -> tuple[FieldTy, ...]:
    """The prompt's parameter types without re-reporting (its declaration did)."""
    before = len(cx.state.diagnostics)
    params = cx.fields_of(decl.params or (), "parameter")
    del cx.state.diagnostics[before:]
    return params


_CUSTOM_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def _string_value(expr: n.Expr) -> str:
    """The value of a non-empty string literal, else ``""``."""
    return expr.value if isinstance(expr, n.Literal) and isinstance(expr.value, str) else ""


def _ctx_nodes(items: tuple[n.PromptItem, ...]) -> Iterator[n.CtxRef | n.TSchema]:
    """Every ``ctx.x`` read and ``@schema`` in a prompt body (conditions included)."""
    for item in items:
        match item:
            case n.PromptText(template=body):
                yield from _ctx_in_template(body)
            case n.PromptExample(user=user, assistant=assistant):
                yield from _ctx_in_template(user.template)
                yield from _ctx_in_template(assistant.template)
            case n.PromptIf(cond=cond, then=then, else_=else_):
                yield from _ctx_in_expr(cond)
                yield from _ctx_nodes(then)
                yield from _ctx_nodes(else_ or ())
            case _:
                assert_never(item)


def _ctx_in_template(nodes: tuple[n.TNode, ...]) -> Iterator[n.CtxRef | n.TSchema]:
    for node in nodes:
        match node:
            case n.TExpr(expr=expr):
                yield from _ctx_in_expr(expr)
            case n.TIf(cond=cond, then=then, else_=else_):
                yield from _ctx_in_expr(cond)
                yield from _ctx_in_template(then)
                yield from _ctx_in_template(else_ or ())
            case n.TSchema():
                yield node
            case n.TText():
                pass
            case _:
                assert_never(node)


def _ctx_in_expr(expr: n.Expr) -> Iterator[n.CtxRef]:
    match expr:
        case n.CtxRef():
            yield expr
        case n.Member(object=obj):
            yield from _ctx_in_expr(obj)
        case n.Index(object=obj, index=index):
            yield from _ctx_in_expr(obj)
            yield from _ctx_in_expr(index)
        case n.ArrayExpr(items=items):
            for item in items:
                yield from _ctx_in_expr(item)
        case n.ObjectExpr(entries=entries):
            for entry in entries:
                yield from _ctx_in_expr(entry.value)
        case n.Unary(operand=operand):
            yield from _ctx_in_expr(operand)
        case n.Binary(left=left, right=right):
            yield from _ctx_in_expr(left)
            yield from _ctx_in_expr(right)
        case n.Call(args=args):
            for arg in args:
                yield from _ctx_in_expr(arg)
        case n.Literal() | n.NameRef():
            pass
        case _:
            assert_never(expr)

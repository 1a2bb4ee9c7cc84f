"""Type checking of expressions (workflows, prompt templates, prompt arguments) and workflows.

One ``ExprChecker`` types expressions in an ``Env``: the variables in scope, the context fields
``ctx.x`` may read, and the tools a call may reach. Workflows are checked strictly (conditions
and ``&&`` / ``||`` / ``!`` operands must be boolean); templates use truthiness, as the runtime
renders them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from itertools import chain

from ..._records import record
from .. import nodes as n
from ..diagnostics import Note, did_you_mean, listing
from ..source import Span
from .types import (
    BOOLEAN,
    NULL,
    NUMBER,
    STRING,
    TEXT,
    UNKNOWN,
    Arr,
    FieldTy,
    Lit,
    Obj,
    Prim,
    Ty,
    TypeTable,
    UnionTy,
    assignable,
    display,
    is_boolean,
    is_numeric,
    is_stringy,
    is_unknown,
    missing_fields,
    resolve,
    union_of,
    widen,
)

#: ``report(code, message, span, help=..., notes=...)`` adds an error in the current file.
Report = Callable[..., None]


@record
class ToolSig:
    """What a call needs to know about a tool: its parameters and return type."""

    name: str
    params: tuple[FieldTy, ...]
    returns: Ty


class Env:
    """Names visible to an expression.

    ``scopes`` are block scopes, innermost last. ``ctx`` is ``None`` where ``ctx`` cannot be
    read. ``tools`` is ``None`` where calls are not allowed (prompts). ``not_callable`` names
    things that look callable but are not tools here (workflows, helpers), with a reason.
    """

    # A plain class: `auwgent check` never imports dataclasses (see auwgent/_records.py).
    __slots__ = ("scopes", "ctx", "tools", "strict", "not_callable", "ctx_owner")

    def __init__(
        self,
        scopes: list[dict[str, Ty]],
        ctx: Mapping[str, Ty] | None,
        tools: Mapping[str, ToolSig] | None = None,
        strict: bool = True,
        not_callable: Mapping[str, str] | None = None,
        ctx_owner: str = "this agent",
    ) -> None:
        self.scopes = scopes
        self.ctx = ctx
        self.tools = tools
        self.strict = strict
        self.not_callable: Mapping[str, str] = {} if not_callable is None else not_callable
        self.ctx_owner = ctx_owner

    def lookup(self, name: str) -> Ty | None:
        """The type of variable ``name``, innermost scope first."""
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def names(self) -> Iterator[str]:
        """Every visible variable name (lazily: for did-you-mean, which may not look)."""
        return chain.from_iterable(self.scopes)


class ExprChecker:
    """Types expressions and reports mistakes through ``report``."""

    def __init__(self, report: Report, table: TypeTable) -> None:
        self.report = report
        self.table = table

    # -- expressions ---------------------------------------------------------------------

    def type_of(self, expr: n.Expr, env: Env) -> Ty:
        """The static type of ``expr`` (``UNKNOWN`` after a reported error)."""
        # Called for every expression node: plain isinstance tests, most frequent kinds
        # first, cost less than a `match` of class patterns tried in declaration order.
        if isinstance(expr, n.Literal):
            return _literal_type(expr.value)
        if isinstance(expr, n.NameRef):
            return self._name(expr, env)
        if isinstance(expr, n.Binary):
            return self._binary(expr, env)
        if isinstance(expr, n.Member):
            return self._member(expr, env)
        if isinstance(expr, n.CtxRef):
            return self._ctx(expr, env)
        if isinstance(expr, n.Call):
            return self._call(expr, env)
        if isinstance(expr, n.Index):
            return self._index(expr, env)
        if isinstance(expr, n.ArrayExpr):
            if not expr.items:
                return Arr(UNKNOWN)
            return Arr(union_of([self.type_of(item, env) for item in expr.items]))
        if isinstance(expr, n.ObjectExpr):
            return self._object(expr, env)
        if isinstance(expr, n.Unary):
            return self._unary(expr, env)
        return UNKNOWN  # pragma: no cover - the tests above cover every Expr

    def _name(self, expr: n.NameRef, env: Env) -> Ty:
        found = env.lookup(expr.name)
        if found is not None:
            return found
        if env.tools is not None:
            where = "variable"
        else:
            where = "parameter" if any(env.scopes) else "name"
        hint = did_you_mean(expr.name, env.names())
        if hint is None and env.ctx is not None and expr.name in env.ctx:
            hint = f"to read the context field, write `ctx.{expr.name}`"
        if hint is None and env.tools is None and not any(env.scopes):
            hint = "nothing is named here: use `ctx.x` for context values, or literals"
        code = "E2050" if env.tools is not None else "E2042"
        self.report(code, f"unknown {where} `{expr.name}`", expr.span, help=hint)
        return UNKNOWN

    def _ctx(self, expr: n.CtxRef, env: Env) -> Ty:
        if env.ctx is None:
            return UNKNOWN
        found = env.ctx.get(expr.name.text)
        if found is not None:
            return found
        if not env.ctx:
            hint = f"declare it in a `context {{ {expr.name.text}: ... }}` block"
        else:
            hint = did_you_mean(expr.name.text, env.ctx) or "declared: " + listing(
                env.ctx, "`{}`".format
            )
        self.report(
            "E2043",
            f"`ctx.{expr.name.text}` is not declared in the context of {env.ctx_owner}",
            expr.name.span,
            help=hint,
        )
        return UNKNOWN

    def _member(self, expr: n.Member, env: Env) -> Ty:
        base = self.type_of(expr.object, env)
        return self.field_type(base, expr.name.text, expr.name.span)

    def field_type(self, base: Ty, name: str, span: Span) -> Ty:
        """The type of field ``name`` of ``base``, reporting a missing field."""
        if is_unknown(base):
            return UNKNOWN
        opened = resolve(base, self.table)
        variants = opened.variants if isinstance(opened, UnionTy) else (opened,)
        found: list[Ty] = []
        for variant in variants:
            obj = resolve(variant, self.table)
            if name == "length" and (isinstance(obj, Arr) or is_stringy(obj, self.table)):
                found.append(NUMBER)  # the one built-in property (docs/workflows.md)
                continue
            item = obj.field(name) if isinstance(obj, Obj) else None
            if item is None:
                self._no_field(base, variant, name, span)
                return UNKNOWN
            found.append(item.ty)
        return union_of(found)

    def _no_field(self, base: Ty, variant: Ty, name: str, span: Span) -> None:
        obj = resolve(variant, self.table)
        if isinstance(obj, Obj):
            names = [f.name for f in obj.fields]
            hint = did_you_mean(name, names) or (
                "its fields: " + listing(names, "`{}`".format) if names else None
            )
            self.report("E2056", f"`{display(base)}` has no field `{name}`", span, help=hint)
        else:
            self.report(
                "E2056",
                f"cannot read field `{name}` of a value of type `{display(base)}`",
                span,
                help="only objects have fields (and arrays and strings a `length`)",
            )

    def _index(self, expr: n.Index, env: Env) -> Ty:
        base = self.type_of(expr.object, env)
        index = self.type_of(expr.index, env)
        opened = resolve(base, self.table)
        if is_unknown(opened) or is_unknown(index):
            return UNKNOWN
        if isinstance(opened, Arr):
            if is_numeric(index):
                return opened.item
            self.report(
                "E2057", f"an array index must be a number, not `{display(index)}`", expr.index.span
            )
            return UNKNOWN
        if isinstance(opened, Obj) or _is_object_union(opened, self.table):
            if isinstance(index, Lit):
                return self.field_type(base, index.value, expr.index.span)
            if is_stringy(index, self.table):
                return UNKNOWN
        self.report(
            "E2057",
            f"cannot index a value of type `{display(base)}` with `{display(index)}`",
            expr.span,
            help="index arrays with numbers and objects with field names",
        )
        return UNKNOWN

    def _object(self, expr: n.ObjectExpr, env: Env) -> Ty:
        fields: list[FieldTy] = []
        seen: dict[str, Span] = {}
        for entry in expr.entries:
            ty = self.type_of(entry.value, env)
            if entry.key.text in seen:
                self.report(
                    "E2001",
                    f"field `{entry.key.text}` is written twice in this object",
                    entry.key.span,
                    notes=[Note("first written here", seen[entry.key.text])],
                )
                continue
            seen[entry.key.text] = entry.key.span
            fields.append(FieldTy(entry.key.text, ty))
        return Obj(tuple(fields))

    def _unary(self, expr: n.Unary, env: Env) -> Ty:
        operand = self.type_of(expr.operand, env)
        if expr.op == "-":
            if not is_numeric(operand):
                self._bad_operand("-", operand, expr.operand.span, "a number")
            return NUMBER
        if env.strict and not is_boolean(operand):
            self._bad_operand("!", operand, expr.operand.span, "a boolean")
        return BOOLEAN

    def _bad_operand(self, op: str, ty: Ty, span: Span, want: str) -> None:
        self.report(
            "E2059",
            f"`{op}` needs {want}, found `{display(ty)}`",
            span,
            help=_condition_help(ty) if want == "a boolean" else None,
        )

    def _binary(self, expr: n.Binary, env: Env) -> Ty:
        left = self.type_of(expr.left, env)
        right = self.type_of(expr.right, env)
        op = expr.op
        if op in ("&&", "||"):
            if env.strict:
                for side, ty in ((expr.left, left), (expr.right, right)):
                    if not is_boolean(ty):
                        self._bad_operand(op, ty, side.span, "a boolean")
            return BOOLEAN
        if op in ("==", "!="):
            self._check_overlap(expr, left, right)
            return BOOLEAN
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN if op == "+" else (BOOLEAN if op in ("<", "<=", ">", ">=") else NUMBER)
        return self._arith_or_compare(expr, left, right)

    def _arith_or_compare(self, expr: n.Binary, left: Ty, right: Ty) -> Ty:
        op = expr.op
        numbers = left is NUMBER and right is NUMBER
        if op == "+":
            if numbers:
                return NUMBER
            if (is_stringy(left, self.table) and _is_scalar(right, self.table)) or (
                is_stringy(right, self.table) and _is_scalar(left, self.table)
            ):
                return STRING
        elif op in ("<", "<=", ">", ">="):
            if numbers or (is_stringy(left, self.table) and is_stringy(right, self.table)):
                return BOOLEAN
        elif numbers:
            return NUMBER
        self.report(
            "E2059",
            f"`{op}` cannot be applied to `{display(left)}` and `{display(right)}`",
            expr.op_span,
            help=_operator_help(op),
        )
        return BOOLEAN if op in ("<", "<=", ">", ">=") else UNKNOWN

    def _check_overlap(self, expr: n.Binary, left: Ty, right: Ty) -> None:
        if left is NULL or right is NULL or left is UNKNOWN or right is UNKNOWN:
            return
        if assignable(left, right, self.table) or assignable(right, left, self.table):
            return
        if _overlaps(left, right, self.table):
            return
        verdict = "false" if expr.op == "==" else "true"
        self.report(
            "E2059",
            f"`{display(left)}` and `{display(right)}` never compare equal, so `{expr.op}` is "
            f"always {verdict}",
            expr.op_span,
        )

    # -- calls ---------------------------------------------------------------------------

    def _call(self, expr: n.Call, env: Env) -> Ty:
        arg_types = [self.type_of(arg, env) for arg in expr.args]
        name = expr.callee.text
        if env.tools is None:
            self.report(
                "E2042",
                f"`{name}(...)` cannot be called here",
                expr.span,
                help="tools are called from workflows; prompts only read parameters and `ctx`",
            )
            return UNKNOWN
        sig = env.tools.get(name)
        if sig is None:
            self._unknown_tool(expr.callee, env)
            return UNKNOWN
        self.check_args(sig.name, "tool", sig.params, expr, arg_types)
        return sig.returns

    def _unknown_tool(self, callee: n.Name, env: Env) -> None:
        name = callee.text
        reason = env.not_callable.get(name)
        if reason is not None:
            self.report(
                "E2053", f"`{name}` cannot be called from this workflow: {reason}", callee.span
            )
            return
        tools = env.tools or {}
        hint = did_you_mean(name, tools) or (
            f"declare it in the agent (`tool {name}(...): T`) or inside this workflow to scope it"
        )
        self.report("E2053", f"unknown tool `{name}`", callee.span, help=hint)

    def check_args(
        self,
        target: str,
        kind: str,
        params: tuple[FieldTy, ...],
        call: n.Call,
        arg_types: list[Ty],
    ) -> None:
        """Check positional arguments of ``call`` against ``params`` (declaration order)."""
        required = sum(1 for p in params if not p.optional)
        count = len(call.args)
        if count < required or count > len(params):
            want = str(len(params)) if required == len(params) else f"{required} to {len(params)}"
            plural = "" if want == "1" else "s"
            shown = listing(params, lambda p: f"{p.name}{'?' * p.optional}: {display(p.ty)}")
            self.report(
                "E2054" if kind == "tool" else "E2040",
                f"{kind} `{target}` takes {want} argument{plural}, {count} given",
                call.span,
                help=f"`{target}({shown})`",
            )
        for param, arg, ty in zip(params, call.args, arg_types, strict=False):
            if param.optional and ty is NULL:
                continue  # null stands for "not given" (docs/workflows.md)
            if assignable(ty, param.ty, self.table):
                continue  # (tested here so that the message is built only when reported)
            self.mismatch(
                ty,
                param.ty,
                arg.span,
                code="E2055" if kind == "tool" else "E2041",
                what=f"argument `{param.name}` of `{target}`",
            )

    def expect(
        self, got: Ty, want: Ty, span: Span, *, code: str, what: str, message: str | None = None
    ) -> bool:
        """Report ``code`` unless ``got`` is assignable to ``want``.

        The message reads "<what> expects `want`, found `got`" unless ``message`` (a format
        string with ``{want}`` and ``{got}``) says otherwise.
        """
        if assignable(got, want, self.table):
            return True
        self.mismatch(got, want, span, code=code, what=what, message=message)
        return False

    def mismatch(
        self, got: Ty, want: Ty, span: Span, *, code: str, what: str, message: str | None = None
    ) -> None:
        """Report what ``expect`` reports when ``got`` is not assignable to ``want``."""
        missing = missing_fields(got, want, self.table)
        hint = "missing: " + listing(missing, "`{}`".format) if missing else None
        template = message or what + " expects `{want}`, found `{got}`"
        shown = got if _mentions_literal(want) else widen(got)
        self.report(code, template.format(want=display(want), got=display(shown)), span, help=hint)

    def condition(self, expr: n.Expr, env: Env) -> None:
        """Type a condition; in strict mode it must be boolean."""
        ty = self.type_of(expr, env)
        if env.strict and ty is not BOOLEAN and ty is not UNKNOWN:  # is_boolean, inlined
            self.report(
                "E2058",
                f"a condition must be a boolean, found `{display(ty)}`",
                expr.span,
                help=_condition_help(ty),
            )


# ------------------------------------------------------------------------------------------
# Workflow statements


class WorkflowChecker:
    """Checks one workflow body: scopes, assignments, conditions, returns, reachability."""

    def __init__(self, name: str, exprs: ExprChecker, returns: Ty, report_warning: Report) -> None:
        self.name = name
        self.exprs = exprs
        self.returns = returns
        self.warn = report_warning

    def body(self, stmts: tuple[n.Stmt, ...], env: Env) -> bool:
        """Check ``stmts`` in ``env``'s innermost scope; True if every path returns."""
        returned = False
        warned = False
        for stmt in stmts:
            if returned and not warned:
                warned = True
                self.warn(
                    "W2004",
                    "unreachable statement: the workflow has already returned",
                    stmt.span,
                    help="remove it, or move it before the `return`",
                )
            returned = self._stmt(stmt, env) or returned
        return returned

    def _stmt(self, stmt: n.Stmt, env: Env) -> bool:
        # Plain isinstance tests (the kinds are disjoint) cost less than class patterns.
        if isinstance(stmt, n.LetStmt):
            self._let(stmt, env)
        elif isinstance(stmt, n.ReturnStmt):
            self._return(stmt, env)
            return True
        elif isinstance(stmt, n.IfStmt):
            return self._if(stmt, env)
        elif isinstance(stmt, n.AssignStmt):
            self._assign(stmt, env)
        elif isinstance(stmt, n.ExprStmt):
            expr = stmt.expr
            self.exprs.type_of(expr, env)
            if not isinstance(expr, n.Call):
                self.warn(
                    "W2005",
                    "this expression has no effect",
                    stmt.span,
                    help="only a call is useful on its own; use `let` to keep a value",
                )
        return False

    def _let(self, stmt: n.LetStmt, env: Env) -> None:
        ty = widen(self.exprs.type_of(stmt.value, env))
        if ty is NULL:
            ty = UNKNOWN  # `let x = null` is a placeholder: any later value may be assigned
        scope = env.scopes[-1]
        name = stmt.name.text
        if name in scope:
            self.exprs.report(
                "E2051",
                f"`{name}` is already declared in this block",
                stmt.name.span,
                help=f"assign to it without `let` (`{name} = ...`), or pick another name",
            )
            return
        scope[name] = ty

    def _assign(self, stmt: n.AssignStmt, env: Env) -> None:
        value = self.exprs.type_of(stmt.value, env)
        name = stmt.name.text
        declared = env.lookup(name)
        if declared is None:
            close = did_you_mean(name, env.names())
            self.exprs.report(
                "E2052",
                f"cannot assign to `{name}`: it is not declared",
                stmt.name.span,
                help=close or f"declare it first with `let {name} = ...`",
            )
            return
        if assignable(value, declared, self.exprs.table):
            return  # (tested here so that the message is built only when reported)
        self.exprs.mismatch(
            value,
            declared,
            stmt.value.span,
            code="E2062",
            what=f"`{name}`",
            message=f"`{name}` holds `{{want}}`; it cannot be given `{{got}}`",
        )

    def _if(self, stmt: n.IfStmt, env: Env) -> bool:
        all_return = True
        for branch in stmt.branches:
            self.exprs.condition(branch.cond, env)
            env.scopes.append({})
            all_return = self.body(branch.body, env) and all_return
            env.scopes.pop()
        if stmt.else_body is None:
            return False
        env.scopes.append({})
        else_returns = self.body(stmt.else_body, env)
        env.scopes.pop()
        return all_return and else_returns

    def _return(self, stmt: n.ReturnStmt, env: Env) -> None:
        if stmt.value is None:
            self.exprs.report(
                "E2060",
                f"`return` needs a value of type `{display(self.returns)}`",
                stmt.span,
            )
            return
        got = self.exprs.type_of(stmt.value, env)
        if assignable(got, self.returns, self.exprs.table):
            return  # (tested here so that the message is built only when reported)
        self.exprs.mismatch(
            got,
            self.returns,
            stmt.value.span,
            code="E2060",
            what="the return value",
            message=f"`{self.name}` returns `{{want}}`, but this is `{{got}}`",
        )


# ------------------------------------------------------------------------------------------
# Helpers


def _literal_type(value: str | int | float | bool | None) -> Ty:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int | float):
        return NUMBER
    if value is None:
        return NULL
    return Lit(value)


def _mentions_literal(ty: Ty) -> bool:
    """True when a literal type is part of ``ty`` (then literals are shown as written)."""
    if isinstance(ty, Lit):
        return True
    if isinstance(ty, UnionTy):
        return any(_mentions_literal(v) for v in ty.variants)
    if isinstance(ty, Arr):
        return _mentions_literal(ty.item)
    return False


def _is_scalar(ty: Ty, table: TypeTable) -> bool:
    return ty is NUMBER or ty is BOOLEAN or is_stringy(ty, table)  # (unknown is stringy)


def _is_object_union(ty: Ty, table: TypeTable) -> bool:
    return isinstance(ty, UnionTy) and all(isinstance(resolve(v, table), Obj) for v in ty.variants)


def _overlaps(left: Ty, right: Ty, table: TypeTable) -> bool:
    """True when some value could have both types (for ``==`` between unions)."""
    lefts = left.variants if isinstance(left, UnionTy) else (left,)
    rights = right.variants if isinstance(right, UnionTy) else (right,)
    return any(assignable(a, b, table) or assignable(b, a, table) for a in lefts for b in rights)


def _operator_help(op: str) -> str | None:
    if op == "+":
        return "`+` adds two numbers, or joins text when one side is a string"
    if op in ("<", "<=", ">", ">="):
        return "compare two numbers or two strings"
    return "arithmetic needs two numbers"


def _condition_help(ty: Ty) -> str | None:
    if ty in (STRING, TEXT) or isinstance(ty, Lit):
        return 'compare explicitly, e.g. `x != ""`'
    if ty == NUMBER:
        return "compare explicitly, e.g. `x > 0`"
    if isinstance(ty, Prim):
        return None
    return "compare a field or test a boolean"

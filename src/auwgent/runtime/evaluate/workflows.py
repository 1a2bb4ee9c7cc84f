"""The workflow interpreter: runs a workflow's IR body (``docs/ir.md``, "Workflow statements").

The interpreter is pure apart from the ``call_tool`` callback: every tool call is handed to the
engine, which validates the arguments, emits intents, enforces scoped tools and returns the
tool's result as a plain value. The interpreter never parses a result: if a tool declared to
return an object hands back a JSON string, the engine decodes it before returning (see
``docs/workflows.md``).

Any failure while running (a tool that raises, reading a field of ``null``, an index out of
range, a type mismatch) becomes a :class:`~auwgent.errors.WorkflowError` naming the workflow's
``.agent`` file and the line of the statement (or call) that failed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from auwgent._records import field, record
from auwgent.errors import WorkflowError, describe_error
from auwgent.runtime.evaluate.expr import (
    ExprError,
    IRExpr,
    steps,
    truthy,
)

# The IR's types (auwgent.ir.model) for the type checker; plain dicts at run time.
if TYPE_CHECKING:
    from typing_extensions import Never

    from auwgent.ir.model import Block as IRBlock
    from auwgent.ir.model import CallExpr, IfStmt
    from auwgent.ir.model import Stmt as IRStmt
    from auwgent.ir.model import Workflow as IRWorkflow
else:
    IRWorkflow = IRStmt = CallExpr = IfStmt = Mapping[str, Any]
    IRBlock = list[IRStmt]
CallTool = Callable[[str, dict[str, Any], tuple[int, int]], Awaitable[Any]]

__all__ = ["CallTool", "IRWorkflow", "run_workflow"]


@record(frozen=False)
class _Scope:
    """One block's variables; lookups and assignments walk outwards like JavaScript's ``let``."""

    names: dict[str, Any] = field(default_factory=dict)
    parent: _Scope | None = None

    def __contains__(self, name: object) -> bool:
        return self.find(str(name)) is not None

    def __getitem__(self, name: str) -> Any:
        owner = self.find(name)
        if owner is None:
            raise KeyError(name)
        return owner.names[name]

    def find(self, name: str) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None and name not in scope.names:
            scope = scope.parent
        return scope


@record
class _Returned:
    value: Any


@record(frozen=False)
class _Run:
    """What one workflow run needs while it walks the body."""

    ctx: Mapping[str, Any]
    call_tool: CallTool
    source: str | None
    line: int | None = None  # the statement being run, for error messages


async def run_workflow(
    workflow: IRWorkflow,
    args: Mapping[str, Any],
    *,
    ctx: Mapping[str, Any],
    call_tool: CallTool,
) -> Any:
    """Run ``workflow`` with ``args`` (by parameter name) and return what it returns.

    ``call_tool(name, args_by_name, (line, col))`` runs one tool call and returns its result.
    A body that ends without ``return`` yields ``None``. Raises ``WorkflowError``.
    """
    run = _Run(ctx=ctx, call_tool=call_tool, source=workflow.get("source"))
    run.line = _line(workflow.get("loc"))
    scope = _Scope(names=_bind_params(workflow, args, run))
    outcome = await _block(workflow["body"], _Scope(parent=scope), run)
    return outcome.value if outcome is not None else None


def _bind_params(workflow: IRWorkflow, args: Mapping[str, Any], run: _Run) -> dict[str, Any]:
    declared = [p["name"] for p in workflow.get("params", [])]
    unknown = [name for name in args if name not in declared]
    if unknown:
        raise _error(run, f"workflow {workflow['name']!r} has no parameter {unknown[0]!r}")
    names: dict[str, Any] = {}
    for param in workflow.get("params", []):
        if param["name"] in args:
            names[param["name"]] = args[param["name"]]
        elif param.get("optional"):
            names[param["name"]] = None  # an optional parameter left out reads as null
        else:
            raise _error(run, f"workflow {workflow['name']!r} needs argument {param['name']!r}")
    return names


async def _block(body: Sequence[IRStmt], scope: _Scope, run: _Run) -> _Returned | None:
    for stmt in body:
        run.line = _line(stmt.get("loc"))
        try:
            outcome = await _statement(stmt, scope, run)
        except ExprError as exc:
            line = exc.loc[0] if exc.loc else _line(stmt.get("loc"))
            raise WorkflowError(exc.message, file=run.source, line=line) from exc
        if outcome is not None:
            return outcome
    return None


async def _statement(stmt: IRStmt, scope: _Scope, run: _Run) -> _Returned | None:
    if stmt["s"] == "let":
        if stmt["name"] in scope.names:
            raise ExprError(f"{stmt['name']!r} is already declared in this block")
        scope.names[stmt["name"]] = await _eval(stmt["value"], scope, run)
    elif stmt["s"] == "assign":
        owner = scope.find(stmt["name"])
        if owner is None:
            raise ExprError(f"cannot assign to undeclared variable {stmt['name']!r}")
        owner.names[stmt["name"]] = await _eval(stmt["value"], scope, run)
    elif stmt["s"] == "if":
        return await _if(stmt, scope, run)
    elif stmt["s"] == "return":
        value = stmt.get("value")
        return _Returned(None if value is None else await _eval(value, scope, run))
    elif stmt["s"] == "expr":
        await _eval(stmt["value"], scope, run)
    else:
        _unknown(stmt)
    return None


def _unknown(stmt: Never) -> NoReturn:
    """Every kind of statement is handled (the checker proves it); an IR edited by hand to hold
    another is refused, naming it."""
    raise ExprError(f"unknown statement kind {stmt['s']!r}")


async def _if(stmt: IfStmt, scope: _Scope, run: _Run) -> _Returned | None:
    for branch in stmt["branches"]:
        if truthy(await _eval(branch["cond"], scope, run)):
            return await _block(branch["body"], _Scope(parent=scope), run)
    otherwise = stmt.get("else")
    if otherwise is not None:
        return await _block(otherwise, _Scope(parent=scope), run)
    return None


async def _eval(expr: IRExpr, scope: _Scope, run: _Run) -> Any:
    """Strict evaluation by :func:`auwgent.runtime.evaluate.expr.steps`, running its tool calls."""
    evaluation = steps(expr, scope, run.ctx, True)
    try:
        request = next(evaluation)
        while True:
            call, args = request
            request = evaluation.send(await _call(call, args, run))
    except StopIteration as done:
        return done.value


async def _call(expr: CallExpr, args: dict[str, Any], run: _Run) -> Any:
    loc = expr.get("loc") or [run.line or 0, 0]
    where = (int(loc[0]), int(loc[1]))
    try:
        return await run.call_tool(expr["tool"], args, where)
    except WorkflowError:
        raise  # a nested workflow already named its own file and line
    except Exception as exc:
        raise WorkflowError(
            f"tool {expr['tool']!r} failed: {describe_error(exc)}",
            file=run.source,
            line=where[0],
        ) from exc


def _error(run: _Run, message: str) -> WorkflowError:
    return WorkflowError(message, file=run.source, line=run.line)


def _line(loc: Any) -> int | None:
    return int(loc[0]) if loc else None

// The workflow interpreter: runs a workflow's IR body (docs/ir.md, "Workflow statements").
// Pure apart from `callTool`, through which the engine runs every tool call (checks,
// intents, scoping). Failures become WorkflowError naming the .agent file and line.

import { AuwgentError, WorkflowError } from "./errors.js";
import { applyBinary, applyUnary, ctxGet, ExprError, indexOf, memberOf, truthy, unknownKind, type IRExpr } from "./expr.js";
import type { Block, Loc, Stmt, Workflow } from "./ir.js";

export type CallTool = (name: string, args: Record<string, any>, loc: [number, number]) => Promise<any>;

class Scope {
  names = new Map<string, any>();
  constructor(public parent: Scope | null = null) {}
  find(name: string): Scope | null {
    let s: Scope | null = this;
    while (s !== null && !s.names.has(name)) s = s.parent;
    return s;
  }
}

interface RunState {
  ctx: Record<string, any>;
  callTool: CallTool;
  source: string | null;
  line: number | null;
}

const RETURNED = Symbol("returned");
type Returned = { [RETURNED]: true; value: any };

export function describeError(error: unknown): string {
  if (error instanceof AuwgentError) return error.message;
  if (error instanceof Error) return error.message ? `${error.name}: ${error.message}` : error.name;
  return String(error);
}

export async function runWorkflow(workflow: Workflow, args: Record<string, any>, ctx: Record<string, any>, callTool: CallTool): Promise<any> {
  const run: RunState = { ctx, callTool, source: workflow.source ?? null, line: line(workflow.loc) };
  const scope = new Scope();
  const declared = (workflow.params ?? []).map((p) => p.name);
  const unknown = Object.keys(args).filter((n) => !declared.includes(n));
  if (unknown.length) throw new WorkflowError(`workflow '${workflow.name}' has no parameter '${unknown[0]}'`, run.source, run.line);
  for (const p of workflow.params ?? []) {
    if (p.name in args) scope.names.set(p.name, args[p.name]);
    else if (p.optional) scope.names.set(p.name, null);
    else throw new WorkflowError(`workflow '${workflow.name}' needs argument '${p.name}'`, run.source, run.line);
  }
  const outcome = await block(workflow.body, new Scope(scope), run);
  return outcome ? outcome.value : null;
}

async function block(body: Block, scope: Scope, run: RunState): Promise<Returned | null> {
  for (const stmt of body) {
    run.line = line(stmt.loc);
    let outcome: Returned | null;
    try {
      outcome = await statement(stmt, scope, run);
    } catch (error) {
      if (error instanceof ExprError) throw new WorkflowError(error.message, run.source, error.loc ? error.loc[0] : line(stmt.loc));
      throw error;
    }
    if (outcome) return outcome;
  }
  return null;
}

async function statement(stmt: Stmt, scope: Scope, run: RunState): Promise<Returned | null> {
  switch (stmt.s) {
    case "let":
      if (scope.names.has(stmt.name)) throw new ExprError(`'${stmt.name}' is already declared in this block`);
      scope.names.set(stmt.name, await ev(stmt.value, scope, run));
      return null;
    case "assign": {
      const owner = scope.find(stmt.name);
      if (owner === null) throw new ExprError(`cannot assign to undeclared variable '${stmt.name}'`);
      owner.names.set(stmt.name, await ev(stmt.value, scope, run));
      return null;
    }
    case "if":
      for (const branch of stmt.branches) if (truthy(await ev(branch.cond, scope, run))) return block(branch.body, new Scope(scope), run);
      return stmt.else ? block(stmt.else, new Scope(scope), run) : null;
    case "return":
      return { [RETURNED]: true, value: stmt.value == null ? null : await ev(stmt.value, scope, run) };
    case "expr":
      await ev(stmt.value, scope, run);
      return null;
  }
  return unknownKind("statement", stmt, "s");
}

async function ev(expr: IRExpr, scope: Scope, run: RunState): Promise<any> {
  switch (expr.e) {
    case "lit":
      return expr.value;
    case "name": {
      const owner = scope.find(expr.name);
      if (owner === null) throw new ExprError(`unknown variable '${expr.name}'`);
      return owner.names.get(expr.name);
    }
    case "ctx":
      return ctxGet(run.ctx, expr.name);
    case "member":
      return memberOf(await ev(expr.object, scope, run), expr.name, true);
    case "index": {
      const target = await ev(expr.object, scope, run);
      return indexOf(target, await ev(expr.index, scope, run), true);
    }
    case "array": {
      const out = [];
      for (const item of expr.items) out.push(await ev(item, scope, run));
      return out;
    }
    case "object": {
      const out: Record<string, any> = {};
      for (const f of expr.fields) out[f.name] = await ev(f.value, scope, run);
      return out;
    }
    case "unary":
      return applyUnary(expr.op, await ev(expr.operand, scope, run), true);
    case "binary": {
      const left = await ev(expr.left, scope, run);
      if (expr.op === "&&" && !truthy(left)) return false;
      if (expr.op === "||" && truthy(left)) return true;
      return applyBinary(expr.op, left, await ev(expr.right, scope, run), true);
    }
    case "call": {
      const args: Record<string, any> = {};
      for (const a of expr.args) args[a.name] = await ev(a.value, scope, run);
      const loc: [number, number] = expr.loc ? [expr.loc[0], expr.loc[1]] : [run.line ?? 0, 0];
      try {
        return await run.callTool(expr.tool, args, loc);
      } catch (error) {
        if (error instanceof WorkflowError) throw error;
        throw new WorkflowError(`tool '${expr.tool}' failed: ${describeError(error)}`, run.source, loc[0]);
      }
    }
  }
  return unknownKind("expression", expr, "e");
}

function line(loc: Loc | null | undefined): number | null {
  return loc ? Number(loc[0]) : null;
}

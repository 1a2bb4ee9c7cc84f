// IR expressions (docs/ir.md, "Expressions") over plain JSON values.
// strict (workflows): a mistake raises ExprError; lenient (templates): it yields null.

import type { Expr } from "./ir.js";
import { formatNumber, isNumber, isObject } from "./schema.js";

export type IRExpr = Expr;

export class ExprError extends Error {
  constructor(
    message: string,
    public loc: [number, number] | null = null,
  ) {
    super(message);
    this.name = "ExprError";
  }
}

export function evaluate(expr: IRExpr, scope: Record<string, any>, ctx: Record<string, any>, strict: boolean): any {
  switch (expr.e) {
    case "lit":
      return expr.value;
    case "name":
      if (Object.prototype.hasOwnProperty.call(scope, expr.name)) return scope[expr.name];
      if (strict) throw new ExprError(`unknown variable '${expr.name}'`);
      return null;
    case "ctx":
      return ctxGet(ctx, expr.name);
    case "member":
      return memberOf(evaluate(expr.object, scope, ctx, strict), expr.name, strict);
    case "index":
      return indexOf(evaluate(expr.object, scope, ctx, strict), evaluate(expr.index, scope, ctx, strict), strict);
    case "array":
      return expr.items.map((item) => evaluate(item, scope, ctx, strict));
    case "object": {
      const out: Record<string, any> = {};
      for (const f of expr.fields) out[f.name] = evaluate(f.value, scope, ctx, strict);
      return out;
    }
    case "unary":
      return applyUnary(expr.op, evaluate(expr.operand, scope, ctx, strict), strict);
    case "binary": {
      const left = evaluate(expr.left, scope, ctx, strict);
      if (expr.op === "&&" && !truthy(left)) return false;
      if (expr.op === "||" && truthy(left)) return true;
      return applyBinary(expr.op, left, evaluate(expr.right, scope, ctx, strict), strict);
    }
    case "call":
      throw new ExprError(`tool call ${expr.tool}(...) is only allowed in workflows`);
  }
  return unknownKind("expression", expr, "e");
}

/** Every kind of a closed IR union is handled (the compiler checks it: `node` is `never`); an
 * IR edited by hand to hold another kind is refused, naming it. */
export function unknownKind(what: string, node: never, tag: string): never {
  throw new ExprError(`unknown ${what} kind '${(node as Record<string, unknown>)[tag]}'`);
}

export function ctxGet(ctx: Record<string, any>, name: string): any {
  return Object.prototype.hasOwnProperty.call(ctx, name) ? (ctx[name] ?? null) : null;
}

function fail(strict: boolean, message: string): null {
  if (strict) throw new ExprError(message);
  return null;
}

export function memberOf(target: any, name: string, strict: boolean): any {
  if (isObject(target)) {
    if (Object.prototype.hasOwnProperty.call(target, name)) return target[name];
    return fail(strict, `no field '${name}' in object ${fieldsHint(target)}`);
  }
  if (name === "length" && (typeof target === "string" || Array.isArray(target)))
    return typeof target === "string" ? [...target].length : target.length;
  if (target === null || target === undefined) return fail(strict, `cannot read field '${name}' of null`);
  return fail(strict, `cannot read field '${name}' of ${shown(target)}`);
}

export function indexOf(target: any, index: any, strict: boolean): any {
  if (isObject(target)) {
    if (typeof index === "string") return memberOf(target, index, strict);
    return fail(strict, `object index must be a string, got ${shown(index)}`);
  }
  if (typeof target === "string" || Array.isArray(target)) {
    const items = typeof target === "string" ? [...target] : target;
    if (!isNumber(index) || index !== Math.trunc(index))
      return fail(strict, `${kindOf(target)} index must be a whole number, got ${short(index)}`);
    if (index >= 0 && index < items.length) return items[index];
    return fail(strict, `index ${index} is out of range (${kindOf(target)} of length ${items.length})`);
  }
  if (target === null || target === undefined) return fail(strict, `cannot index null with ${short(index)}`);
  return fail(strict, `cannot index ${shown(target)}`);
}

export function applyUnary(op: string, value: any, strict: boolean): any {
  if (op === "!") return !truthy(value);
  if (op === "-") {
    if (isNumber(value)) return value === 0 ? 0 : -value;
    return fail(strict, `cannot negate ${shown(value)}`);
  }
  throw new ExprError(`unknown unary operator '${op}'`);
}

const VERBS: Record<string, string> = {
  "+": "add",
  "-": "subtract",
  "*": "multiply",
  "/": "divide",
  "%": "take the remainder of",
};

export function applyBinary(op: string, left: any, right: any, strict: boolean): any {
  if (op === "&&") return truthy(left) && truthy(right);
  if (op === "||") return truthy(left) || truthy(right);
  if (op === "==") return jsonEqual(left, right);
  if (op === "!=") return !jsonEqual(left, right);
  if (op === "<" || op === "<=" || op === ">" || op === ">=") {
    const same = (isNumber(left) && isNumber(right)) || (typeof left === "string" && typeof right === "string");
    if (!same) {
      if (strict) throw new ExprError(`cannot compare ${shown(left)} ${op} ${shown(right)}`);
      return false;
    }
    if (typeof left === "string") {
      // Python compares strings by code point; so does this.
      const c = compareCodePoints(left, right as string);
      return op === "<" ? c < 0 : op === "<=" ? c <= 0 : op === ">" ? c > 0 : c >= 0;
    }
    const [a, b] = [left as number, right as number];
    return op === "<" ? a < b : op === "<=" ? a <= b : op === ">" ? a > b : a >= b;
  }
  if (op === "+" && (typeof left === "string" || typeof right === "string")) return renderValue(left) + renderValue(right);
  if (op in VERBS) {
    if (!(isNumber(left) && isNumber(right))) return fail(strict, `cannot ${VERBS[op]} ${shown(left)} and ${shown(right)}`);
    if ((op === "/" || op === "%") && right === 0) return fail(strict, "division by zero");
    let result: number;
    if (op === "+") result = left + right;
    else if (op === "-") result = left - right;
    else if (op === "*") result = left * right;
    else if (op === "/") result = left / right;
    else result = left % right;
    if (!Number.isFinite(result)) return fail(strict, `the result of ${short(left)} ${op} ${short(right)} is too large`);
    return result === 0 ? 0 : result;
  }
  throw new ExprError(`unknown operator '${op}'`);
}

function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

export function truthy(value: any): boolean {
  if (value === null || value === undefined || value === false) return false;
  if (typeof value === "number") return value !== 0;
  if (typeof value === "string") return value.length > 0;
  if (Array.isArray(value)) return value.length > 0;
  if (isObject(value)) return Object.keys(value).length > 0;
  return true;
}

export function jsonEqual(left: any, right: any): boolean {
  if (left === undefined) left = null;
  if (right === undefined) right = null;
  if (Array.isArray(left) && Array.isArray(right))
    return left.length === right.length && left.every((v, i) => jsonEqual(v, right[i]));
  if (isObject(left) && isObject(right)) {
    const a = Object.keys(left);
    const b = Object.keys(right);
    return a.length === b.length && a.every((k) => Object.prototype.hasOwnProperty.call(right, k) && jsonEqual(left[k], right[k]));
  }
  return left === right;
}

/** How a value reads in a prompt or a concatenation: strings as is, null empty, JSON else. */
export function renderValue(value: any): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  return compactJson(value);
}

export function compactJson(value: any): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return Number.isFinite(value) ? formatNumber(value) : "null";
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(compactJson).join(",") + "]";
  if (isObject(value))
    return "{" + Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${compactJson(v)}`).join(",") + "}";
  return JSON.stringify(String(value));
}

export function kindOf(value: any): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return "number";
  if (typeof value === "string") return "string";
  if (Array.isArray(value)) return "array";
  if (isObject(value)) return "object";
  return typeof value;
}

function short(value: any): string {
  const text = compactJson(value);
  return text.length <= 40 ? text : text.slice(0, 37) + "...";
}

function fieldsHint(target: Record<string, any>): string {
  const names = Object.keys(target).slice(0, 8).join(", ");
  return names ? `(fields: ${names})` : "(no fields)";
}

function shown(value: any): string {
  return value === null || value === undefined ? "null" : `${kindOf(value)} ${short(value)}`;
}

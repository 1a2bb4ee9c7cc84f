// Reading untrusted provider JSON: a response of the wrong shape (a string where the API sends
// a list, an object as message text, a non-integer index) is a ProviderError naming the
// provider and the field, never a TypeError from deep inside an adapter (as the Python
// runtime's providers/shape.py).

import { createHash } from "node:crypto";
import { ProviderError } from "../errors.js";
import { pyJson } from "../values.js";

// Ids made up for calls that came without one start with this (as in the Python runtime).
export const MADE_ID_PREFIX = "auwgent_call_";

/** Python's json.dumps(value, sort_keys=True): the text a request digest is taken of. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return "[" + value.map(sortedJson).join(", ") + "]";
  if (value !== null && typeof value === "object")
    return "{" + Object.keys(value).sort().map((k) => `${JSON.stringify(k)}: ${sortedJson((value as Record<string, unknown>)[k])}`).join(", ") + "}";
  return pyJson(value);
}

/**
 * Made-up ids for the calls of one response that came without one. An id depends only on the
 * request (whose history grows every round), the response's own id and the call's position,
 * so a response gives the same ids however it was chunked and two rounds of one conversation
 * never share one. The request's digest is taken on first use only.
 */
export class MadeIds {
  responseId = "";
  private digest: string | null = null;
  constructor(private body: Record<string, any>) {}

  id(index: number): string {
    this.digest ??= createHash("sha256").update(sortedJson(this.body)).digest("hex");
    return MADE_ID_PREFIX + createHash("sha256").update(`${this.digest}|${this.responseId}|${index}`).digest("hex").slice(0, 24);
  }
}

export type Kind = "object" | "list" | "string" | "integer" | "boolean";

const NAMES: Record<Kind, string> = { object: "an object", list: "a list", string: "a string", integer: "an integer", boolean: "a boolean" };

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "string") return "a string";
  if (typeof value === "boolean") return "a boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a number";
  return typeof value === "object" ? "an object" : typeof value;
}

function is(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    case "list":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "integer":
      return Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
  }
}

/**
 * `value` when it is of one of `kinds` (or absent / null and `optional`), else the error. The
 * field's path is `where + at`, joined only for the error (this runs per event).
 */
export function field(provider: string, where: string, value: any, kinds: Kind | Kind[], optional = true, at = ""): any {
  if (value == null && optional) return null;
  if (typeof kinds === "string" ? is(value, kinds) : kinds.some((kind) => is(value, kind))) return value;
  const list = typeof kinds === "string" ? [kinds] : kinds;
  const expected = list.map((k) => NAMES[k]).join(" or ");
  throw new ProviderError(provider, `unexpected response shape: ${where}${at} is ${kindOf(value)}, expected ${expected}`);
}

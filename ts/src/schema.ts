// Validation, coercion and description of values against IR types (docs/ir.md, "Types").
// Pure functions over the plain IR dicts; the rules match the Python runtime's schema module
// and are pinned by the conformance vectors in conformance/schema.json.

import type { Field, ObjectType, Type } from "./ir.js";

export type IRType = Type;
export type IRField = Field;
export type Types = Record<string, IRType>;

const NUMBER_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const INT_RE = /^[+-]?\d+$/;
const TRUE_WORDS = new Set(["true", "yes", "1"]);
const FALSE_WORDS = new Set(["false", "no", "0"]);

export function isObject(value: unknown): value is Record<string, any> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function isNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

export function resolve(type: IRType, types: Types): IRType {
  const seen = new Set<string>();
  while (type.kind === "ref") {
    const name = type.name as string;
    if (seen.has(name)) throw new Error(`type '${name}' refers to itself`);
    seen.add(name);
    if (!(name in types)) throw new Error(`unknown type '${name}'`);
    type = types[name]!;
  }
  return type;
}

export function fieldMap(type: IRType, types: Types): Map<string, IRField> {
  const resolved = resolve(type, types);
  const out = new Map<string, IRField>();
  if (resolved.kind !== "object") return out;
  for (const f of resolved.fields as IRField[]) out.set(f.name, f);
  return out;
}

export function referencedTypes(type: IRType, types: Types): string[] {
  const found: string[] = [];
  const walk = (t: IRType): void => {
    if (t.kind === "ref") {
      if (!found.includes(t.name)) {
        found.push(t.name);
        if (t.name in types) walk(types[t.name]!);
      }
    } else if (t.kind === "array") walk(t.items);
    else if (t.kind === "object") for (const f of t.fields as IRField[]) walk(f.type);
    else if (t.kind === "union") for (const v of t.variants as IRType[]) walk(v);
  };
  walk(type);
  return found;
}

// ---------------------------------------------------------------------------------------------
// Validation

export function validate(value: unknown, type: IRType, types: Types, path = "$"): string[] {
  const kind = type.kind;
  if (kind === "text" || kind === "string")
    return typeof value === "string" ? [] : [mismatch(path, "string", value)];
  if (kind === "number") return isNumber(value) ? [] : [mismatch(path, "number", value)];
  if (kind === "boolean") return typeof value === "boolean" ? [] : [mismatch(path, "boolean", value)];
  if (kind === "literal")
    return value === type.value ? [] : [mismatch(path, JSON.stringify(type.value), value)];
  if (kind === "ref") {
    if (!(type.name in types)) return [`${path}: unknown type '${type.name}'`];
    return validate(value, types[type.name]!, types, path);
  }
  if (kind === "array") {
    if (!Array.isArray(value)) return [mismatch(path, describe(type, types), value)];
    const errors: string[] = [];
    value.forEach((item, i) => errors.push(...validate(item, type.items, types, `${path}[${i}]`)));
    return errors;
  }
  if (kind === "object") return validateObject(value, type, types, path);
  if (kind === "union") {
    let best: string[] | null = null;
    for (const variant of type.variants as IRType[]) {
      const errors = validate(value, variant, types, path);
      if (errors.length === 0) return [];
      if (best === null || errors.length < best.length) best = errors;
    }
    const head = mismatch(path, describe(type, types), value);
    if (isObject(value) && best && best.length) return [head, ...best];
    return [head];
  }
  return [`${path}: unknown type kind '${kind}'`];
}

function validateObject(value: unknown, type: ObjectType, types: Types, path: string): string[] {
  if (!isObject(value)) return [mismatch(path, "object", value)];
  const errors: string[] = [];
  const declared = new Map<string, IRField>();
  for (const f of type.fields) declared.set(f.name, f);
  for (const [name, field] of declared) {
    const sub = join(path, name);
    if (!(name in value)) {
      if (!field.optional) errors.push(`${sub}: missing required field (${describe(field.type, types)})`);
      continue;
    }
    errors.push(...validate(value[name], field.type, types, sub));
  }
  for (const key of Object.keys(value)) {
    if (!declared.has(key)) {
      const allowed = [...declared.keys()].join(", ") || "none";
      errors.push(`${join(path, key)}: unexpected field (allowed: ${allowed})`);
    }
  }
  return errors;
}

function join(path: string, name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`;
}

function mismatch(path: string, expected: string, value: unknown): string {
  return `${path}: expected ${expected}, got ${given(value)}`;
}

export function given(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return `boolean ${value ? "true" : "false"}`;
  if (typeof value === "number") return `number ${formatNumber(value)}`;
  if (typeof value === "string") {
    const shown = [...value].length <= 40 ? value : [...value].slice(0, 37).join("") + "...";
    return `string ${JSON.stringify(shown)}`;
  }
  if (Array.isArray(value)) return "array";
  if (isObject(value)) return "object";
  return typeof value;
}

// ---------------------------------------------------------------------------------------------
// Coercion (the documented lenient rule; the result is meant to be validated)

export function coerce(value: unknown, type: IRType, types: Types): any {
  const kind = type.kind;
  if (kind === "ref") return type.name in types ? coerce(value, types[type.name]!, types) : value;
  if (kind === "number") return toNumber(value);
  if (kind === "boolean") return toBoolean(value);
  if (kind === "string" || kind === "text") return toStringValue(value);
  if (kind === "literal") {
    const text = toStringValue(value);
    return text === type.value ? text : value;
  }
  if (kind === "array" && Array.isArray(value)) return value.map((item) => coerce(item, type.items, types));
  if (kind === "object" && isObject(value)) {
    const declared = new Map<string, IRField>();
    for (const f of type.fields) declared.set(f.name, f);
    const out: Record<string, any> = {};
    for (const [key, item] of Object.entries(value)) {
      const field = declared.get(key);
      if (field === undefined) out[key] = item;
      else if ((item === null || item === undefined) && field.optional) continue;
      else out[key] = coerce(item, field.type, types);
    }
    return out;
  }
  if (kind === "union") {
    const variants = type.variants as IRType[];
    if (variants.some((v) => validate(value, v, types).length === 0)) return value;
    for (const variant of variants) {
      const candidate = coerce(value, variant, types);
      if (validate(candidate, variant, types).length === 0) return candidate;
    }
    return value;
  }
  return value;
}

function toNumber(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const text = value.trim();
  if (INT_RE.test(text)) return Number(text);
  if (NUMBER_RE.test(text)) {
    const n = Number(text);
    return Number.isFinite(n) ? n : value;
  }
  return value;
}

function toBoolean(value: unknown): unknown {
  if (typeof value === "string") {
    const word = value.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
  } else if (value === 0 || value === 1) return value === 1;
  return value;
}

function toStringValue(value: unknown): unknown {
  if (typeof value === "boolean") return value ? "true" : "false";
  if (isNumber(value)) return formatNumber(value);
  return value;
}

/** A number in its shortest form, as JavaScript's String(n) writes it. */
export function formatNumber(value: number): string {
  return String(value);
}

// ---------------------------------------------------------------------------------------------
// JSON Schema

export function toJsonSchema(type: IRType, types: Types): Record<string, any> {
  const defs: Record<string, any> = {};
  let schema = jsonSchema(type, types, [], defs);
  if (Object.keys(defs).length) {
    const sorted: Record<string, any> = {};
    for (const k of Object.keys(defs).sort()) sorted[k] = defs[k];
    schema = { ...schema, $defs: sorted };
  }
  return schema;
}

function jsonSchema(type: IRType, types: Types, stack: string[], defs: Record<string, any>): Record<string, any> {
  const kind = type.kind;
  if (kind === "text" || kind === "string") return { type: "string" };
  if (kind === "number" || kind === "boolean") return { type: kind };
  if (kind === "literal") return { type: "string", enum: [type.value] };
  if (kind === "array") return { type: "array", items: jsonSchema(type.items, types, stack, defs) };
  if (kind === "object") {
    const properties: Record<string, any> = {};
    for (const f of type.fields as IRField[]) {
      let prop = jsonSchema(f.type, types, stack, defs);
      if (f.description) prop = { ...prop, description: f.description };
      properties[f.name] = prop;
    }
    return {
      type: "object",
      properties,
      required: (type.fields as IRField[]).filter((f) => !f.optional).map((f) => f.name),
      additionalProperties: false,
    };
  }
  if (kind === "union") {
    const variants = type.variants;
    const literals = variants.flatMap((v) => (v.kind === "literal" ? [v.value] : []));
    if (literals.length === variants.length) return { type: "string", enum: literals };
    return { anyOf: variants.map((v) => jsonSchema(v, types, stack, defs)) };
  }
  if (kind === "ref") {
    const name = type.name as string;
    if (stack.includes(name)) {
      if (!(name in defs)) {
        defs[name] = {};
        defs[name] = jsonSchema(types[name]!, types, [name], defs);
      }
      return { $ref: `#/$defs/${name}` };
    }
    return jsonSchema(resolve(type, types), types, [...stack, name], defs);
  }
  throw new Error(`unknown type kind '${kind}'`);
}

// ---------------------------------------------------------------------------------------------
// Description: compact TypeScript-like text

export function describe(type: IRType, types: Types, opts: { expand?: boolean; notes?: boolean } = {}): string {
  return describeType(type, types, !!opts.notes, opts.expand ? [] : null);
}

export function describeFields(
  fields: IRField[],
  types: Types,
  opts: { expand?: boolean; notes?: boolean } = {},
): string {
  return describeFieldList(fields, types, !!opts.notes, opts.expand ? [] : null);
}

function describeType(type: IRType, types: Types, notes: boolean, stack: string[] | null): string {
  const kind = type.kind;
  if (kind === "text" || kind === "string" || kind === "number" || kind === "boolean")
    return kind === "text" ? "string" : kind;
  if (kind === "literal") return JSON.stringify(type.value);
  if (kind === "array") {
    const inner = describeType(type.items, types, notes, stack);
    return type.items.kind === "union" ? `(${inner})[]` : `${inner}[]`;
  }
  if (kind === "object") {
    const body = describeFieldList(type.fields, types, notes, stack);
    return body ? `{ ${body} }` : "{}";
  }
  if (kind === "union") return (type.variants as IRType[]).map((v) => describeType(v, types, notes, stack)).join(" | ");
  if (kind === "ref") {
    const name = type.name as string;
    if (stack === null || stack.includes(name) || !(name in types)) return name;
    return describeType(types[name]!, types, notes, [...stack, name]);
  }
  return kind;
}

function describeFieldList(fields: IRField[], types: Types, notes: boolean, stack: string[] | null): string {
  return fields
    .map((f) => {
      let text = `${f.name}${f.optional ? "?" : ""}: ${describeType(f.type, types, notes, stack)}`;
      if (notes && f.description) text += ` /* ${f.description.split("*/").join("* /")} */`;
      return text;
    })
    .join(", ");
}

// ---------------------------------------------------------------------------------------------
// Sample values (the offline model's arguments and answers)

/** A deterministic sample value of `type` that `validate` accepts, the Python runtime's:
 * strings `"example"`, numbers 1, booleans true, arrays of one item, objects with every field,
 * unions their first variant. Where a named type recurs, the recursion is cut at an optional
 * field (left out) or an array (left empty); a type with no such exit gives `null` there. */
export function exampleValue(type: IRType, types: Types, stack: readonly string[] = []): any {
  const recurs = (t: IRType) => referencedTypes(t, types).some((name) => stack.includes(name));
  switch (type.kind) {
    case "text":
    case "string":
      return "example";
    case "number":
      return 1;
    case "boolean":
      return true;
    case "literal":
      return type.value;
    case "array":
      return recurs(type.items) ? [] : [exampleValue(type.items, types, stack)];
    case "object": {
      const out: Record<string, any> = {};
      for (const f of type.fields as IRField[]) if (!(f.optional && recurs(f.type))) out[f.name] = exampleValue(f.type, types, stack);
      return out;
    }
    case "union": {
      const variants = type.variants as IRType[];
      const finite = variants.filter((v) => !recurs(v));
      return exampleValue((finite.length ? finite : variants)[0]!, types, stack);
    }
    case "ref":
      if (stack.includes(type.name) || !(type.name in types)) return null;
      return exampleValue(types[type.name]!, types, [...stack, type.name]);
    default:
      return null;
  }
}

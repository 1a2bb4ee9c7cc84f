// Lenient reading of block bodies, aligned to a declared schema (docs/protocol.md):
// `key: value` lines, `key = value`, JSON and JS-style objects (also in a code fence), dash
// lists, nested blocks, multi-line values, dotted keys and underscore aliases. A key given
// twice with different values is a BodyError: the block is rejected, never guessed.

import { coerce, fieldMap, isObject, resolve, type IRField, type IRType, type Types } from "./schema.js";

export class BodyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BodyError";
  }
}

export function objectType(fields: IRField[]): IRType {
  return { kind: "object", fields: [...fields] };
}

export function parseBody(text: string, fields: IRField[], types: Types, partial = false): Record<string, any> {
  if (partial) {
    try {
      return parseBodyInner(text, fields, types, true);
    } catch (error) {
      if (error instanceof BodyError) return {};
      throw error;
    }
  }
  return parseBodyInner(text, fields, types, false);
}

function parseBodyInner(text: string, fields: IRField[], types: Types, partial: boolean): Record<string, any> {
  const target = objectType(fields);
  const body = stripFence(text.split("\r\n").join("\n")).trim();
  if (!body) return {};
  const reader = new Reader(types, partial);
  let result: Record<string, any>;
  if (body[0] === "{") {
    const value = loadsLoose(body, partial);
    if (!isObject(value)) throw new BodyError("the body must be an object: `name: value` lines or a JSON object");
    result = reader.align(Object.entries(value).map(([k, v]) => [k, v] as Entry), target);
  } else {
    result = reader.align(new LineParser(body, partial).entries(), target);
  }
  return { ...coerce(result, target, types) };
}

export function parseValue(text: string, type: IRType, types: Types, partial = false): any {
  const resolved = resolve(type, types);
  if (resolved.kind === "object") return parseBody(text, resolved.fields, types, partial);
  const reader = new Reader(types, partial);
  return coerce(reader.interpret(new Raw(stripFence(text.split("\r\n").join("\n")).trim()), type), type, types);
}

/**
 * True when a body reads as fields rather than as plain text: it is an object or list (also in
 * a code fence), its first line is a `key: value` line, or a line names the parameter `name`
 * itself. A lone string parameter takes a body as its raw value only when this is false.
 */
export function looksStructured(text: string, name: string): boolean {
  const body = stripFence(text.split("\r\n").join("\n")).trim();
  if (body[0] === "{" || body[0] === "[") return true;
  const cut = body.indexOf("\n");
  const first = cut < 0 ? body : body.slice(0, cut);
  if (KEY_LINE.test(first)) return true;
  if (cut < 0) return false;
  for (const line of body.slice(cut + 1).split("\n")) {
    const match = KEY_LINE.exec(line);
    if (match && unquoteKey(match.groups!.key!) === name) return true;
  }
  return false;
}

const ANY_FENCE = /```[\w-]*[ \t\r]*\n([\s\S]*?)\n?[ \t\r]*```/;
const OPEN_FENCE = /^\s*```[\w-]*[ \t\r]*\n/;
const FENCE = /^\s*```[\w-]*[ \t]*\n([\s\S]*?)\n?[ \t]*```\s*$/;

export function embeddedObject(text: string): string {
  const fence = ANY_FENCE.exec(text);
  if (fence) return fence[1]!;
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  if (start > 0 && start < end && !KEY_LINE_START.test(text)) return text.slice(start, end + 1);
  return text;
}

function stripFence(text: string): string {
  const m = FENCE.exec(text);
  if (m) return m[1]!;
  const opening = OPEN_FENCE.exec(text);
  return opening ? text.slice(opening[0].length) : text;
}

// ---------------------------------------------------------------------------------------------
// Raw lines

class Raw {
  more: string[] = [];
  constructor(public first: string) {}
  get text(): string {
    return this.more.length ? [this.first, ...this.more].join("\n") : this.first;
  }
}

type Entry = [string, any];

const KEY = String.raw`(?<key>"[^"\n]+"|'[^'\n]+'|[A-Za-z_$][\p{L}\p{N}_$.\-]*)[ \t]*(?::(?=\s|$)|:(?!\/\/)|=(?!=))`;
const KEY_LINE = new RegExp(String.raw`^[ \t]*${KEY}(?<rest>.*)$`, "u");
const KEY_LINE_START = new RegExp(String.raw`^[ \t]*${KEY}`, "u");
const DASH_LINE = /^[ \t]*-(?:[ \t]+(.*)|$)$/;

function indentOf(line: string): number {
  return line.length - line.replace(/^[ \t]+/, "").length;
}

function unquoteKey(key: string): string {
  return (key[0] === '"' || key[0] === "'") && key[key.length - 1] === key[0] && key.length > 1 ? key.slice(1, -1) : key;
}

class LineParser {
  lines: string[];
  pos = 0;
  constructor(
    text: string,
    public partial: boolean,
  ) {
    this.lines = text.split("\n");
  }

  entries(): Entry[] {
    const entries = this.mapping(-1);
    if (this.pos < this.lines.length && !this.partial) {
      const line = this.lines[this.pos]!.trim();
      throw new BodyError(`cannot read the line ${pyRepr(line)}: expected \`name: value\``);
    }
    return entries;
  }

  nextNonblank(start: number): number {
    while (start < this.lines.length && !this.lines[start]!.trim()) start++;
    return start;
  }

  mapping(parent: number): Entry[] {
    const entries: Entry[] = [];
    let i: number;
    while ((i = this.nextNonblank(this.pos)) < this.lines.length) {
      const line = this.lines[i]!;
      if (indentOf(line) <= parent) break;
      const m = KEY_LINE.exec(line);
      if (m === null) {
        const last = entries[entries.length - 1];
        if (last && last[1] instanceof Raw) {
          this.continueRaw(last[1], i);
          continue;
        }
        if (this.partial) {
          this.pos = i + 1;
          continue;
        }
        break;
      }
      this.pos = i + 1;
      entries.push([unquoteKey(m.groups!.key!), this.value(m.groups!.rest!.trim(), indentOf(line))]);
    }
    return entries;
  }

  continueRaw(raw: Raw, i: number): void {
    raw.more.push(...this.lines.slice(this.pos, i));
    raw.more.push(this.lines[i]!.trim());
    this.pos = i + 1;
  }

  value(rest: string, indent: number): any {
    if (rest === "" || rest === "|" || rest === ">") {
      const nxt = this.nextNonblank(this.pos);
      if (nxt < this.lines.length && indentOf(this.lines[nxt]!) > indent) {
        if (DASH_LINE.test(this.lines[nxt]!)) return this.list(indent);
        if (rest === "" && KEY_LINE.test(this.lines[nxt]!)) return new Block(this.mapping(indent));
        return this.blockText(indent);
      }
      return new Raw("");
    }
    if ((rest[0] === "[" || rest[0] === "{") && depth(rest) > 0) return this.bracketed(rest);
    return new Raw(rest);
  }

  blockText(indent: number): Raw {
    const taken: string[] = [];
    while (this.pos < this.lines.length) {
      const line = this.lines[this.pos]!;
      if (line.trim() && indentOf(line) <= indent) break;
      taken.push(line.trim());
      this.pos++;
    }
    return new Raw(taken.join("\n").trim());
  }

  bracketed(first: string): Raw {
    const taken = [first];
    let d = depth(first);
    while (this.pos < this.lines.length && d > 0) {
      taken.push(this.lines[this.pos]!);
      d += depth(this.lines[this.pos]!);
      this.pos++;
    }
    return new Raw(taken.join("\n"));
  }

  list(parent: number): any[] {
    const items: any[] = [];
    let i: number;
    while ((i = this.nextNonblank(this.pos)) < this.lines.length) {
      const line = this.lines[i]!;
      const dash = DASH_LINE.exec(line);
      if (indentOf(line) <= parent || dash === null) {
        const last = items[items.length - 1];
        if (dash === null && indentOf(line) > parent && items.length && last instanceof Raw) {
          this.continueRaw(last, i);
          continue;
        }
        break;
      }
      this.pos = i + 1;
      items.push(this.item((dash[1] ?? "").trim(), indentOf(line)));
    }
    return items;
  }

  item(rest: string, indent: number): any {
    const m = KEY_LINE.exec(rest);
    if (m === null || (rest.length > 0 && "[{\"'".includes(rest[0]!))) return this.value(rest, indent);
    const first: Entry = [unquoteKey(m.groups!.key!), this.value(m.groups!.rest!.trim(), indent)];
    return new Block([first, ...this.mapping(indent)]);
  }
}

/** A nested `key: value` block (kept apart from lists, which are plain arrays). */
class Block {
  constructor(public entries: Entry[]) {}
}

const BRACKET_TOKENS = /"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|[\[\]{}]/g;

function depth(line: string): number {
  let d = 0;
  for (const m of line.matchAll(BRACKET_TOKENS)) {
    const piece = m[0];
    if (piece === "[" || piece === "{") d++;
    else if (piece === "]" || piece === "}") d--;
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Loose JSON / JS-style values

const WS = /(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/)+/y;
const DQ = /"((?:[^"\\]|\\[\s\S])*)"/y;
const SQ = /'((?:[^'\\]|\\[\s\S])*)'/y;
const BARE_KEY = /[^\s:=,{}\[\]"']+/y;
const BARE_VALUE = /[^,{}\[\]\n]*/y;
const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", "/": "/" };

export function loadsLoose(text: string, partial = false): any {
  let json = false;
  try {
    JSON.parse(text);
    json = true;
  } catch {
    json = false;
  }
  return new Loose(text, partial, json).document();
}

class Loose {
  pos = 0;
  constructor(
    public text: string,
    public partial: boolean,
    public json: boolean,
  ) {}

  document(): any {
    const value = this.value();
    this.skip();
    if (this.pos < this.text.length && !this.partial)
      throw new BodyError(`unexpected text after the value: ${pyRepr(this.text.slice(this.pos, this.pos + 40))}`);
    return value;
  }

  match(re: RegExp): RegExpExecArray | null {
    re.lastIndex = this.pos;
    return re.exec(this.text);
  }

  skip(): void {
    const m = this.match(WS);
    if (m) this.pos += m[0].length;
  }

  eof(what: string): void {
    if (!this.partial) throw new BodyError(`the ${what} is not closed`);
  }

  value(): any {
    this.skip();
    const ch = this.text.slice(this.pos, this.pos + 1);
    if (ch === "{") return this.object();
    if (ch === "[") return this.array();
    if (ch === "'" || ch === '"') return this.string();
    const m = this.match(BARE_VALUE)!;
    this.pos += m[0].length;
    const word = m[0].trim();
    if (this.json) return word === "" ? null : JSON.parse(word);
    return word === "null" ? null : word;
  }

  string(): string {
    const quote = this.text[this.pos];
    const m = this.match(quote === '"' ? DQ : SQ);
    if (m === null) {
      this.eof("string");
      const body = this.text.slice(this.pos + 1);
      this.pos = this.text.length;
      return unescape(body.replace(/\\+$/, ""));
    }
    this.pos += m[0].length;
    return unescape(m[1]!);
  }

  object(): Record<string, any> {
    this.pos++;
    const pairs: Entry[] = [];
    for (;;) {
      this.skip();
      const ch = this.text.slice(this.pos, this.pos + 1);
      if (ch === "}") {
        this.pos++;
        return pairsToDict(pairs, this.partial);
      }
      if (ch === "") {
        this.eof("object");
        return pairsToDict(pairs, true);
      }
      if (ch === ",") {
        this.pos++;
        continue;
      }
      const key = this.key();
      this.skip();
      const next = this.text.slice(this.pos, this.pos + 1);
      if (next === ":" || next === "=") {
        this.pos++;
        pairs.push([key, this.value()]);
      } else if (this.pos >= this.text.length) this.eof("object");
      else throw new BodyError(`expected \`:\` after the key ${pyRepr(key)}`);
    }
  }

  key(): string {
    const ch = this.text[this.pos]!;
    if (ch === "'" || ch === '"') return this.string();
    const m = this.match(BARE_KEY);
    if (m === null) throw new BodyError(`unexpected ${pyRepr(ch)} where a key was expected`);
    this.pos += m[0].length;
    return m[0];
  }

  array(): any[] {
    this.pos++;
    const items: any[] = [];
    for (;;) {
      this.skip();
      const ch = this.text.slice(this.pos, this.pos + 1);
      if (ch === "]") {
        this.pos++;
        return items;
      }
      if (ch === "") {
        this.eof("list");
        return items;
      }
      if (ch === ",") {
        this.pos++;
        continue;
      }
      const start = this.pos;
      items.push(this.value());
      if (this.pos === start) throw new BodyError(`unexpected ${pyRepr(ch)} in a list`);
    }
  }
}

function unescape(body: string): string {
  if (!body.includes("\\")) return body;
  try {
    return String(JSON.parse(`"${body}"`));
  } catch {
    return body.replace(/\\([\s\S])/g, (_, c: string) => ESCAPES[c] ?? c);
  }
}

function pairsToDict(pairs: Entry[], partial: boolean): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [key, value] of pairs) {
    if (Object.prototype.hasOwnProperty.call(out, key) && !deepEqual(out[key], value) && !partial)
      throw duplicate(key, out[key], value);
    out[key] = value;
  }
  return out;
}

function duplicate(key: string, first: any, second: any): BodyError {
  return new BodyError(`\`${key}\` is given twice with different values (${show(first)} and ${show(second)}); send it once`);
}

function show(value: any): string {
  const text = pyJson(value);
  return text.length <= 60 ? text : text.slice(0, 57) + "...";
}

/** json.dumps(value, ensure_ascii=False) with Python's default separators (", " and ": "). */
export function pyJson(value: any, itemSep = ", ", keySep = ": "): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return Number.isInteger(value) || !Number.isFinite(value) ? String(value) : pyFloat(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map((v) => pyJson(v, itemSep, keySep)).join(itemSep) + "]";
  if (value instanceof Raw) return JSON.stringify(value.text);
  if (isObject(value))
    return "{" + Object.entries(value).map(([k, v]) => JSON.stringify(k) + keySep + pyJson(v, itemSep, keySep)).join(itemSep) + "}";
  return JSON.stringify(String(value));
}

function pyFloat(value: number): string {
  // Python's repr of a float: like JS but with "e+XX"/"e-XX" two-digit exponents.
  const s = String(value);
  const m = /^(-?[\d.]+)e([+-])(\d+)$/.exec(s);
  if (!m) return s;
  return `${m[1]}e${m[2]}${m[3]!.padStart(2, "0")}`;
}

/** Python's repr of a string, as the Python runtime writes it into messages. */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of text) {
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else out += ch;
  }
  return quote + out + quote;
}

export function deepEqual(a: any, b: any): boolean {
  if (a instanceof Raw && b instanceof Raw) return a.text === b.text;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  if (isObject(a) && isObject(b) && !(a instanceof Raw) && !(b instanceof Raw)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
  }
  return a === b;
}

// ---------------------------------------------------------------------------------------------
// Alignment to the schema

const STRINGY = new Set(["string", "text", "literal"]);

class Reader {
  constructor(
    public types: Types,
    public partial: boolean,
  ) {}

  fields(type: IRType): Map<string, IRField> {
    return fieldMap(type, this.types);
  }

  align(entries: Entry[], target: IRType | null): Record<string, any> {
    const out: Record<string, any> = {};
    for (const [key, raw] of entries) {
      const path = target !== null ? this.path(key, target) : null;
      if (path === null) {
        this.put(out, [key], this.interpret(raw, null), key, null);
        continue;
      }
      const [names, type] = path;
      this.put(out, names, this.interpret(raw, type), key, type);
    }
    return out;
  }

  path(key: string, target: IRType): [string[], IRType] | null {
    const fields = this.fields(target);
    const direct = fields.get(key);
    if (direct) return [[key], direct.type];
    if (key.includes(".")) return this.dotted(key.split("."), target);
    if (key.includes("_")) {
      const found = this.aliases(target).get(key) ?? [];
      if (found.length === 1) return found[0]!;
    }
    return null;
  }

  aliases(target: IRType): Map<string, [string[], IRType][]> {
    const table = new Map<string, [string[], IRType][]>();
    for (const path of this.nestedPaths(target, 4)) {
      const k = path[0].join("_");
      if (!table.has(k)) table.set(k, []);
      table.get(k)!.push(path);
    }
    return table;
  }

  dotted(parts: string[], target: IRType): [string[], IRType] | null {
    let type = target;
    for (const part of parts) {
      const field = this.fields(type).get(part);
      if (!field) return null;
      type = field.type;
    }
    return [parts, type];
  }

  nestedPaths(target: IRType, d: number): [string[], IRType][] {
    const paths: [string[], IRType][] = [];
    if (d === 0) return paths;
    for (const [name, declared] of this.fields(target)) {
      for (const [sub, type] of this.nestedPaths(declared.type, d - 1)) paths.push([[name, ...sub], type]);
      if (d < 4) paths.push([[name], declared.type]);
    }
    return paths;
  }

  put(out: Record<string, any>, names: string[], value: any, key: string, type: IRType | null): void {
    let node = out;
    for (const name of names.slice(0, -1)) {
      if (!Object.prototype.hasOwnProperty.call(node, name)) node[name] = {};
      const child = node[name];
      if (!isObject(child)) {
        if (this.partial) return;
        throw duplicate(key, child, value);
      }
      node = child;
    }
    const last = names[names.length - 1]!;
    if (Object.prototype.hasOwnProperty.call(node, last) && !deepEqual(node[last], value)) {
      if (isObject(node[last]) && isObject(value)) {
        for (const [subKey, subValue] of Object.entries(value)) {
          const subType = type !== null ? this.fields(type).get(subKey) : undefined;
          this.put(node[last], [subKey], subValue, `${key}.${subKey}`, subType ? subType.type : null);
        }
        return;
      }
      if (type !== null && deepEqual(coerce(node[last], type, this.types), coerce(value, type, this.types))) return;
      if (!this.partial) throw duplicate(names.length > 1 ? names.join(".") : key, node[last], value);
    }
    node[last] = value;
  }

  interpret(raw: any, type: IRType | null): any {
    const resolved = type !== null ? resolve(type, this.types) : null;
    const kind = resolved ? resolved.kind : null;
    if (raw instanceof Raw) return this.interpretText(raw.text, resolved);
    if (raw instanceof Block) return this.align(raw.entries, kind === "object" ? resolved : null);
    if (Array.isArray(raw)) {
      const items = resolved && kind === "array" ? resolved.items : null;
      return raw.map((item) => this.interpret(item, items));
    }
    if (isObject(raw)) return this.align(Object.entries(raw), kind === "object" ? resolved : null);
    return raw;
  }

  interpretText(text: string, type: IRType | null): any {
    const kind = type ? type.kind : null;
    if (kind !== null && STRINGY.has(kind)) return unquote(text);
    if (!text) return null;
    if (kind === "array" && text[0] !== "[" && type) {
      return text.split(",").map((p) => this.interpret(new Raw(p.trim()), type.items));
    }
    if (!"[{\"'".includes(text[0]!)) return text === "null" ? null : text;
    try {
      return this.interpret(loadsLoose(text, this.partial), type);
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      if ((kind === "object" || kind === "array") && !this.partial) throw error;
      return text;
    }
  }
}

function unquote(text: string): string {
  if (text.length >= 2 && text[0] === text[text.length - 1] && (text[0] === '"' || text[0] === "'")) {
    try {
      return String(new Loose(text, false, false).document());
    } catch (error) {
      if (error instanceof BodyError) return text;
      throw error;
    }
  }
  return text;
}

// Lenient reading of block bodies, aligned to a declared schema (docs/protocol.md):
// `key: value` lines, `key = value`, JSON and JS-style objects (also in a code fence), dash
// lists, nested blocks, multi-line values, dotted keys and underscore aliases. A key given
// twice with different values is a BodyError: the block is rejected, never guessed.

import { coerce, fieldMap, isObject, resolve, validate, type IRField, type IRType, type Types } from "./schema.js";

/** The longest block body or native argument text read (1,048,576 characters). */
export const MAX_BODY_CHARS = 1 << 20;
/** The deepest nesting of objects and lists in one body. */
export const MAX_DEPTH = 64;

/** One repair the reader made: `path` is the dotted field path it concerns ("" for the body). */
export interface Repair {
  kind: string;
  path: string;
  detail: string;
}

export function repair(kind: string, path: string, detail: string): Repair {
  return { kind, path, detail };
}

export class BodyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BodyError";
  }
}

export function objectType(fields: IRField[]): IRType {
  return { kind: "object", fields: [...fields] };
}

/**
 * Read a block body into an object aligned to `fields`. With `partial` (a body still
 * streaming) nothing throws: only what is certain is read (the line still being typed is left
 * out unless it is plain text for a text field). `repairs` collects what the reader repaired
 * (final reads only).
 */
export function parseBody(
  text: string,
  fields: IRField[],
  types: Types,
  partial = false,
  repairs: Repair[] | null = null,
  jsonPrefix: JsonPrefix | null = null,
): Record<string, any> {
  if (partial) {
    try {
      return guarded(() => parseBodyInner(text, fields, types, true, null, jsonPrefix), text);
    } catch (error) {
      if (error instanceof BodyError) return {}; // too broken to show yet; the final read says why
      throw error;
    }
  }
  return guarded(() => parseBodyInner(text, fields, types, false, repairs, null), text);
}

/** Run `read` within the documented limits: anything hostile is a BodyError for the model. */
function guarded<T>(read: () => T, text: string): T {
  if (text.length > MAX_BODY_CHARS) throw new BodyError(`the body is ${text.length} characters long; at most ${MAX_BODY_CHARS} are read`);
  try {
    return read();
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message)) throw new BodyError(`values are nested deeper than ${MAX_DEPTH} levels`);
    throw error;
  }
}

function parseBodyInner(
  text: string,
  fields: IRField[],
  types: Types,
  partial: boolean,
  repairs: Repair[] | null,
  jsonPrefix: JsonPrefix | null,
): Record<string, any> {
  const target = objectType(fields);
  const body = stripFence(lf(text)).trim();
  if (!body) return {};
  const reader = new Reader(types, partial, repairs);
  let result: Record<string, any>;
  if (body[0] === "{") {
    const fast = partial && jsonPrefix !== null ? fastPartial(text, jsonPrefix) : null;
    const value = fast === null ? reader.loose(body, target) : fast;
    if (!isObject(value) || value instanceof Raw) throw new BodyError("the body must be an object: `name: value` lines or a JSON object");
    result = reader.align(Object.entries(value), target);
  } else {
    const openTail = partial && !text.endsWith("\n");
    result = reader.align(new LineParser(body, partial, openTail).entries(), target);
  }
  return { ...reader.coerce(result, target) };
}

/** Read a body holding one value of `type` (an object type reads as in parseBody). */
export function parseValue(
  text: string,
  type: IRType,
  types: Types,
  partial = false,
  repairs: Repair[] | null = null,
  jsonPrefix: JsonPrefix | null = null,
): any {
  const resolved = resolve(type, types);
  if (resolved.kind === "object") return parseBody(text, resolved.fields, types, partial, repairs, jsonPrefix);
  return guarded(() => {
    const reader = new Reader(types, partial, repairs);
    const body = stripFence(lf(text)).trim();
    return reader.coerce(reader.interpret(new Raw(body), type), type);
  }, text);
}

/**
 * True when a body reads as fields rather than as plain text: it is an object or list (also in
 * a code fence), its first line is a `key: value` line, or a line names the parameter `name`
 * itself. A lone string parameter takes a body as its raw value only when this is false.
 */
export function looksStructured(text: string, name: string): boolean {
  const body = stripFence(lf(text)).trim();
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

/** `text` with CRLF line ends as LF (most bodies have none: no copy then). */
function lf(text: string): string {
  return text.includes("\r\n") ? text.split("\r\n").join("\n") : text;
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
// Streaming JSON

const STRING_BODY = /[^"\\]*/y;

/**
 * Follows a JSON text as it streams, so that a parseable prefix is known at any moment. `feed`
 * costs time linear in the piece; `completed` gives the text so far cut back to the last
 * complete value (or with an open string value closed) plus the closing brackets.
 */
export class JsonPrefix {
  private stack: string[] = [];
  private inString = false;
  private escape = false;
  private expectKey = false;
  private stringIsKey = false;
  private pos = 0;
  private safe = 0;
  private safeDepth = 0;
  /** The top-level value's closing bracket has arrived. */
  closed = false;

  feed(piece: string): void {
    const base = this.pos;
    const n = piece.length;
    let i = 0;
    while (i < n) {
      if (this.inString) {
        i = this.string(piece, i, base);
        continue;
      }
      const ch = piece[i]!;
      i++;
      if (ch === '"') {
        this.inString = true;
        this.stringIsKey = this.expectKey;
      } else if (ch === "{" || ch === "[") {
        this.stack.push(ch);
        this.expectKey = ch === "{";
        this.mark(base + i);
      } else if (ch === "}" || ch === "]") {
        this.stack.pop();
        this.closed = !this.stack.length;
        this.expectKey = false;
        this.mark(base + i);
      } else if (ch === ",") {
        this.expectKey = this.stack.length > 0 && this.stack[this.stack.length - 1] === "{";
        this.mark(base + i - 1); // cut before the comma
      } else if (ch === ":") this.expectKey = false;
    }
    this.pos = base + n;
  }

  private string(piece: string, i: number, base: number): number {
    if (this.escape) {
      this.escape = false;
      return i + 1;
    }
    STRING_BODY.lastIndex = i;
    const m = STRING_BODY.exec(piece);
    i = m ? i + m[0].length : i;
    if (i >= piece.length) return i;
    if (piece[i] === "\\") {
      this.escape = true;
      return i + 1;
    }
    this.inString = false;
    if (!this.stringIsKey) this.mark(base + i + 1);
    return i + 1;
  }

  private mark(at: number): void {
    this.safe = at;
    this.safeDepth = this.stack.length;
  }

  /** [with the open string closed, cut back to the last complete value]. */
  completed(text: string): [string, string] {
    const close = (open: string[]): string => open.map((c) => (c === "{" ? "}" : "]")).reverse().join("");
    const closers = close(this.stack);
    const cut = text.slice(0, this.safe) + close(this.stack.slice(0, this.safeDepth));
    if (this.inString && !this.stringIsKey) {
      const body = this.escape ? text.slice(0, -1) : text;
      return [body + OPEN_MARK + '"' + closers, cut];
    }
    return [cut, cut];
  }
}

const OPEN_MARK = "\ue000"; // ends the open string value that `completed` closes

/**
 * A streaming JSON body read through JSON.parse; null when that cannot work. The string still
 * being typed (always the last value) comes back as an open Raw, so the reader shows it only
 * where it is a prefix of the final value.
 */
function fastPartial(text: string, prefix: JsonPrefix): Record<string, any> | null {
  const [withOpen, cut] = prefix.completed(text);
  const candidates = withOpen === cut ? [cut] : [withOpen, cut];
  for (const candidate of candidates) {
    const opening = OPEN_FENCE.exec(candidate); // a code fence whose end has not arrived
    let value: unknown;
    try {
      value = JSON.parse(opening ? candidate.slice(opening[0].length) : candidate);
    } catch {
      continue;
    }
    if (!isObject(value)) return null;
    if (candidate === cut || markOpen(value)) return value;
  }
  return null;
}

/** Replace the last value of `node` (at any depth), the open string, by an open Raw; false
 * when it is not there (a duplicate key moved it): use the cut text. */
function markOpen(node: unknown): boolean {
  while (Array.isArray(node) || isObject(node)) {
    const box = node as Record<string, unknown>;
    const keys = Object.keys(box);
    if (!keys.length) return false;
    const where = keys[keys.length - 1]!; // an array's last index, or an object's last key
    const value = box[where];
    if (typeof value === "string") {
      if (!value.endsWith(OPEN_MARK)) return false;
      box[where] = new Raw(value.slice(0, -OPEN_MARK.length), true);
      return true;
    }
    node = value;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Raw lines

class Raw {
  more: string[] = [];
  /** `open`: a streaming body's last value, still being typed. */
  constructor(
    public first: string,
    public open = false,
  ) {}
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

/**
 * `key: value` lines, nested blocks and dash lists, by indentation (a YAML subset). `openTail`:
 * the last line is still being typed (a streaming body); what it holds is not certain yet, so
 * it only ever yields a plain text value (see Reader.interpret).
 */
class LineParser {
  lines: string[];
  pos = 0;
  openLine: number;
  constructor(
    text: string,
    public partial: boolean,
    openTail = false,
  ) {
    this.lines = text.split("\n");
    this.openLine = openTail ? this.lines.length - 1 : -1;
  }

  entries(): Entry[] {
    const entries = this.mapping(-1, 0);
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

  mapping(parent: number, depth: number): Entry[] {
    if (depth > MAX_DEPTH) throw new BodyError(`values are nested deeper than ${MAX_DEPTH} levels`);
    const entries: Entry[] = [];
    let i: number;
    while ((i = this.nextNonblank(this.pos)) < this.lines.length) {
      const line = this.lines[i]!;
      if (indentOf(line) <= parent) break;
      const m = KEY_LINE.exec(line);
      if (m === null || (i === this.openLine && !m.groups!.rest!.trim())) {
        if (i === this.openLine) {
          // a key or a continuation still being typed
          this.pos = i + 1;
          continue;
        }
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
      entries.push([unquoteKey(m.groups!.key!), this.value(m.groups!.rest!.trim(), indentOf(line), depth)]);
    }
    return entries;
  }

  continueRaw(raw: Raw, i: number): void {
    raw.more.push(...this.lines.slice(this.pos, i));
    raw.more.push(this.lines[i]!.trim());
    this.pos = i + 1;
  }

  value(rest: string, indent: number, depth: number): any {
    const line = this.pos - 1;
    if (rest === "" || rest === "|" || rest === ">") {
      const nxt = this.nextNonblank(this.pos);
      if (rest === "" && this.dashAt(nxt, indent)) return this.list(indent, depth + 1, true);
      if (nxt < this.lines.length && indentOf(this.lines[nxt]!) > indent) {
        if (DASH_LINE.test(this.lines[nxt]!)) return this.list(indent, depth + 1);
        if (rest === "" && KEY_LINE.test(this.lines[nxt]!)) {
          const entries = this.mapping(indent, depth + 1);
          // Empty only when its one line is still being typed: nothing certain yet.
          return entries.length ? new Block(entries) : new Raw("", true);
        }
        return this.blockText(indent);
      }
      return new Raw("", this.partial && nxt >= this.lines.length);
    }
    if ((rest[0] === "[" || rest[0] === "{") && bracketDepth(rest) > 0) return this.bracketed(rest);
    return new Raw(rest, line === this.openLine);
  }

  /** Whether line `i` is a complete `- item` line at column `indent` (as YAML reads it, a list under the `key:` line above, not text continuing it). */
  dashAt(i: number, indent: number): boolean {
    if (i >= this.lines.length || i === this.openLine) return false;
    const line = this.lines[i]!;
    return indentOf(line) === indent && DASH_LINE.test(line);
  }

  blockText(indent: number): Raw {
    const taken: string[] = [];
    while (this.pos < this.lines.length) {
      const line = this.lines[this.pos]!;
      if (line.trim() && indentOf(line) <= indent) break;
      if (this.pos !== this.openLine) taken.push(line.trim());
      this.pos++;
    }
    return new Raw(taken.join("\n").trim());
  }

  bracketed(first: string): Raw {
    const taken = [first];
    let d = bracketDepth(first);
    while (this.pos < this.lines.length && d > 0) {
      taken.push(this.lines[this.pos]!);
      d += bracketDepth(this.lines[this.pos]!);
      this.pos++;
    }
    return new Raw(taken.join("\n"), this.partial && d > 0);
  }

  /**
   * Dash lines indented more than their key's `parent` column (or at it, with `ownColumn`); a
   * line that is not one continues the last item's text when indented more than the key, and
   * ends the list otherwise.
   */
  list(parent: number, depth: number, ownColumn = false): any[] {
    const floor = ownColumn ? parent - 1 : parent;
    if (depth > MAX_DEPTH) throw new BodyError(`values are nested deeper than ${MAX_DEPTH} levels`);
    const items: any[] = [];
    let i: number;
    while ((i = this.nextNonblank(this.pos)) < this.lines.length) {
      const line = this.lines[i]!;
      const dash = DASH_LINE.exec(line);
      if (i === this.openLine) {
        // an item still being typed
        this.pos = i + 1;
        continue;
      }
      if (indentOf(line) <= floor || dash === null) {
        const last = items[items.length - 1];
        if (dash === null && indentOf(line) > parent && items.length && last instanceof Raw) {
          this.continueRaw(last, i);
          continue;
        }
        break;
      }
      this.pos = i + 1;
      items.push(this.item((dash[1] ?? "").trim(), indentOf(line), depth));
    }
    return items;
  }

  item(rest: string, indent: number, depth: number): any {
    const m = KEY_LINE.exec(rest);
    if (m === null || (rest.length > 0 && "[{\"'".includes(rest[0]!))) return this.value(rest, indent, depth);
    const first: Entry = [unquoteKey(m.groups!.key!), this.value(m.groups!.rest!.trim(), indent, depth)];
    return new Block([first, ...this.mapping(indent, depth + 1)]);
  }
}

/** A nested `key: value` block (kept apart from lists, which are plain arrays). */
class Block {
  constructor(public entries: Entry[]) {}
}

const BRACKET_TOKENS = /"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|[\[\]{}]/g;

function bracketDepth(line: string): number {
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

/**
 * Parse JSON, or failing that a JS-style value in which bare words stay strings (except null)
 * for the declared type to interpret. With `partial` an unfinished value is closed where it
 * stops.
 */
export function loadsLoose(text: string, partial = false): any {
  return guarded(() => new Loose(text, partial, isJson(text)).document(), text);
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const SPLIT = /[ \t]+([A-Za-z_$][\w$.\-]*)[ \t]*[:=]/g;
const JSON_WORD = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)$/;
const LOOSE_REPAIRS: Record<string, string> = {
  unquoted_key: "a key without quotes",
  unquoted_value: "a text value without quotes",
  single_quotes: "a string in single quotes",
  missing_comma: "pairs or items without a comma between them",
  trailing_comma: "a comma before a closing bracket",
  comment: "a comment",
  split_pair: "pairs separated only by spaces; a value ended where the next field's name began",
};

/**
 * Recursive descent over JSON and JS-style objects; tolerant of what models write. With a
 * reader and the declared type it also knows the field names of each object it reads, which is
 * what lets `{name: Ada age: 36}` be split (see bareValue).
 */
class Loose {
  pos = 0;
  path: string[] = [];
  constructor(
    public text: string,
    public partial: boolean,
    public json: boolean,
    public reader: Reader | null = null,
    public type: IRType | null = null,
  ) {}

  document(): any {
    const value = this.value(this.type, 0);
    this.skip();
    if (this.pos < this.text.length && !this.partial)
      throw new BodyError(`unexpected text after the value: ${pyRepr(this.text.slice(this.pos, this.pos + 40))}`);
    return value;
  }

  note(kind: string): void {
    if (this.reader !== null && !this.json) this.reader.note(kind, this.path.join("."), LOOSE_REPAIRS[kind]!, true);
  }

  match(re: RegExp): RegExpExecArray | null {
    re.lastIndex = this.pos;
    return re.exec(this.text);
  }

  skip(): void {
    const m = this.match(WS);
    if (m) {
      this.pos += m[0].length;
      if (m[0].includes("/")) this.note("comment");
    }
  }

  eof(what: string): void {
    if (!this.partial) throw new BodyError(`the ${what} is not closed`);
  }

  /** `type` resolved when it is an object type the reader knows, else null. */
  fieldsOf(type: IRType | null): IRType | null {
    if (this.reader === null || type === null) return null;
    const resolved = resolve(type, this.reader.types);
    return resolved.kind === "object" ? resolved : null;
  }

  value(type: IRType | null, depth: number): any {
    if (depth > MAX_DEPTH) throw new BodyError(`values are nested deeper than ${MAX_DEPTH} levels`);
    this.skip();
    const ch = this.text.slice(this.pos, this.pos + 1);
    if (ch === "{") return this.object(this.fieldsOf(type), depth + 1);
    if (ch === "[") {
      let items: IRType | null = null;
      if (this.reader !== null && type !== null) {
        const resolved = resolve(type, this.reader.types);
        items = resolved.kind === "array" ? resolved.items : null;
      }
      return this.array(items, depth + 1);
    }
    if (ch === "'" || ch === '"') return this.string();
    return this.bareValue(null);
  }

  /**
   * An unquoted value up to a comma, bracket or line end. Inside an object whose type is known,
   * it also ends before ` name:` when `name` names a field of that object (the model left out
   * the comma; a name given twice is then rejected as a duplicate).
   */
  bareValue(objectType: IRType | null): any {
    const m = this.match(BARE_VALUE)!;
    let end = this.pos + m[0].length;
    if (objectType !== null && this.reader !== null && !this.json) {
      const piece = this.text.slice(0, end);
      SPLIT.lastIndex = this.pos;
      for (let split = SPLIT.exec(piece); split !== null; split = SPLIT.exec(piece)) {
        if (this.reader.pathOf(split[1]!, objectType) !== null) {
          end = split.index;
          this.note("split_pair");
          break;
        }
      }
    }
    const word = this.text.slice(this.pos, end).trim();
    this.pos = end;
    if (this.json) return word === "" ? null : JSON.parse(word);
    if (word && !JSON_WORD.test(word)) this.note("unquoted_value");
    // Read by the declared type, like a `key: value` line.
    if (this.reader !== null) return new Raw(word, this.partial && end === this.text.length);
    return word === "null" ? null : word;
  }

  string(): any {
    const quote = this.text[this.pos];
    if (quote === "'") this.note("single_quotes");
    const m = this.match(quote === '"' ? DQ : SQ);
    if (m === null) {
      this.eof("string");
      const body = this.text.slice(this.pos + 1);
      this.pos = this.text.length;
      const text = unescape(body.replace(/\\+$/, ""));
      return this.partial && this.reader !== null ? new Raw(text, true) : text;
    }
    this.pos += m[0].length;
    return unescape(m[1]!);
  }

  object(type: IRType | null, depth: number): Record<string, any> {
    this.pos++;
    const pairs: Entry[] = [];
    let separated = true; // a comma (or the opening brace) came since the last pair
    for (;;) {
      this.skip();
      const ch = this.text.slice(this.pos, this.pos + 1);
      if (ch === "}") {
        this.pos++;
        if (pairs.length && separated) this.note("trailing_comma");
        return pairsToDict(pairs, this.partial);
      }
      if (ch === "") {
        this.eof("object");
        return pairsToDict(pairs, true);
      }
      if (ch === ",") {
        this.pos++;
        separated = true;
        continue;
      }
      if (!separated) this.note("missing_comma");
      const key = this.key();
      this.skip();
      const next = this.text.slice(this.pos, this.pos + 1);
      if (next === ":" || next === "=") {
        this.pos++;
        this.path.push(key);
        const field = type !== null && this.reader !== null ? this.reader.fields(type).get(key) : undefined;
        this.skip();
        const start = this.text.slice(this.pos, this.pos + 1);
        const value = start === "{" || start === "[" || start === "'" || start === '"' ? this.value(field ? field.type : null, depth) : this.bareValue(type);
        this.path.pop();
        pairs.push([key, value]);
        separated = false;
      } else if (this.pos >= this.text.length) this.eof("object");
      else throw new BodyError(`expected \`:\` after the key ${pyRepr(key)}`);
    }
  }

  key(): string {
    const ch = this.text[this.pos]!;
    if (ch === "'" || ch === '"') {
      const key = this.string(); // cut off by the end: no pair follows it anyway
      return String(key instanceof Raw ? key.text : key);
    }
    const m = this.match(BARE_KEY);
    if (m === null) throw new BodyError(`unexpected ${pyRepr(ch)} where a key was expected`);
    this.pos += m[0].length;
    this.note("unquoted_key");
    return m[0];
  }

  array(itemsType: IRType | null, depth: number): any[] {
    this.pos++;
    const items: any[] = [];
    let separated = true;
    for (;;) {
      this.skip();
      const ch = this.text.slice(this.pos, this.pos + 1);
      if (ch === "]") {
        this.pos++;
        if (items.length && separated) this.note("trailing_comma");
        return items;
      }
      if (ch === "") {
        this.eof("list");
        return items;
      }
      if (ch === ",") {
        this.pos++;
        separated = true;
        continue;
      }
      if (!separated) this.note("missing_comma");
      const start = this.pos;
      items.push(this.value(itemsType, depth));
      separated = false;
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
    if (Object.prototype.hasOwnProperty.call(out, key) && !deepEqual(plain(out[key]), plain(value)) && !partial)
      throw duplicate(key, out[key], value);
    out[key] = value;
  }
  return out;
}

function duplicate(key: string, first: any, second: any): BodyError {
  return new BodyError(`\`${key}\` is given twice with different values (${show(first)} and ${show(second)}); send it once`);
}

/** A value with a bare word (Raw) as its text, for comparing and showing. */
function plain(value: any): any {
  return value instanceof Raw ? value.text : value;
}

function show(value: any): string {
  const text = pyJson(plain(value));
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
/** Python's name for the type of a JSON-like value (`got int`, `got NoneType` in messages). */
export function pyTypeName(value: unknown): string {
  if (value === null || value === undefined) return "NoneType";
  if (Array.isArray(value)) return "list";
  if (typeof value === "string") return "str";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (typeof value === "function") return "function";
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return "dict";
  return (value as object).constructor?.name ?? "object";
}

/** Python's repr of a JSON-like value (`got ...` in messages). */
export function pyValueRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (typeof value === "string") return pyRepr(value);
  if (typeof value === "boolean") return value ? "True" : "False";
  if (typeof value === "number") return pyJson(value);
  if (Array.isArray(value)) return `[${value.map(pyValueRepr).join(", ")}]`;
  if (typeof value === "object") return `{${Object.entries(value).map(([k, v]) => `${pyRepr(k)}: ${pyValueRepr(v)}`).join(", ")}}`;
  return String(value);
}

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

const OPEN = Symbol("open"); // a streaming value not certain yet: left out of the snapshot
const MAX_REPAIRS = 100;

class Reader {
  private noted = new Set<string>();
  private depth = 0;
  constructor(
    public types: Types,
    public partial: boolean,
    public repairs: Repair[] | null = null,
  ) {}

  /** Record a repair (`once`: only the first of this kind in the body). */
  note(kind: string, path: string, detail: string, once = false): void {
    if (this.repairs === null || this.repairs.length >= MAX_REPAIRS) return;
    const mark = `${kind}\u0000${once ? "" : path}`;
    if (this.noted.has(mark)) return;
    this.noted.add(mark);
    this.repairs.push(repair(kind, path, detail));
  }

  fields(type: IRType): Map<string, IRField> {
    return fieldMap(type, this.types);
  }

  loose(text: string, type: IRType | null = null): any {
    return new Loose(text, this.partial, isJson(text), this, type).document();
  }

  /** coerce(), each change listed as a repair. */
  coerce(value: any, type: IRType): any {
    const out = coerce(value, type, this.types);
    if (this.repairs !== null) this.coerced(value, out, "");
    return out;
  }

  private coerced(before: any, after: any, path: string): void {
    if (isObject(before) && isObject(after)) {
      for (const [key, value] of Object.entries(after)) if (key in before) this.coerced(before[key], value, path ? `${path}.${key}` : key);
    } else if (Array.isArray(before) && Array.isArray(after)) {
      const n = Math.min(before.length, after.length);
      for (let i = 0; i < n; i++) this.coerced(before[i], after[i], `${path}[${i}]`);
    } else if (typeof before !== typeof after || Array.isArray(before) !== Array.isArray(after) || !deepEqual(before, after)) {
      this.note("coerced", path, `${show(before)} read as ${show(after)}`);
    }
  }

  /**
   * Place each entry at the field its key names (dotted and underscore keys too). A key path
   * given twice with different values is an ambiguity (also when both are objects: two
   * `user:` blocks are not merged); paths that only share a prefix fill one object.
   */
  align(entries: Entry[], target: IRType | null): Record<string, any> {
    this.enter();
    const out: Record<string, any> = {};
    const given = new Map<string, any>(); // by key path
    for (const [key, raw] of entries) {
      const path = target !== null ? this.pathOf(key, target) : null;
      const [names, type] = path !== null ? path : [[key], null];
      const value = this.interpret(raw, type);
      if (value === OPEN || (value === null && this.nullIsAbsent(type))) continue; // still being typed, or null: not given
      const where = names.length === 1 ? key : JSON.stringify(names);
      if (given.has(where)) {
        if (!this.same(given.get(where), value, type) && !this.partial) throw duplicate(names.join("."), given.get(where), value);
        if (!this.partial) continue;
      }
      given.set(where, value);
      this.put(out, names, value, key, type);
    }
    this.depth--;
    return out;
  }

  /** null means "not given" unless the declared type itself accepts null. */
  nullIsAbsent(type: IRType | null): boolean {
    return type === null || validate(null, type, this.types).length > 0;
  }

  same(first: any, second: any, type: IRType | null): boolean {
    if (deepEqual(first, second)) return true;
    if (type === null) return false;
    return deepEqual(coerce(first, type, this.types), coerce(second, type, this.types));
  }

  /** The field path `key` names in `target`: the field itself, a dotted path, or an
   * underscore alias that exactly one nested path joins to. */
  pathOf(key: string, target: IRType): [string[], IRType] | null {
    const fields = this.fields(target);
    const direct = fields.get(key);
    if (direct) return [[key], direct.type];
    if (key.includes(".")) return this.dotted(key.split("."), target);
    if (key.includes("_")) {
      const found = this.aliases(key, target, true);
      if (found.length === 1) {
        const names = found[0]![0];
        this.note("alias", names.join("."), `\`${key}\` read as \`${names.join(".")}\``);
        return found[0]!;
      }
      if (found.length && !this.partial) {
        const ways = found.map(([names]) => `\`${names.join(".")}\``).join(" or ");
        throw new BodyError(`\`${key}\` could be ${ways}; write the path with dots`);
      }
    }
    return null;
  }

  /** Every way `key` splits at underscores into a path of nested fields (at any depth; at the
   * top level the key must reach into a nested field). Stops at two. */
  aliases(key: string, target: IRType, top: boolean): [string[], IRType][] {
    const found: [string[], IRType][] = [];
    for (const [name, declared] of this.fields(target)) {
      if (!top && key === name) found.push([[name], declared.type]);
      else if (key.startsWith(name + "_")) {
        for (const [sub, type] of this.aliases(key.slice(name.length + 1), declared.type, false)) found.push([[name, ...sub], type]);
      }
      if (found.length > 1) break;
    }
    return found;
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

  /** Set `value` at `names`; a different value already there is an ambiguity (values are
   * compared after coercion, so 28 and "28" agree). */
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
      if (type !== null && this.same(node[last], value, type)) return;
      if (!this.partial) throw duplicate(names.length > 1 ? names.join(".") : key, node[last], value);
    }
    node[last] = value;
  }

  interpret(raw: any, type: IRType | null): any {
    const resolved = type !== null ? resolve(type, this.types) : null;
    const kind = resolved ? resolved.kind : null;
    if (raw instanceof Raw) return raw.open ? this.openValue(raw.text, resolved) : this.interpretText(raw.text, resolved);
    if (raw instanceof Block) return this.align(raw.entries, kind === "object" ? resolved : null);
    if (Array.isArray(raw)) {
      const items = resolved && resolved.kind === "array" ? resolved.items : null;
      this.enter();
      const values = raw.map((item) => this.interpret(item, items));
      this.depth--;
      return values.filter((v) => v !== OPEN);
    }
    if (isObject(raw)) return this.align(Object.entries(raw), kind === "object" ? resolved : null);
    return raw;
  }

  /** One level deeper into objects and lists (left again by the caller). */
  private enter(): void {
    this.depth++;
    if (this.depth > MAX_DEPTH) throw new BodyError(`values are nested deeper than ${MAX_DEPTH} levels`);
  }

  /** A value still being typed: shown only as far as it is certain. Plain text for a text
   * field is a prefix of the final value; of a list, the items before the last. */
  private openValue(text: string, type: IRType | null): any {
    const kind = type ? type.kind : null;
    if ((kind === "string" || kind === "text") && text && !"[{\"'|>/".includes(text[0]!)) {
      if (!"null".startsWith(text)) return text;
    }
    if (kind === "array" && text[0] === "[") {
      const value = this.interpret(this.loose(text, type), type);
      return Array.isArray(value) ? value.slice(0, -1) : OPEN;
    }
    return OPEN;
  }

  interpretText(text: string, type: IRType | null): any {
    const kind = type ? type.kind : null;
    if (kind !== null && STRINGY.has(kind)) return text === "null" ? null : unquote(text);
    if (!text) return null; // `key:` with nothing after it: not given
    if (type && type.kind === "array" && text[0] !== "[") {
      const parts = text.split(",").map((p) => p.trim());
      // One item or one per line: not said.
      if (parts.some((p) => p.includes("\n")))
        throw new BodyError(`the list ${show(text)} is text over several lines: write each item on a \`- item\` line, or the list as JSON`);
      return parts.map((p) => this.interpret(new Raw(p), type.items));
    }
    // A bare `28` or `true`: the taught form, read as JSON (no coercion).
    if ((kind === "number" || kind === "boolean") && JSON_WORD.test(text)) return JSON.parse(text);
    if (!"[{\"'".includes(text[0]!)) return text === "null" ? null : text;
    const depth = this.depth;
    try {
      return this.interpret(this.loose(text, type), type);
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      this.depth = depth;
      if ((kind === "object" || kind === "array") && !this.partial) throw error;
      return text; // a union or an unknown key: validation says what is wrong
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

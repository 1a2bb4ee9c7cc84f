// Cassettes (auwgent.testing.cassette): record real HTTP exchanges with a model provider once,
// replay them forever, in the Python runtime's file format, so that a cassette recorded by one
// runtime replays in the other. A `Cassette` is an HTTP client for the runtime config
// (`httpClient: new Cassette("tests/cassettes/weather.json")`): its `fetch(url, init)` answers
// from the file (`replay`, the default: a request the file lacks throws `CassetteMiss`, with a
// diff against the nearest recorded request), sends every request on and writes the file
// afresh (`record`), or replays what the file has and records what it lacks (`auto`).
//
// Requests match on method, path, query (without `key`) and the JSON body, with only what the
// runtime changes from run to run normalised: the date line ending the system prompt and the
// call ids it makes (`auwgent_call_` + 24 hex digits). Responses are kept as the chunks that
// arrived; request headers are never written and API keys are blanked out wherever they appear.

import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { AuwgentError } from "./errors.js";
import type { FetchLike } from "./providers/http.js";

export const CASSETTE_VERSION = 1;
export type CassetteMode = "replay" | "record" | "auto";
const MODES: readonly CassetteMode[] = ["replay", "record", "auto"];

const SECRET_HEADERS = ["authorization", "x-goog-api-key", "api-key"];
const KEPT_RESPONSE_HEADERS = ["content-type", "retry-after"];
// The line the runtime ends every system prompt with (nowLine), alone at the end.
const DATE_LINE = /(?:^|(?<=\n\n))Current date and time: [^\n]*$/;
const NOW = "Current date and time: <now>";
const MADE_ID = /^auwgent_call_[0-9a-f]{24}$/;

/** A request in replay mode that the cassette has no (unused) answer for. */
export class CassetteMiss extends AuwgentError {}

export interface RecordedRequest {
  method: string;
  path: string;
  query: string;
  body: unknown;
}

export interface Interaction {
  request: RecordedRequest;
  response: { status: number; headers: Record<string, string>; chunks?: string[]; chunks_b64?: string[] };
}

/** The part of a request a cassette matches on. */
export function normaliseRequest(method: string, url: string, body: string): RecordedRequest {
  const parsed = new URL(url);
  const query = [...parsed.searchParams].filter(([k]) => k !== "key").sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  let value: unknown = null;
  if (body) {
    try {
      value = JSON.parse(body);
    } catch {
      value = body;
    }
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) value = normaliseBody(value as Record<string, any>);
  return { method: method.toUpperCase(), path: decodeURIComponent(parsed.pathname), query: query.map(([k, v]) => `${k}=${v}`).join("&"), body: value };
}

function normaliseBody(original: Record<string, any>): Record<string, any> {
  const body = structuredClone(original);
  const made = new Map<string, string>();
  const madeId = (value: unknown) => {
    if (typeof value !== "string" || !MADE_ID.test(value)) return value;
    if (!made.has(value)) made.set(value, `<made call id ${made.size + 1}>`);
    return made.get(value);
  };
  const system = body.systemInstruction; // Gemini
  if (isPlain(system)) undateLast(system.parts, "text");
  for (const message of Array.isArray(body.messages) ? body.messages : []) {
    // OpenAI Chat Completions
    if (!isPlain(message)) continue;
    if (message.role === "system") {
      if (typeof message.content === "string") message.content = message.content.replace(DATE_LINE, NOW);
      else undateLast(message.content, "text");
    }
    for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) if (isPlain(call) && "id" in call) call.id = madeId(call.id);
    if ("tool_call_id" in message) message.tool_call_id = madeId(message.tool_call_id);
  }
  return body;
}

function isPlain(value: unknown): value is Record<string, any> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function undateLast(parts: unknown, key: string): void {
  if (!Array.isArray(parts) || !parts.length || !isPlain(parts[parts.length - 1])) return;
  const last = parts[parts.length - 1];
  if (typeof last[key] === "string") last[key] = last[key].replace(DATE_LINE, NOW);
}

/** JSON as Python's `json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)`. */
export function sortedJson(value: unknown, indent = ""): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "number") return Number.isInteger(value) && !Object.is(value, -0) ? String(value) : pyNumber(value);
  if (typeof value !== "object") return JSON.stringify(value);
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return "[\n" + value.map((v) => inner + sortedJson(v, inner)).join(",\n") + "\n" + indent + "]";
  }
  const keys = Object.keys(value).sort();
  if (!keys.length) return "{}";
  return "{\n" + keys.map((k) => `${inner}${JSON.stringify(k)}: ${sortedJson((value as Record<string, unknown>)[k], inner)}`).join(",\n") + "\n" + indent + "}";
}

function pyNumber(value: number): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
  const text = String(value);
  return /[.e]/.test(text) ? text.replace(/e([+-])(\d)$/, "e$10$2") : text + ".0";
}

export interface CassetteOptions {
  /** Where recorded requests really go (default: the platform's `fetch`). */
  fetch?: FetchLike;
}

export class Cassette {
  readonly path: string;
  readonly mode: CassetteMode;
  readonly misses: CassetteMiss[] = [];
  private recorded: Interaction[] = [];
  private used = new Set<number>();
  private inner: FetchLike;

  constructor(path: string, mode: CassetteMode = "replay", options: CassetteOptions = {}) {
    if (!MODES.includes(mode)) throw new RangeError(`mode must be one of ${MODES.join(", ")}, got ${JSON.stringify(mode)}`);
    this.path = path;
    this.mode = mode;
    this.inner = options.fetch ?? ((url, init) => fetch(url, init));
    if (mode !== "record" && existsSync(path)) this.recorded = this.read();
    else if (mode === "replay") throw new Error(`cassette ${path} does not exist: record it first (mode='record')`);
  }

  /** The recorded exchanges, in order (as in the file). */
  get interactions(): Interaction[] {
    return [...this.recorded];
  }

  /** Indexes of recorded exchanges that no request has replayed yet. */
  get unused(): number[] {
    return this.recorded.map((_, i) => i).filter((i) => !this.used.has(i));
  }

  /** The runtime's HTTP client: answers from the file or records, as the mode says. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const body = typeof init.body === "string" ? init.body : init.body instanceof Uint8Array ? new TextDecoder().decode(init.body) : "";
    const key = normaliseRequest(init.method ?? "GET", url, body);
    if (this.mode !== "record") {
      const found = this.take(key);
      if (found !== null) return replayed(found);
      if (this.mode === "replay") throw this.miss(key);
    }
    const response = await this.inner(url, init);
    const headers = new Headers(init.headers);
    const secrets = SECRET_HEADERS.map((h) => headers.get(h)).filter((v): v is string => !!v);
    secrets.push(...new URL(url).searchParams.getAll("key").filter(Boolean));
    return this.recording(key, response, secrets);
  }

  /** Write the cassette file (done after every recorded exchange). */
  save(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const tmp = this.path + ".tmp";
    writeFileSync(tmp, sortedJson({ version: CASSETTE_VERSION, interactions: this.recorded }) + "\n", "utf8");
    renameSync(tmp, this.path);
  }

  private read(): Interaction[] {
    let data: any;
    try {
      data = JSON.parse(readFileSync(this.path, "utf8"));
    } catch (error) {
      throw new CassetteMiss(`cassette ${this.path} is not valid JSON: ${(error as Error).message}`);
    }
    if (!isPlain(data) || data.version !== CASSETTE_VERSION) throw new CassetteMiss(`cassette ${this.path}: expected a version ${CASSETTE_VERSION} cassette; record it again`);
    if (!Array.isArray(data.interactions)) throw new CassetteMiss(`cassette ${this.path}: 'interactions' must be a list`);
    return data.interactions;
  }

  private take(key: RecordedRequest): Interaction | null {
    const wanted = sortedJson(key);
    for (let i = 0; i < this.recorded.length; i++) {
      if (!this.used.has(i) && sortedJson(this.recorded[i]!.request) === wanted) {
        this.used.add(i);
        return this.recorded[i]!;
      }
    }
    return null;
  }

  private miss(key: RecordedRequest): CassetteMiss {
    const wanted = sortedJson(key);
    const lines = [`cassette ${this.path} has no recorded answer for ${key.method} ${key.path}`];
    if (!this.recorded.length) lines.push("(the cassette is empty)");
    else {
      const texts = this.recorded.map((it) => sortedJson(it.request));
      let nearest = 0;
      let best = -1;
      texts.forEach((text, i) => {
        const score = similarity(text, wanted);
        if (score >= best) [best, nearest] = [score, i];
      });
      const shown = unifiedDiff(texts[nearest]!.split("\n"), wanted.split("\n"), `recorded request #${nearest + 1}`, "this request", 2);
      lines.push(...shown.slice(0, 80));
      if (shown.length > 80) lines.push(`... ${shown.length - 80} more diff lines`);
      lines.push("re-record the cassette (mode='record') if the change is intended");
    }
    const miss = new CassetteMiss(lines.join("\n"));
    this.misses.push(miss);
    return miss;
  }

  /** `response` passed through while its chunks are kept; the exchange is written once the
   * body has been read to its end or dropped. */
  private recording(key: RecordedRequest, response: Response, secrets: string[]): Response {
    const chunks: Uint8Array[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      this.add(key, response, chunks, secrets);
    };
    const reader = response.body?.getReader() ?? null;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (reader === null) {
          finish();
          controller.close();
          return;
        }
        const { value, done: end } = await reader.read();
        if (end) {
          finish();
          controller.close();
          return;
        }
        chunks.push(value);
        controller.enqueue(value);
      },
      async cancel(reason) {
        finish();
        await reader?.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  private add(key: RecordedRequest, response: Response, chunks: Uint8Array[], secrets: string[]): void {
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (KEPT_RESPONSE_HEADERS.includes(name.toLowerCase())) headers[name.toLowerCase()] = value;
    });
    const answer: Interaction["response"] = { status: response.status, headers };
    try {
      const decoder = new TextDecoder("utf-8", { fatal: true });
      answer.chunks = chunks.map((c) => decoder.decode(c));
    } catch {
      answer.chunks_b64 = chunks.map((c) => Buffer.from(c).toString("base64"));
    }
    this.recorded.push(scrub({ request: key, response: answer }, secrets));
    this.used.add(this.recorded.length - 1);
    this.save();
  }
}

function replayed(found: Interaction): Response {
  const answer = found.response;
  const chunks = answer.chunks_b64 ? answer.chunks_b64.map((c) => new Uint8Array(Buffer.from(c, "base64"))) : (answer.chunks ?? []).map((c) => new TextEncoder().encode(c));
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(chunks[next++]!);
      else controller.close();
    },
  });
  return new Response(body, { status: answer.status, headers: answer.headers ?? {} });
}

/** `value` with every occurrence of a secret replaced by `<redacted>`. */
function scrub<T>(value: T, secrets: string[]): T {
  const tokens = new Set<string>();
  for (const secret of secrets) {
    tokens.add(secret);
    const space = secret.indexOf(" ");
    tokens.add(space < 0 ? secret : secret.slice(space + 1));
  }
  const kept = [...tokens].filter((t) => t.length >= 4).sort((a, b) => b.length - a.length);
  if (!kept.length) return value;
  let text = JSON.stringify(value);
  for (const token of kept) text = text.split(JSON.stringify(token).slice(1, -1)).join("<redacted>");
  return JSON.parse(text) as T;
}

// -- the miss's diff ---------------------------------------------------------------------------

/** How alike two texts are, by their lines in common (what picks the nearest request). */
function similarity(a: string, b: string): number {
  const x = a.split("\n");
  const y = b.split("\n");
  return (2 * lcsPairs(x, y).length) / (x.length + y.length || 1);
}

/** The index pairs of a longest common subsequence of lines. */
function lcsPairs(a: string[], b: string[]): [number, number][] {
  const n = a.length;
  const m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) table[i]![j] = a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
  const pairs: [number, number][] = [];
  for (let i = 0, j = 0; i < n && j < m; ) {
    if (a[i] === b[j]) pairs.push([i++, j++]);
    else if (table[i + 1]![j]! >= table[i]![j + 1]!) i++;
    else j++;
  }
  return pairs;
}

type Op = ["equal" | "replace" | "delete" | "insert", number, number, number, number];

function opcodes(a: string[], b: string[]): Op[] {
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  for (const [x, y] of [...lcsPairs(a, b), [a.length, b.length] as [number, number]]) {
    if (i < x || j < y) ops.push([i < x && j < y ? "replace" : i < x ? "delete" : "insert", i, x, j, y]);
    if (x < a.length) {
      const last = ops[ops.length - 1];
      if (last && last[0] === "equal" && last[2] === x && last[4] === y) [last[2], last[4]] = [x + 1, y + 1];
      else ops.push(["equal", x, x + 1, y, y + 1]);
    }
    [i, j] = [x + 1, y + 1];
  }
  return ops.length ? ops : [["equal", 0, 1, 0, 1]];
}

/** difflib.get_grouped_opcodes: the changes with `n` lines of context, in hunks. */
function groupedOpcodes(ops: Op[], n: number): Op[][] {
  const codes = ops.map((op) => [...op] as Op);
  if (codes[0]![0] === "equal") {
    const c = codes[0]!;
    [c[1], c[3]] = [Math.max(c[1], c[2] - n), Math.max(c[3], c[4] - n)];
  }
  const last = codes[codes.length - 1]!;
  if (last[0] === "equal") [last[2], last[4]] = [Math.min(last[2], last[1] + n), Math.min(last[4], last[3] + n)];
  const groups: Op[][] = [];
  let group: Op[] = [];
  for (const [tag, i1, i2, j1, j2] of codes) {
    let [a1, b1] = [i1, j1];
    if (tag === "equal" && i2 - i1 > 2 * n) {
      group.push([tag, i1, Math.min(i2, i1 + n), j1, Math.min(j2, j1 + n)]);
      groups.push(group);
      group = [];
      [a1, b1] = [Math.max(i1, i2 - n), Math.max(j1, j2 - n)];
    }
    group.push([tag, a1, i2, b1, j2]);
  }
  if (group.length && !(group.length === 1 && group[0]![0] === "equal")) groups.push(group);
  return groups;
}

function range(start: number, stop: number): string {
  const length = stop - start;
  if (length === 1) return String(start + 1);
  return `${length ? start + 1 : start},${length}`;
}

/** difflib.unified_diff(a, b, from, to, lineterm="", n). */
function unifiedDiff(a: string[], b: string[], from: string, to: string, n: number): string[] {
  const out: string[] = [];
  for (const group of groupedOpcodes(opcodes(a, b), n)) {
    if (!out.length) out.push(`--- ${from}`, `+++ ${to}`);
    const first = group[0]!;
    const end = group[group.length - 1]!;
    out.push(`@@ -${range(first[1], end[2])} +${range(first[3], end[4])} @@`);
    for (const [tag, i1, i2, j1, j2] of group) {
      if (tag === "equal") {
        for (const line of a.slice(i1, i2)) out.push(" " + line);
        continue;
      }
      if (tag === "replace" || tag === "delete") for (const line of a.slice(i1, i2)) out.push("-" + line);
      if (tag === "replace" || tag === "insert") for (const line of b.slice(j1, j2)) out.push("+" + line);
    }
  }
  return out;
}

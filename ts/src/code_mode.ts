// Code mode (docs/code-mode.md): one `execute_code` callable, a typed `api` stub in the system
// prompt, the model's Python run in Monty (@pydantic/monty, an optional peer). It follows the
// Python runtime's code_mode.py; the shared behaviour is pinned by the `engine/code/...`
// conformance vectors.
//
// The JavaScript binding (0.0.18) has no external modules, no classes and no positions of
// calls, so the code is run as Python's would be with three local steps, none of which
// changes a line or a column: the `import api` statement becomes `pass` (padded), each
// `api.<name>` outside strings and comments becomes the external function `api_<name>`, and
// the type check reads the stub as functions of those names (in an `if TYPE_CHECKING:` block,
// which is never run). Every `api_<name>(...)` the code calls stops the sandbox and goes
// through the agent's checked call path, as a direct call does. The code itself runs in a
// pool of worker threads (src/code_worker.ts), one step at a time, never on the event loop.

import { AsyncLocalStorage } from "node:async_hooks";
import { createRequire } from "node:module";
import { cpus } from "node:os";
import { Worker } from "node:worker_threads";
import type { ResourceLimits } from "@pydantic/monty";
import type { Progress, StepFailure, StepReply, StepRequest, StepResult } from "./code_worker.js";
import type { FinalEvent } from "./blocks.js";
import { ConfigError } from "./errors.js";
import type { Invocation, Run } from "./engine.js";
import type { Agent, Config, Example } from "./ir.js";
import { referencedTypes, resolve, type IRField, type IRType, type Types } from "./schema.js";
import { BLOCK_KIND, resultText, type CallableSpec, type CallOutcome, type Contract } from "./section.js";
import { pyJson, pyRepr, pyTypeName } from "./values.js";

export const EXECUTE_CODE = "execute_code";
const VIA = "execute_code";
const PACKAGE = "@pydantic/monty";

export const INSTALL_HINT = `code mode needs the Monty sandbox (${PACKAGE}), an optional peer dependency of auwgent: npm install ${PACKAGE}`;

// ---------------------------------------------------------------------------------------------
// Configuration: "codeMode" and "codeLimits" (the keys, defaults and wording of Python's)

export interface CodeLimits {
  /** Seconds the code itself may run (time inside `api` calls does not count). */
  timeout: number;
  /** Bytes of the sandbox's heap. */
  memory: number;
  /** `api` calls per execution. */
  maxCalls: number;
  /** Characters of printed output (and of the value and error) returned to the model. */
  maxOutput: number;
}

export const DEFAULT_CODE_LIMITS: CodeLimits = { timeout: 10, memory: 100_000_000, maxCalls: 50, maxOutput: 20_000 };
const LIMIT_RULES: [keyof CodeLimits, boolean, number][] = [
  ["timeout", false, 0.001],
  ["memory", true, 1],
  ["maxCalls", true, 1],
  ["maxOutput", true, 1],
];

/** The runtime config's `codeMode`: true or false, or null (each config's DSL decides). */
export function codeModeOf(value: unknown): boolean | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "boolean") throw new ConfigError(`codeMode: expected true or false, got ${shown(value)}`);
  return value;
}

/** The runtime config's `codeLimits`, checked key by key. */
export function codeLimitsOf(value: unknown): CodeLimits {
  if (value === undefined || value === null) return { ...DEFAULT_CODE_LIMITS };
  if (typeof value !== "object" || Array.isArray(value)) throw new ConfigError(`codeLimits: expected an object, got ${pyTypeName(value)}`);
  const given = value as Record<string, unknown>;
  const keys = LIMIT_RULES.map((r) => r[0] as string);
  for (const key of Object.keys(given))
    if (!keys.includes(key)) throw new ConfigError(`codeLimits.${key}: unknown config key (valid keys: ${keys.join(", ")})`);
  const limits = { ...DEFAULT_CODE_LIMITS };
  for (const [key, integer, minimum] of LIMIT_RULES) if (key in given) limits[key] = limitValue(`codeLimits.${key}`, given[key], integer, minimum);
  return limits;
}

function limitValue(path: string, value: unknown, integer: boolean, minimum: number): number {
  if (typeof value !== "number" || !Number.isFinite(value)) throw new ConfigError(`${path}: expected ${integer ? "an integer" : "a number"}, got ${shown(value)}`);
  if (integer && !Number.isInteger(value)) throw new ConfigError(`${path}: expected an integer, got ${value}`);
  if (value < minimum) throw new ConfigError(`${path}: must be at least ${minimum}, got ${value}`);
  return value;
}

/** A config value as Python's errors show it (its repr), so that both runtimes say the same. */
function shown(value: unknown): string {
  if (value === null || value === undefined || typeof value === "boolean" || typeof value === "string" || Array.isArray(value) || typeof value === "object") return pyValue(value);
  return String(value);
}

/** Whether an agent's config runs in code mode: the runtime config's `codeMode` when given,
 * else the DSL config's. */
export function codeModeEnabled(option: boolean | null, config: Config): boolean {
  return option ?? dslCodeMode(config);
}

/** A config block's `codeMode` (IR configs carry it only when the DSL sets it). */
function dslCodeMode(config: Config): boolean {
  return (config as Config & { codeMode?: unknown }).codeMode === true;
}

/** Whether any config of the document asks for code mode with this option. */
export function codeModeWanted(option: boolean | null, agents: Record<string, Agent>): boolean {
  if (option !== null) return option;
  return Object.values(agents).some((a) => Object.values(a.configs).some(dslCodeMode));
}

/** Construction fails, saying what to install, when the sandbox package is missing. */
export function requireSandbox(): void {
  try {
    createRequire(import.meta.url).resolve(PACKAGE);
  } catch {
    throw new ConfigError(INSTALL_HINT);
  }
}

// ---------------------------------------------------------------------------------------------
// Where a call comes from: intents emitted while an `api` call runs carry "via"

const ORIGIN = new AsyncLocalStorage<string | null>();

/** `value` with `"via": "execute_code"` while one of the code's calls runs (objects only). */
export function markVia(value: unknown): unknown {
  const origin = ORIGIN.getStore();
  if (origin == null || value === null || typeof value !== "object" || Array.isArray(value)) return value;
  return { ...(value as Record<string, unknown>), via: origin };
}

/** Run a nested agent (a helper) with no origin: its own calls are not the code's. */
export function outsideCode<T>(fn: () => Promise<T>): Promise<T> {
  return ORIGIN.getStore() == null ? fn() : ORIGIN.run(null, fn);
}

// ---------------------------------------------------------------------------------------------
// What the model sees

export interface CodeApi {
  callables: CallableSpec[];
  stub: string;
  section: string;
}

const CODE_PARAM: IRField = { name: "code", type: { kind: "string" }, optional: false, description: "Python code that starts with `import api`" };
const DESCRIPTION =
  "Runs Python code in a sandbox; the code calls the functions of module `api` (see the" +
  " system prompt) and gets back the last expression's value and what it printed";
const INTRO =
  "## Code mode\n" +
  "Your one tool is `execute_code`: it runs Python code in a sandbox. Pass the code as its" +
  " only argument (in a `[tool_call: execute_code]` block, the whole body is the code, as" +
  " is). Start the code with `import api` and call the functions of module `api` below;" +
  " do dependent steps in one execution, passing values from call to call. You get back the" +
  " value of the code's last expression (as JSON) and what it printed, or the error and its" +
  " line. A failed `api` call raises RuntimeError. There are no files, network, environment" +
  " variables or subprocesses, and only a small standard library (json, re, math, datetime" +
  " and the like).";

/** `contract` as code mode offers it: `execute_code` only, the `api` stub beside. */
export function codeContract(contract: Contract): Contract {
  const stub = apiStub(contract.callables, contract.types, contract.examples);
  const section = `${INTRO}\n\n\`\`\`python\n${stub}\`\`\``;
  const spec: CallableSpec = { kind: "tool", name: EXECUTE_CODE, description: DESCRIPTION, params: [CODE_PARAM], returns: { kind: "string" }, configured: true, examples: [], rawBody: true };
  return { ...contract, callables: [spec], examples: [], codeApi: { callables: contract.callables, stub, section } };
}

/** The `.pyi` source of module `api`: TypedDicts for the named types the callables use, then
 * one function per callable with its description and `@example` calls. */
export function apiStub(callables: readonly CallableSpec[], types: Types, examples: readonly Example[] = []): string {
  const specs = callables.filter((s) => identifier(s.name));
  const named: string[] = [];
  for (const spec of specs)
    for (const shape of [...spec.params.map((p) => p.type), spec.returns])
      for (const name of referencedTypes(shape, types)) if (!named.includes(name) && name in types) named.push(name);
  let lines = ['"""What this agent may call. Start the code with `import api`."""', "", "from typing import Any, Literal, NotRequired, TypedDict", ""];
  for (const name of named) lines = lines.concat(typeDef(name, types));
  for (const spec of specs)
    lines = lines.concat(
      functionLines(
        spec,
        types,
        examples.filter((e) => e.target === spec.name),
      ),
    );
  return lines.join("\n").replace(/\n+$/, "") + "\n";
}

const KEYWORDS = new Set(
  "False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield".split(
    " ",
  ),
);

function identifier(name: string): boolean {
  return /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u.test(name) && !KEYWORDS.has(name);
}

function pyType(type: IRType, types: Types): string {
  const kind = type.kind;
  if (kind === "string" || kind === "text") return "str";
  if (kind === "number") return "float";
  if (kind === "boolean") return "bool";
  if (type.kind === "literal") return `Literal[${pyJson(type.value)}]`;
  if (type.kind === "array") return `list[${pyType(type.items, types)}]`;
  if (type.kind === "union") return type.variants.map((v) => pyType(v, types)).join(" | ");
  if (type.kind === "ref" && type.name in types && identifier(type.name)) return type.name;
  return kind === "object" ? "dict[str, Any]" : "Any";
}

function typeDef(name: string, types: Types): string[] {
  if (!identifier(name)) return [];
  const resolved = types[name]!;
  if (resolved.kind !== "object") return [`${name} = ${pyType(resolved, types)}`, ""];
  const fields = resolved.fields as IRField[];
  const fieldType = (f: IRField): string => (f.optional ? `NotRequired[${pyType(f.type, types)}]` : pyType(f.type, types));
  if (!fields.every((f) => identifier(f.name))) {
    const body = fields.map((f) => `${JSON.stringify(f.name)}: ${fieldType(f)}`).join(", ");
    return [`${name} = TypedDict(${JSON.stringify(name)}, {${body}})`, ""];
  }
  const lines = [`class ${name}(TypedDict):`];
  const description = (resolved as { description?: string | null }).description;
  if (description) lines.push(`    ${docstring(description)}`);
  for (const f of fields) {
    if (f.description) lines.push(`    # ${oneLine(f.description)}`);
    lines.push(`    ${f.name}: ${fieldType(f)}`);
  }
  if (lines.length === 1) lines.push("    pass");
  return [...lines, ""];
}

function functionLines(spec: CallableSpec, types: Types, examples: readonly Example[]): string[] {
  const params = signatureParams(spec, types);
  const returns = pyType(spec.returns, types);
  let first = oneLine(spec.description);
  if (spec.kind !== "tool") first = `${first} (${spec.kind})`.trim();
  let doc = first ? [first] : [];
  const notes = spec.params.filter((p) => p.description).map((p) => `${p.name}: ${oneLine(p.description)}`);
  if (!spec.configured) notes.push("[NOT CONFIGURED]: not implemented, a call fails");
  // An @approval callable (set on the spec where approvals run).
  if ((spec as CallableSpec & { approval?: unknown }).approval != null) notes.push("Needs the application's approval: a call may be refused.");
  for (const example of examples) {
    const args = Object.entries(example.args ?? {})
      .map(([k, v]) => `${k}=${pyValue(v)}`)
      .join(", ");
    notes.push(`Example: api.${spec.name}(${args})`);
  }
  if (notes.length) doc = [...doc, ...(doc.length ? [""] : []), ...notes];
  const lines = [`def ${spec.name}(${params}) -> ${returns}:`];
  lines.push(doc.length ? `    ${docstring(doc.join("\n"))}` : "    ...");
  return lines;
}

function signatureParams(spec: CallableSpec, types: Types): string {
  if (!spec.params.every((p) => identifier(p.name))) return "**kwargs: Any";
  const parts: string[] = [];
  let seenOptional = false;
  let star = false;
  for (const p of spec.params) {
    let text = `${p.name}: ${pyType(p.type, types)}`;
    if (p.optional) {
      seenOptional = true;
      text += " | None = None";
    } else if (seenOptional && !star) {
      parts.push("*");
      star = true;
    }
    parts.push(text);
  }
  return parts.join(", ");
}

/** The parameters a call may give by position: those before the stub's `*`. */
function positionalNames(spec: CallableSpec): string[] {
  const names: string[] = [];
  let seenOptional = false;
  for (const p of spec.params) {
    if (!p.optional && seenOptional) break;
    seenOptional = seenOptional || p.optional;
    names.push(p.name);
  }
  return names.every(identifier) ? names : [];
}

function oneLine(text: string | null | undefined): string {
  return String(text ?? "")
    .split(/\s+/)
    .filter(Boolean)
    .join(" ");
}

function docstring(text: string, indent = "    "): string {
  const safe = text.replace(/\\/g, "\\\\").replace(/"""/g, '\\"\\"\\"');
  let lines = safe.split("\n");
  if (lines.length === 2 && !lines[1]) lines = lines.slice(0, 1);
  if (lines.length === 1) return `"""${lines[0]}"""`;
  if (lines.length === 3 && !lines[1] && cpLength(lines[0]!) + cpLength(lines[2]!) < 90) return `"""${lines[0]} (${lines[2]})"""`;
  const body = lines
    .slice(1)
    .map((line) => (line ? indent + line : ""))
    .join("\n");
  return `"""${lines[0]}\n${body}\n${indent}"""`;
}

/** Python's repr of a JSON value (the `@example` arguments). */
export function pyValue(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string") return pyRepr(value);
  if (typeof value === "number") return pyJson(value);
  if (Array.isArray(value)) return `[${value.map(pyValue).join(", ")}]`;
  if (typeof value === "object")
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${pyRepr(k)}: ${pyValue(v)}`)
      .join(", ")}}`;
  return String(value);
}

// ---------------------------------------------------------------------------------------------
// The code as the JavaScript binding runs it (see the head of this file)

interface Prepared {
  /** The code to run: the same lines and columns as the model's. */
  code: string;
  /** Whether the code imports `api` (without it, `api` is an unknown name, as in Python). */
  imports: boolean;
}

const IMPORT_API = /^([ \t]*)import[ \t]+api[ \t]*(?=$|#|;|\r)/;

/** The model's code with `import api` as `pass` and `api.<name>` as `api_<name>` (in its
 * code only: strings and comments are left as they are). */
export function prepare(code: string): Prepared {
  const chars = [...code];
  const isCode = codeMask(chars);
  let imports = false;
  let start = 0;
  for (const line of chars.join("").split("\n")) {
    const width = [...line].length;
    const m = IMPORT_API.exec(line);
    const indent = m ? [...m[1]!].length : 0;
    if (m && isCode[start + indent]) {
      imports = true;
      const length = [...m[0]].length - indent;
      const padded = "pass".padEnd(length, " ");
      for (let k = 0; k < length; k++) chars[start + indent + k] = padded[k]!;
    }
    start += width + 1;
  }
  if (imports) rewriteApi(chars, isCode);
  return { code: chars.join(""), imports };
}

/** `api.<name>` -> `api_<name>` where it is code: an identifier boundary before `api`, no
 * dot before it, an identifier right after the dot. */
function rewriteApi(chars: string[], isCode: boolean[]): void {
  const isIdent = (ch: string | undefined): boolean => ch !== undefined && /[\p{L}\p{N}_]/u.test(ch);
  for (let j = 0; j + 4 < chars.length; j++) {
    if (!isCode[j] || chars[j] !== "a" || chars[j + 1] !== "p" || chars[j + 2] !== "i" || chars[j + 3] !== ".") continue;
    const before = chars[j - 1];
    if (isIdent(before) || before === "." || !isIdent(chars[j + 4])) continue;
    chars[j + 3] = "_";
  }
}

/** Which characters of the code are code: not in a string literal or a comment (the
 * replacement fields of an f-string are code). */
function codeMask(chars: string[]): boolean[] {
  const mask = new Array<boolean>(chars.length).fill(true);
  const string = (start: number): number => {
    // `start` is at the opening quote; returns the index after the closing one.
    let prefix = "";
    for (let k = start - 1; k >= 0 && /[rRbBfFuU]/.test(chars[k]!); k--) prefix = chars[k] + prefix;
    const fString = /[fF]/.test(prefix);
    const quote = chars[start]!;
    const triple = chars[start + 1] === quote && chars[start + 2] === quote;
    let j = start + (triple ? 3 : 1);
    for (let k = start; k < j; k++) mask[k] = false;
    let depth = 0;
    while (j < chars.length) {
      const ch = chars[j]!;
      if (depth > 0) {
        if (ch === "'" || ch === '"') {
          j = string(j);
          continue;
        }
        if (ch === "{") depth++;
        else if (ch === "}") depth--;
        if (depth === 0) mask[j] = false; // the field's closing brace
        j++;
        continue;
      }
      mask[j] = false;
      if (ch === "\\") {
        if (j + 1 < chars.length) mask[j + 1] = false; // a backslash keeps the next character, raw strings included
        j += 2;
        continue;
      }
      if (fString && ch === "{") {
        if (chars[j + 1] === "{") {
          mask[j + 1] = false;
          j += 2;
        } else {
          depth = 1;
          j++;
        }
        continue;
      }
      if (triple ? ch === quote && chars[j + 1] === quote && chars[j + 2] === quote : ch === quote) {
        if (triple) mask[j + 1] = mask[j + 2] = false;
        return j + (triple ? 3 : 1);
      }
      if (!triple && ch === "\n") return j;
      j++;
    }
    return j;
  };
  let i = 0;
  while (i < chars.length) {
    const ch = chars[i]!;
    if (ch === "#") {
      while (i < chars.length && chars[i] !== "\n") mask[i++] = false;
      continue;
    }
    if (ch === "'" || ch === '"') {
      i = string(i);
      continue;
    }
    i++;
  }
  return mask;
}

/** The `api` stub as the type check reads it: functions named `api_<name>`, declared in an
 * `if TYPE_CHECKING:` block so that their bodies may be empty. */
function checkedStub(api: CodeApi): string {
  const lines = api.stub.split("\n");
  const out: string[] = [];
  let inFunctions = false;
  for (const line of lines) {
    if (line.startsWith("from typing import ")) {
      out.push(line.replace("from typing import ", "from typing import TYPE_CHECKING, "));
      continue;
    }
    if (line.startsWith("def ")) {
      if (!inFunctions) out.push("if TYPE_CHECKING:");
      inFunctions = true;
      out.push("    def api_" + line.slice(4));
    } else if (inFunctions) out.push(line ? "    " + line : line);
    else out.push(line);
  }
  if (!inFunctions) out.push("if TYPE_CHECKING:", "    pass");
  return out.join("\n").replace(/\n+$/, "");
}

// ---------------------------------------------------------------------------------------------
// Running the code: a pool of sandbox workers (src/code_worker.ts)
//
// The code runs in worker threads, never on the application's event loop: each step (the
// start, each resumption after an `api` call) goes to a free worker with the execution's
// state as bytes, so an execution holds no worker while its `api` calls run. A step that
// overruns its limit by STUCK_GRACE seconds is a stuck worker: it is stopped and replaced, and
// the execution fails (closed).

/** Seconds past its own limit after which a sandbox step counts as stuck. */
export const STUCK_GRACE = 5;

interface Waiting {
  request: DistributiveOmit<StepRequest, "id">;
  limit: number;
  resolve: (result: StepResult) => void;
  reject: (error: Error) => void;
}

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

class SandboxWorker {
  worker: Worker;
  busy: Waiting | null = null;
  /** It has answered a step: a worker that dies before that could not start (no respawn). */
  answered = false;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private pool: SandboxPool) {
    this.worker = new Worker(new URL("./code_worker.js", import.meta.url));
    this.worker.on("message", (result: StepResult) => ((this.answered = true), this.settle(null, result)));
    this.worker.on("error", (error: Error) => this.settle(error, null));
    this.worker.on("exit", (code: number) => this.settle(new Error(`its worker exited (code ${code})`), null));
    this.worker.unref(); // an idle pool never keeps the process alive (after the listeners: they ref it)
  }

  take(job: Waiting, id: number): void {
    this.busy = job;
    this.worker.ref();
    this.timer = setTimeout(() => {
      this.answered = true; // it started: a stuck one is replaced
      void this.worker.terminate();
      this.settle(new Error(`its worker did not answer within ${job.limit + STUCK_GRACE} s`), null);
    }, (job.limit + STUCK_GRACE) * 1000);
    this.worker.postMessage({ ...job.request, id });
  }

  private settle(error: Error | null, result: StepResult | null): void {
    const job = this.busy;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.busy = null;
    this.worker.unref();
    if (error !== null) this.pool.replace(this, this.answered ? null : error);
    if (job === null) return;
    if (error !== null) job.reject(error);
    else job.resolve(result!);
    if (error === null) this.pool.next(this);
  }
}

class SandboxPool {
  workers: SandboxWorker[] = [];
  queue: Waiting[] = [];
  private ids = 0;

  constructor(public size: number) {
    for (let i = 0; i < size; i++) this.workers.push(new SandboxWorker(this));
  }

  /** Run a step in the first free worker. `wait`: how long it may wait for one (a
   * QueueTimeout after that, and the step never runs); null: as long as it takes. */
  step(request: DistributiveOmit<StepRequest, "id">, limit: number, wait: number | null = null): Promise<StepResult> {
    return new Promise((resolve, reject) => {
      const job: Waiting = { request, limit, resolve, reject };
      const free = this.workers.find((w) => w.busy === null);
      if (free) return free.take(job, ++this.ids);
      this.queue.push(job); // first come, first served
      if (wait === null) return;
      const timer = setTimeout(() => {
        const at = this.queue.indexOf(job);
        if (at < 0) return; // taken meanwhile
        this.queue.splice(at, 1);
        reject(new QueueTimeout(this.size));
      }, wait * 1000);
      job.resolve = (result) => (clearTimeout(timer), resolve(result));
      job.reject = (error) => (clearTimeout(timer), reject(error));
    });
  }

  next(worker: SandboxWorker): void {
    const job = this.queue.shift();
    if (job) worker.take(job, ++this.ids);
  }

  /** A worker that died is replaced; one that could not start (`failed`) is dropped, and
   * once none is left the waiting steps fail and the next execution starts a new pool. */
  replace(dead: SandboxWorker, failed: Error | null): void {
    const at = this.workers.indexOf(dead);
    if (at < 0) return;
    if (failed === null) {
      const fresh = new SandboxWorker(this);
      this.workers[at] = fresh;
      this.next(fresh);
      return;
    }
    this.workers.splice(at, 1);
    if (this.workers.length) return;
    if (POOL === this) POOL = null;
    for (const job of this.queue.splice(0)) job.reject(new Error(`no sandbox worker could start: ${failed.message}`));
  }
}

/** No worker became free for an execution's first step. */
class QueueTimeout extends Error {
  constructor(public workers: number) {
    super("no sandbox worker became free");
  }
}

let POOL: SandboxPool | null = null;

/** The process's sandbox pool, started on first use: one worker per CPU. */
function pool(): SandboxPool {
  POOL ??= new SandboxPool(Math.max(1, cpus().length));
  return POOL;
}

/** Run one `execute_code` call; its `tool_result` or `tool_error` is emitted here. */
export async function executeCode(run: Run, inv: Invocation, contract: Contract, code: string, callId: string | null): Promise<CallOutcome> {
  const api = contract.codeApi!;
  const limits = run.core.options.codeLimits;
  const inner: Contract = { ...contract, callables: api.callables, codeApi: undefined };
  const execution = new Execution(run, inv, inner, api, limits, code);
  const [ok, report] = await execution.drive();
  const args = { code };
  if (!ok) return run.refuse(inv, "tool", EXECUTE_CODE, args, String(report), callId);
  await run.emit("tool_result", { name: EXECUTE_CODE, args, result: report, overridden: false }, inv.name);
  return { kind: "tool", name: EXECUTE_CODE, args, status: "ok", result: resultText(report), callId };
}

/** What the code printed, kept up to `cap` characters (the rest only counted). */
class Printed {
  parts: string[] = [];
  kept = 0;
  total = 0;
  constructor(public cap: number) {}
  /** Room left to keep (what a sandbox step may send back). */
  room(): number {
    return Math.max(0, this.cap - this.kept);
  }
  add(kept: string, total: number): void {
    this.total += total;
    const piece = cpSlice(kept, this.room());
    this.parts.push(piece);
    this.kept += cpLength(piece);
  }
  text(): string {
    return this.parts.join("");
  }
  note(): string | null {
    if (this.total <= this.kept) return null;
    return `printed output cut: the code printed ${this.total} characters, the first ${this.kept} are shown (codeLimits.maxOutput)`;
  }
}

class Unconvertible extends Error {}

/** An execution ended by this runtime (a limit it counts itself, a stuck worker). */
class Stop extends Error {}

class Execution {
  calls = 0;
  suspensions = 0;
  /** Seconds the code has run so far (its steps, without the `api` calls between them). */
  ran = 0;
  printed: Printed;
  byName: Map<string, CallableSpec>;
  inv: Invocation;
  offset = 0;

  constructor(
    public run: Run,
    inv: Invocation,
    public inner: Contract,
    public api: CodeApi,
    public limits: CodeLimits,
    public code: string,
  ) {
    // A deferred approval cannot wait for resume() in the middle of running code: the call
    // path sees an invocation without a record (as inside a helper).
    this.inv = Object.assign(Object.create(Object.getPrototypeOf(inv) as object) as Invocation, inv, { record: null });
    this.printed = new Printed(limits.maxOutput);
    this.byName = new Map(api.callables.filter((s) => identifier(s.name)).map((s) => [s.name, s]));
  }

  /** `[true, report]` when the code completed, else `[false, error text]`. */
  async drive(): Promise<[boolean, unknown]> {
    const prepared = prepare(this.code);
    const prefix = checkedStub(this.api);
    this.offset = prefix.split("\n").length;
    let progress: Progress;
    try {
      const limits: ResourceLimits = { maxDurationSecs: this.limits.timeout, maxMemory: this.limits.memory, maxRecursionDepth: 1000 };
      progress = await this.step({ op: "start", code: prepared.code, prefix, limits, room: 0 });
      while (progress.type === "call" || progress.type === "lookup") progress = await this.answer(progress, prepared.imports);
    } catch (error) {
      if (error instanceof Stop) return [false, this.failure(error.message)];
      throw error;
    }
    if (progress.type === "error") return [false, this.failure(describeFailure(progress.failure, this.limits, this.offset, [...this.byName.keys()]))];
    try {
      return [true, this.report(progress.output)];
    } catch (problem) {
      if (!(problem instanceof Unconvertible)) throw problem;
      const where = lastStatementLine(this.code);
      const text = `the value of the code's last expression cannot be returned: ${problem.message}`;
      return [false, this.failure(where ? `line ${where}: ${text}` : text)];
    }
  }

  /** One step in a sandbox worker; what it printed is kept, its time counted. */
  private async step(request: DistributiveOmit<StepRequest, "id">): Promise<Progress> {
    let result: StepResult;
    // The first step waits for a worker at most the code's timeout (as in Python, where an
    // execution holds its worker throughout); later ones queue: each step ahead is bounded.
    const wait = request.op === "start" ? this.limits.timeout : null;
    try {
      result = await pool().step({ ...request, room: this.printed.room() }, this.limits.timeout, wait);
    } catch (error) {
      if (error instanceof QueueTimeout)
        throw new Stop(`no sandbox worker became free within ${this.limits.timeout} s (codeLimits.timeout): all ${error.workers} were running other code, so none of this code ran`);
      throw new Stop(`the sandbox stopped (${error instanceof Error ? error.message : String(error)}); nothing more of the code ran`);
    }
    this.printed.add(result.printed, result.printedTotal);
    this.ran += result.seconds;
    return result.progress;
  }

  /** Resume a suspension: an `api` call through the checked path, anything else refused. */
  private async answer(progress: Extract<Progress, { type: "call" | "lookup" }>, imports: boolean): Promise<Progress> {
    if (this.run.cancelled) throw new Stop("the run's time is up (timeouts.run); nothing more of the code ran");
    this.suspensions++;
    const most = 2 * this.limits.maxCalls + 20;
    if (this.suspensions > most) throw new Stop(`RuntimeError: suspension limit ${most} exceeded${hint("suspension limit", this.limits)}`);
    // Each step is bounded by Monty itself; their sum is checked here.
    if (this.ran > this.limits.timeout)
      throw new Stop(`TimeoutError: time limit exceeded: ${(this.ran * 1000).toFixed(6)}ms > ${this.limits.timeout * 1000}ms${hint("TimeoutError", this.limits)}`);
    const spec = imports && progress.name.startsWith("api_") ? this.byName.get(progress.name.slice(4)) : undefined;
    if (progress.type === "lookup") return this.step({ op: "resume", kind: "lookup", data: progress.data, reply: { function: spec ? progress.name : null }, room: 0 });
    const reply: StepReply = spec ? await this.call(spec, progress) : { exception: { type: "NameError", message: `name '${progress.name}' is not defined` } };
    return this.step({ op: "resume", kind: "call", data: progress.data, reply, room: 0 });
  }

  /** One `api.<name>(...)` call: the value for the code, or the exception it raises. */
  private async call(spec: CallableSpec, snapshot: Extract<Progress, { type: "call" }>): Promise<StepReply> {
    this.calls++;
    if (this.calls > this.limits.maxCalls)
      return raise("RuntimeError", `api.${spec.name} was not called: over ${this.limits.maxCalls} api calls (codeLimits.maxCalls)`);
    let args: Record<string, unknown> | string;
    try {
      args = bind(spec, plain(snapshot.args) as unknown[], plain(snapshot.kwargs) as Record<string, unknown>);
    } catch (problem) {
      if (!(problem instanceof Unconvertible)) throw problem;
      return raise("ValueError", `api.${spec.name}(): an argument cannot be passed: ${problem.message}`);
    }
    if (typeof args === "string") return raise("TypeError", `api.${spec.name}(): ${args}`);
    // The binding gives no position of the call: middleware's ctx.rawBlock names the callable.
    const event: FinalEvent = { type: "final", kind: BLOCK_KIND[spec.kind] as FinalEvent["kind"], name: spec.name, segment: 0, payload: { type: spec.name, args }, raw: `api.${spec.name}(...)`, callId: null };
    const outcome = await ORIGIN.run(VIA, () => this.run.call(this.inv, this.inner, event));
    if (outcome.status === "ok") return { returnValue: parsedResult(outcome.result ?? "", spec.returns, this.inner.types) };
    if (outcome.status === "skipped") return raise("RuntimeError", `api.${spec.name}: the application skipped this call`);
    return raise("RuntimeError", `api.${spec.name}: ${outcome.error || "the call failed"}`);
  }

  private report(value: unknown): Record<string, unknown> {
    const cap = this.limits.maxOutput;
    const report: Record<string, unknown> = { value: plain(value), printed: this.printed.text() };
    const notes = [this.printed.note()];
    const rendered = pyJson(report.value);
    if (cpLength(rendered) > cap) {
      report.value = cpSlice(rendered, cap);
      notes.push(`value cut: its JSON has ${cpLength(rendered)} characters, the first ${cap} are shown as a string (codeLimits.maxOutput)`);
    }
    const found = notes.filter((n): n is string => n !== null);
    if (found.length) report.note = found.join("; ");
    return report;
  }

  private failure(text: string): string {
    const printed = this.printed.text();
    if (printed) {
      text += `\nprinted before the error:\n${printed}`;
      const note = this.printed.note();
      if (note) text += `\n(${note})`;
    }
    return cpSlice(text, this.limits.maxOutput);
  }
}

function raise(type: string, message: string): StepReply {
  return { exception: { type, message } };
}

const TY_LOCATION = /^[^\s:]+\.py:(\d+):(\d+): /gm;

/** Modules the Python runtime's Monty (pydantic-monty 1.4) has and this binding does not. */
const PYTHON_ONLY_MODULES = new Set(["time", "dataclasses", "collections", "itertools", "functools", "random"]);

/** What the model reads of a failed execution: the error and its line. */
function describeFailure(failure: StepFailure, limits: CodeLimits, offset: number, names: string[]): string {
  if (failure.kind === "typing") {
    const found = failure.text.trim().replace(TY_LOCATION, (_m, line: string, column: string) => `line ${Number(line) - offset}, column ${column}: `);
    return `the code failed its type check (nothing ran):\n${apiNames(found, names)}`;
  }
  if (failure.kind === "other") return `the code could not run: ${failure.text}`;
  const message = failure.text;
  // A limit names no line (as in Python).
  const limit = /^(TimeoutError|MemoryError)\b/.test(message);
  const line = failure.lines[failure.lines.length - 1];
  const where = line !== undefined && !limit ? `line ${line}: ` : "";
  return where + message + hint(message, limits);
}

/** The type checker's words for the local names (`api_<name>`) in the model's terms. */
function apiNames(text: string, names: string[]): string {
  return text
    .replace(/error\[unresolved-reference\] Name `api_([\p{L}\p{N}_]+)` used when not defined/gu, "error[unresolved-attribute] Module `api` has no member `$1`")
    .replace(/`api_([\p{L}\p{N}_]+)`/gu, (whole, name: string) => (names.includes(name) ? `\`${name}\`` : whole));
}

function hint(message: string, limits: CodeLimits): string {
  if (message.startsWith("TimeoutError")) return ` (codeLimits.timeout is ${limits.timeout} s)`;
  if (message.startsWith("MemoryError")) return ` (codeLimits.memory is ${limits.memory} bytes)`;
  if (message.startsWith("RecursionError")) return " (the sandbox's recursion limit is 1000 nested calls)";
  if (message.includes("suspension limit")) return ` (too many api calls: codeLimits.maxCalls is ${limits.maxCalls})`;
  const missing = /^ModuleNotFoundError: No module named '([^']+)'/.exec(message);
  if (missing && PYTHON_ONLY_MODULES.has(missing[1]!)) return ` (the sandbox of this runtime, ${PACKAGE} 0.0.18, does not have it; the Python runtime's does)`;
  return "";
}

/** A call's positional and keyword arguments as the callable's argument object. */
function bind(spec: CallableSpec, args: unknown[], kwargs: Record<string, unknown>): Record<string, unknown> | string {
  const names = positionalNames(spec);
  if (args.length > names.length) return `takes ${names.length} positional arguments but ${args.length} were given`;
  const bound: Record<string, unknown> = {};
  args.forEach((value, i) => (bound[names[i]!] = value));
  for (const [key, value] of Object.entries(kwargs)) {
    if (key in bound) return `got multiple values for argument ${pyRepr(key)}`;
    bound[key] = value;
  }
  const optional = new Set(spec.params.filter((p) => p.optional).map((p) => p.name));
  // The stub writes an optional parameter as `x: T | None = None`: None means "not given".
  for (const key of Object.keys(bound)) if (bound[key] === null && optional.has(key)) delete bound[key];
  return bound;
}

/** A sandbox value as JSON data: dicts (Maps) become objects, tuples lists; anything else
 * its text. Throws Unconvertible naming the problem. */
function plain(value: unknown, seen: Set<unknown> = new Set()): unknown {
  if (value === null || value === undefined || typeof value === "string" || typeof value === "boolean") return value ?? null;
  if (typeof value === "number") return value;
  if (typeof value === "bigint") {
    if (value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
    throw new Unconvertible(`it holds an integer too large for this runtime's JSON numbers (beyond ±${Number.MAX_SAFE_INTEGER})`);
  }
  if (typeof value !== "object") return String(value);
  if (seen.has(value)) throw new Unconvertible("it contains itself (a circular reference)");
  if (seen.size >= 900) throw new Unconvertible("it is nested too deeply (lists and dicts inside each other, more levels than the host converts)");
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => plain(v, seen));
    if (value instanceof Set) return value.size ? `{${[...value].map((v) => pyValue(plain(v, seen))).join(", ")}}` : "set()"; // str() of a set
    if (value instanceof Uint8Array) return bytesText(value);
    if (value instanceof Map) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of value) out[mapKey(k)] = plain(v, seen);
      return out;
    }
    if (Object.getPrototypeOf(value) === Object.prototype) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = plain(v, seen);
      return out;
    }
    return String(value);
  } finally {
    seen.delete(value);
  }
}

/** str() of Python bytes: `b'...'` with Python's escapes. */
function bytesText(bytes: Uint8Array): string {
  const quote = bytes.includes(0x27) && !bytes.includes(0x22) ? '"' : "'";
  let out = "";
  for (const b of bytes) {
    const ch = String.fromCharCode(b);
    if (ch === "\\" || ch === quote) out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (b < 0x20 || b >= 0x7f) out += "\\x" + b.toString(16).padStart(2, "0");
    else out += ch;
  }
  return `b${quote}${out}${quote}`;
}

function mapKey(key: unknown): string {
  if (typeof key === "string") return key;
  if (key === null) return "null";
  if (typeof key === "boolean") return key ? "true" : "false";
  if (typeof key === "number" || typeof key === "bigint") return String(key);
  throw new Unconvertible("it cannot be converted to JSON (a dict key that is not a string, number, boolean or None)");
}

/** A call's result text as the code receives it (structured results decoded). */
function parsedResult(text: string, returns: IRType, types: Types): unknown {
  let kind: string;
  try {
    kind = resolve(returns, types).kind;
  } catch {
    return text;
  }
  if (!["object", "array", "union", "number", "boolean"].includes(kind)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The line where the code's last top-level statement starts (a line that begins without
 * indentation and is not a comment or a continuation), or null. */
function lastStatementLine(code: string): number | null {
  const lines = code.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (line && !/^[\s#)\]}]/.test(line)) return i + 1;
  }
  return null;
}

function cpLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function cpSlice(text: string, count: number): string {
  if (text.length <= count) return text;
  return [...text].slice(0, count).join("");
}

// The `test` blocks of .agent files run on this runtime (`auwgent test --runtime ts`), as the
// Python runner (src/auwgent/testing/dsl.py) runs them on its own: each test builds its agent
// from the compiled IR on a ScriptedModel that plays the test's `model { }` replies (in the
// protocol the answering agent speaks) or on a replayed Cassette; tools return what the test's
// `tools { }` says, or a value made from their declared return type, and every execution is
// recorded. The run's intents are then compared with `expect`, with the Python runner's
// failure messages. The Python CLI compiles the project, hands the specs and the IR documents
// over (dist/test-runner.js reads them on stdin) and reports the outcomes.

import { performance } from "node:perf_hooks";
import path from "node:path";
import { createAgent } from "./agent.js";
import { Cassette } from "./cassette.js";
import { apiKeyField, modelsInUse } from "./config.js";
import type { IntentKind } from "./blocks.js";
import type { Document, Tool } from "./ir.js";
import { functionName } from "./native.js";
import type { ModelRequest } from "./providers/base.js";
import { structuredReply } from "./providers/offline.js";
import { blockText, ScriptedModel, type Response } from "./providers/scripted.js";
import { exampleValue, isObject } from "./schema.js";
import type { Contract } from "./section.js";
import { pyJson } from "./values.js";

/** One model reply of a test's `model { }` block. */
export type TestReply =
  | { kind: "call"; name: string; args: Record<string, unknown> }
  | { kind: "say"; text: string }
  | { kind: "output"; value: unknown };

/** One line of a test's `expect { }` block. */
export type TestExpect =
  | { kind: "called" | "not_called"; name: string; args: Record<string, unknown> | null }
  | { kind: "text"; contains: string }
  | { kind: "output"; value: unknown }
  | { kind: "error"; contains: string | null }
  | { kind: "intent"; name: string; fields: Record<string, unknown> | null };

/** A test block as the compiler collects it (auwgent.compiler.testspec). */
export interface TestSpec {
  name: string;
  file: string;
  line: number;
  /** The file as diagnostics show it (default: `file`). */
  shown?: string;
  agent: string;
  config: string | null;
  persona: string | null;
  context: Record<string, unknown>;
  input: string;
  cassette: string | null;
  replies: TestReply[] | null;
  tools: Record<string, unknown>;
  expects: TestExpect[];
}

/** A compiled agent document and the JSON pointers of its whole-number floats. */
export interface TestDocument {
  ir: Document;
  floats?: readonly string[];
}

/** One intent as a test records it: `[name, value, agentName]`. */
export type RecordedIntent = [string, unknown, string];

/** One test's result: `problems` is empty when it passed. */
export interface TestOutcome {
  name: string;
  file: string;
  line: number;
  problems: string[];
  intents: RecordedIntent[];
  seconds: number;
}

const CALL_KINDS: Record<string, IntentKind> = { tool: "tool_call", workflow: "workflow_call", helper: "helper_call" };

// -- the agent's surface -----------------------------------------------------------------------

/** Callable name → its call intent kind, across the document's agents. */
function callKinds(doc: Document): Map<string, IntentKind> {
  const kinds = new Map<string, IntentKind>();
  const add = (name: string, kind: IntentKind) => {
    if (!kinds.has(name)) kinds.set(name, kind);
  };
  for (const agent of Object.values(doc.agents)) {
    for (const tool of agent.tools) add(tool.name, CALL_KINDS.tool!);
    for (const workflow of agent.workflows) {
      add(workflow.name, CALL_KINDS.workflow!);
      for (const tool of workflow.tools ?? []) add(tool.name, CALL_KINDS.tool!);
    }
    for (const use of agent.helpers) add(use.name, CALL_KINDS.helper!);
  }
  return kinds;
}

function declaredTools(doc: Document): Map<string, Tool> {
  const tools = new Map<string, Tool>();
  const add = (tool: Tool) => {
    if (!tools.has(tool.name)) tools.set(tool.name, tool);
  };
  for (const agent of Object.values(doc.agents)) {
    agent.tools.forEach(add);
    for (const workflow of agent.workflows) (workflow.tools ?? []).forEach(add);
  }
  return tools;
}

/** Tool implementations that return the test's values and record every execution. */
class Executions {
  readonly calls: [string, Record<string, unknown>][] = [];
  readonly impls: Record<string, (args: Record<string, unknown>) => unknown> = {};

  constructor(doc: Document, results: Record<string, unknown>) {
    for (const [name, tool] of declaredTools(doc)) {
      const result = name in results ? results[name] : exampleValue(tool.returns, doc.types);
      this.impls[name] = (args: Record<string, unknown>) => {
        this.calls.push([name, { ...args }]);
        return result;
      };
    }
  }
}

// -- the scripted model ------------------------------------------------------------------------

function script(replies: readonly TestReply[], kinds: Map<string, IntentKind>): (request: ModelRequest) => Response {
  const queue = [...replies];
  return (request) => {
    const reply = queue.shift();
    if (reply === undefined) return ScriptedModel.fail("the test's `model { }` has no reply left for this call");
    const native = request.functions.length > 0 || request.responseSchema !== null;
    if (reply.kind === "call") {
      const kind = kinds.get(reply.name) ?? "tool_call";
      return native ? ScriptedModel.call(functionName(kind, reply.name), reply.args) : blockText(kind, reply.name, reply.args);
    }
    if (reply.kind === "say") return native ? String(reply.text) : blockText("response_text", null, String(reply.text));
    return structuredReply(request, request.contract as Contract, reply.value, native);
  };
}

// -- one test ----------------------------------------------------------------------------------

/** Run one test spec against its agent's compiled document; `root` is the project's source root. */
export async function runTest(spec: TestSpec, document: TestDocument, root: string): Promise<TestOutcome> {
  const outcome: TestOutcome = { name: spec.name, file: spec.shown ?? spec.file, line: spec.line, problems: [], intents: [], seconds: 0 };
  const started = performance.now();
  const doc = document.ir;
  const executions = new Executions(doc, spec.tools);
  const config: Record<string, unknown> = { tools: executions.impls, context: spec.context };
  if (spec.config) config.config = spec.config;
  if (spec.persona) config.persona = spec.persona;
  let cassette: Cassette | null = null;
  if (spec.replies !== null) config.provider = new ScriptedModel(script(spec.replies, callKinds(doc)));
  else {
    try {
      cassette = new Cassette(pathJoin(pathJoin(root, spec.file, ".."), spec.cassette ?? ""));
    } catch (error) {
      // No file, or not a cassette: the test fails saying so.
      outcome.problems.push(error instanceof Error ? error.message : String(error));
      return outcome;
    }
    config.httpClient = cassette;
    config.apiKeys = Object.fromEntries([...modelsInUse(doc)].map((model) => [apiKeyField(model), "test-key"]));
  }
  let output: unknown;
  try {
    const agent = createAgent(doc as unknown as Record<string, unknown>, config, {
      irHash: doc.hash,
      compilerVersion: doc.compiler_version,
      irVersion: doc.ir_version,
      floats: document.floats ?? [],
    });
    agent.onIntent((name: string, value: unknown, agentName: string) => {
      outcome.intents.push([name, value, agentName]);
    });
    const session = await agent.run(spec.input);
    output = session.turns[session.turns.length - 1]?.output ?? null;
  } catch (error) {
    // A test must report, never crash the runner.
    const [kind, message] = error instanceof Error ? [error.name, error.message] : ["Error", String(error)];
    outcome.problems.push(`the agent could not run: ${kind}: ${message}`);
    return outcome;
  }
  if (cassette !== null) outcome.problems.push(...cassette.misses.map((miss) => miss.message));
  outcome.problems.push(...compare(spec.expects, outcome.intents, executions.calls, output));
  outcome.seconds = (performance.now() - started) / 1000;
  return outcome;
}

/** Paths joined as Python's `pathlib` joins them (so that messages name the same file):
 * `.` and empty segments dropped, `..` kept as written except for a `..` argument (`parent`). */
function pathJoin(...parts: string[]): string {
  const segments: string[] = [];
  let absolute = false;
  for (const [i, part] of parts.entries()) {
    if (part === ".." && i > 0) {
      segments.pop();
      continue;
    }
    if (path.isAbsolute(part)) {
      absolute = true;
      segments.length = 0;
    }
    segments.push(...part.split(/[\\/]+/).filter((s) => s !== "" && s !== "."));
  }
  return (absolute ? path.sep : "") + segments.join(path.sep);
}

/** What the run fell short of: one line per `expect` that does not hold, then any error the
 * test did not expect. */
export function compare(
  expects: readonly TestExpect[],
  intents: readonly RecordedIntent[],
  calls: readonly [string, Record<string, unknown>][],
  output: unknown,
): string[] {
  const executed: [string, unknown][] = [...calls];
  for (const [name, value] of intents)
    if ((name === "workflow_result" || name === "helper_result") && isObject(value)) executed.push([String(value.name || value.type || ""), value.args || {}]);
  const texts = intents.filter(([n]) => n === "response_text").map(([, v]) => (isObject(v) ? String(v.text ?? "") : ""));
  const errors = intents
    .filter(([n, v]) => (n === "error" || n === "tool_error") && isObject(v))
    .map(([, v]) => {
      const value = v as Record<string, unknown>;
      return value.message || value.error ? String(value.message || value.error) : pyJson(value);
    });
  const problems: string[] = [];
  for (const expect of expects) {
    const problem = check(expect, executed, texts, errors, intents, output);
    if (problem !== null) problems.push(problem);
  }
  if (!expects.some((e) => e.kind === "error")) for (const e of errors) if (e) problems.push(`no error, but the run reported: ${e}`);
  return problems;
}

function check(
  expect: TestExpect,
  executed: readonly [string, unknown][],
  texts: readonly string[],
  errors: readonly string[],
  intents: readonly RecordedIntent[],
  output: unknown,
): string | null {
  switch (expect.kind) {
    case "called":
    case "not_called": {
      const hit = executed.some(([name, args]) => name === expect.name && subset(expect.args ?? {}, args));
      const shown = expect.name + (expect.args && Object.keys(expect.args).length ? `(${argsText(expect.args)})` : "");
      if (expect.kind === "called" && !hit) return `called ${shown}`;
      if (expect.kind === "not_called" && hit) return `not called ${shown}`;
      return null;
    }
    case "text":
      return texts.some((t) => t.includes(expect.contains)) ? null : `text contains ${asciiJson(expect.contains)}`;
    case "output":
      return subset(expect.value, output) ? null : `output ${asciiJson(sortedKeys(expect.value))}`;
    case "error": {
      const wanted = expect.contains;
      return errors.some((e) => !wanted || e.includes(wanted)) ? null : "error" + (wanted ? ` contains ${asciiJson(wanted)}` : "");
    }
    case "intent": {
      if (intents.some(([n, v]) => n === expect.name && subset(expect.fields ?? {}, v))) return null;
      const fields = expect.fields;
      return `intent ${expect.name}` + (fields && Object.keys(fields).length ? ` ${asciiJson(fields)}` : "");
    }
  }
}

function argsText(args: Record<string, unknown>): string {
  return Object.entries(args)
    .map(([k, v]) => `${k} = ${pyJson(v)}`)
    .join(", ");
}

/** `expected` matches `actual`: equal, or (for objects) every expected key matches. */
export function subset(expected: unknown, actual: unknown): boolean {
  if (isObject(expected)) return isObject(actual) && Object.entries(expected).every(([k, v]) => k in actual && subset(v, actual[k]));
  if (typeof expected === "number") return typeof actual === "number" && expected === actual;
  return pyEqual(expected, actual);
}

/** Python's `==` on JSON values: booleans equal the numbers 0 and 1, containers compare deeply. */
function pyEqual(a: unknown, b: unknown): boolean {
  const numeric = (x: unknown) => typeof x === "number" || typeof x === "boolean";
  if (numeric(a) && numeric(b)) return Number(a) === Number(b);
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => pyEqual(item, b[i]));
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && pyEqual(a[k], b[k]));
  }
  return a === b;
}

/** `json.dumps(value)` with Python's defaults: ASCII only (others as `\uXXXX`). */
function asciiJson(value: unknown): string {
  return pyJson(value).replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** `value` with its objects' keys in sorted order (code point order, as Python sorts). */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (!isObject(value)) return value;
  const keys = Object.keys(value).sort(byCodePoint);
  return Object.fromEntries(keys.map((k) => [k, sortedKeys(value[k])]));
}

function byCodePoint(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

// -- a whole project ---------------------------------------------------------------------------

/** Run every spec against the document of its agent (`documents`: agent name → document), in order. */
export async function runTests(specs: readonly TestSpec[], documents: Record<string, TestDocument>, root: string): Promise<TestOutcome[]> {
  const outcomes: TestOutcome[] = [];
  for (const spec of specs) {
    const document = documents[spec.agent];
    if (document === undefined) {
      outcomes.push({ name: spec.name, file: spec.shown ?? spec.file, line: spec.line, problems: [`agent ${spec.agent}`], intents: [], seconds: 0 });
      continue;
    }
    outcomes.push(await runTest(spec, document, root));
  }
  return outcomes;
}
